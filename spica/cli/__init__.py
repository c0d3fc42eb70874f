"""The `spica` command (spica/cli/commands.py): Hydra composition, a plain config file, the
subcommands, the search they start and how the command ends."""
