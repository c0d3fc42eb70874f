"""What a selected candidate is deployed with: Dynamo `DynamoGraphDeployment` manifests.

`settings` holds the user's cluster-side choices (namespace, images, model cache, secret,
memory), `flags` the worker and frontend command lines, `versions` the engine versions the
score rests on, and `manifest` assembles the DGD on Dynamo's own profiler templates.
"""
