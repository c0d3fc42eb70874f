"""What a selected candidate is deployed with: Dynamo `DynamoGraphDeployment` manifests.

`flags` holds what the pod command lines are built from, `engines` each backend's worker flags
(its entry in `spica.backends` names its builder), `versions` the engine versions the score rests
on, and `manifest` assembles the DGD on Dynamo's own profiler templates. The user's cluster-side
choices (namespace, images, model cache, secret, memory) are the config's `deploy:` block
(spica/config/deploy.py).
"""
