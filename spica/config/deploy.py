"""The app-level `deploy:` block: how manifests meet the user's cluster (not part of the plan).

Defaults follow Dynamo's own templates and examples (`dynamo/profiler/templates/dgd/*`,
`BaseConfigModifier.build_dgd_config`): NGC runtime images of the installed ai-dynamo release,
the `hf-token-secret` Secret, no namespace (kubectl's `-n` decides), and a `model-cache`
PersistentVolumeClaim mounted as HF_HOME so replicas share one download. Changing them never
changes a score, so they live beside the plan, like `evaluation:`.
"""

from __future__ import annotations

import re
from importlib.metadata import version
from typing import Any, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from spica.config.errors import ConfigError, format_validation_error

DYNAMO_VERSION = version("ai-dynamo")
"""The installed ai-dynamo release: the Replay that scores, and the default tag of every image."""
K8S_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


def k8s_name_problem(value: str) -> str | None:
    """Why `value` is not a Kubernetes object name (RFC 1123 label), or None when it is one."""
    if len(value) > 63 or not K8S_NAME.fullmatch(value):
        return f"{value!r} is not a Kubernetes name (lowercase letters, digits, '-', at most 63)"
    return None


class DeploySettings(BaseModel):
    """Cluster-side choices for every manifest of a results folder."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    namespace: str | None = None
    """metadata.namespace; None leaves it to `kubectl apply -n NS` (as Dynamo's templates do)."""
    image_registry: str = Field("nvcr.io/nvidia/ai-dynamo", min_length=1)
    """Registry path holding `<backend>-runtime` and `dynamo-planner` images."""
    image_tag: str | None = None
    """None: the installed ai-dynamo version, the release Replay scored."""
    hf_token_secret: str | None = "hf-token-secret"
    """Secret with HF_TOKEN, loaded into every pod (envFrom); None for public models without one."""
    model_cache_pvc: str | None = "model-cache"
    """PersistentVolumeClaim shared as HF_HOME by all pods; None: each container downloads the weights."""
    model_cache_mount: str = "/opt/models"
    worker_memory_gib: float | None = Field(32.0, gt=0)
    """Host-memory request per worker pod before host KV offload, which is added on top; None: none."""

    @field_validator("namespace", "hf_token_secret", "model_cache_pvc")
    @classmethod
    def _kubernetes_name(cls, value: str | None) -> str | None:
        problem = None if value is None else k8s_name_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("model_cache_mount")
    @classmethod
    def _absolute(cls, value: str) -> str:
        if not value.startswith("/"):
            raise ValueError(f"{value!r} is not an absolute path")
        return value

    @property
    def tag(self) -> str:
        return self.image_tag or DYNAMO_VERSION

    def image(self, name: str) -> str:
        return f"{self.image_registry.rstrip('/')}/{name}:{self.tag}"


def deploy_settings(data: Mapping[str, Any] | DeploySettings | None) -> DeploySettings:
    """The validated `deploy:` block; bad input is a ConfigError, one `deploy.<field>: ...` line each."""
    if isinstance(data, DeploySettings):
        return data
    try:
        return DeploySettings.model_validate(dict(data or {}))
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc, DeploySettings, prefix=("deploy",))) from None
