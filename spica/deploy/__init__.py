"""What a selected candidate is deployed with: Dynamo `DynamoGraphDeployment` manifests.

`settings` holds the user's cluster-side choices (namespace, images, model cache, secret,
memory), `flags` what the pod command lines are built from (each backend's worker flags are its
entry in `spica.backends`), `versions` the engine versions the score rests on, and `manifest`
assembles the DGD on Dynamo's own profiler templates.
"""
