"""Dynamo Planner in the search: policy filter by goal, load-predictor sub-sweep, Planner config.

Import the submodules directly; `spica.planner.predictors` and `spica.planner.config` load
Dynamo's planner stack (seconds of imports) only when their functions run.
"""
