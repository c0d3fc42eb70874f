"""Evaluate one candidate: build its Dynamo deployment, replay the traffic, score the summary."""
