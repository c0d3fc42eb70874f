"""Spica's shared terms, imported by every layer and importing nothing else of Spica: roles, modes
and the candidate's typed view (unrolled), the candidate record, goals and Planner targets, an
SLA's bounds, Pareto dominance, the errors, quantization fields, registry entries named by import
path (lazy), the cache folder, console output, stop handling and garbage-collector settings.

Each is defined here once. Standard library only at import time, so the lightest process (the
command before it parses its arguments, a results writer) can read any of it.
"""
