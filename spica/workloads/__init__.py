"""Workloads: the traffic shapes and trace formats a search can replay (the registry is
spica/workloads/registry.py; each entry's module is beside it)."""
