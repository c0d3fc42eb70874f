"""Spica's Hydra launchers (spica_slurm, spica_local): each multirun job inside one of Spica's images."""
