"""The `spica` command's entry, and `python -m spica --config my.yaml` (upstream's spelling).

Ctrl-C and SIGTERM are the command's before anything heavier than the standard library loads
(spica/core/stops.py): stopped while it imports spica/cli/, the command says so in one line.
The results writer is spawned and re-imports this module as `__mp_main__`: the command is
imported only when run, so the writer does not import it (~0.3 s)."""

from spica.core.stops import stop_signals, stopped_early


def main() -> None:
    with stop_signals():
        try:
            from spica.cli.commands import main as command

            command()
        except KeyboardInterrupt as exc:  # before spica/cli/commands.py's main runs: nothing started
            stopped_early(exc)


if __name__ == "__main__":
    main()
