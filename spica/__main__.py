"""`python -m spica --config my.yaml` (upstream's spelling) runs the same command as `spica`."""

from spica.cli import main

if __name__ == "__main__":
    main()
