"""Launching Spica work outside the current process: compiled plans as submitit jobs (locally
or on SLURM, optionally inside Spica's runtime container) and a SLURM-backed evaluation pool
for the distributed engine. Submodules are imported directly; this stays import-light."""
