"""Choosing the executor: user errors are one line naming the value and what is allowed."""

from __future__ import annotations

import pytest

from runner.container import Container
from runner.executors import make_executor


def test_unknown_cluster_is_refused(tmp_path):
    with pytest.raises(ValueError, match=r"^cluster='k8s' is not supported; allowed: local, slurm$"):
        make_executor(tmp_path, cluster="k8s", timeout_min=1)  # type: ignore[arg-type]


def test_pyxis_needs_slurm(tmp_path):
    with pytest.raises(ValueError, match=r"^container_engine='pyxis' needs cluster='slurm'"):
        make_executor(tmp_path, cluster="local", timeout_min=1, container=Container("img", "pyxis"))
