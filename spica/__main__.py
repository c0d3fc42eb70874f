"""`python -m spica --config my.yaml` (upstream's spelling) runs the same command as `spica`.

Spawned processes (evaluation workers, the results writer) re-import this module as
`__mp_main__`: the command is imported only when run, so they do not import it (~0.3 s each)."""

if __name__ == "__main__":
    from spica.cli import main

    main()
