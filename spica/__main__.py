"""`python -m spica --config my.yaml` (upstream's spelling) runs the same command as `spica`.

The results writer is spawned and re-imports this module as `__mp_main__`: the command is
imported only when run, so the writer does not import it (~0.3 s)."""

if __name__ == "__main__":
    from spica.cli import main

    main()
