"""The engine-native half of every vLLM and SGLang worker command line of the matrix, parsed by
the real engines: Dynamo's `dynamo.vllm.args.parse_args` with vLLM 0.31.0's parser, and SGLang
0.5.21's `ServerArgs` parser behind Dynamo's groups (engines/parse_engine_args.py).

Those engines need their own venv (~6 GB with a CPU torch, ~6 min to build from PyPI): it is
built once from engines/engines.lock under ${SPICA_CACHE_DIR:-~/.cache/spica} and reused while
the lock is unchanged. TensorRT-LLM does not install on a machine without CUDA; its worker flags
are all Dynamo's and are parsed in test_matrix.py."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from dgd_checks import MATRIX, SLA, candidate, components, main_container, unrolled

from spica.core.paths import cache_root
from spica.deploy.manifest import dynamo_manifest

HERE = Path(__file__).resolve().parent / "engines"
REPO = Path(__file__).resolve().parents[2]
LOCKS = (HERE / "engines.lock", REPO / "requirements-nodeps.txt")


def _pip(python: Path, *args: str) -> None:
    subprocess.run([str(python), "-m", "pip", "--disable-pip-version-check", "-q", *args], check=True, timeout=3000)


@pytest.fixture(scope="module")
def engine_python() -> Path:
    digest = hashlib.sha256(b"".join(path.read_bytes() for path in LOCKS)).hexdigest()[:12]
    cache = cache_root()
    venv = cache / f"engine-parsers-{digest}"
    python, stamp = venv / "bin" / "python", venv / ".spica-installed"
    if not stamp.exists():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        _pip(python, "install", "--no-deps", "-r", str(LOCKS[0]))
        wheels = Path(os.environ.get("SPICA_WHEELHOUSE") or cache / "wheels")
        nodeps = [line for line in LOCKS[1].read_text().splitlines() if line.startswith(("ai-dynamo==", "ai-dynamo-runtime=="))]
        _pip(python, "install", "--no-deps", "--find-links", str(wheels), *nodeps)
        stamp.write_text(digest)
    return python


@pytest.mark.e2e
def test_vllm_and_sglang_parse_every_worker_command_line(engine_python: Path) -> None:
    items, expected = [], {}
    for mode, backend, planner, offload, multinode in MATRIX:
        if backend == "trtllm":
            continue
        u = unrolled(mode, backend, planner, offload, multinode)
        for kind, component in components(dynamo_manifest(candidate(u), sla=SLA)).items():
            if kind in ("worker", "prefill", "decode"):
                name = f"{mode}-{backend}-{planner}-{'offload' if offload else 'gpu'}-{'multi' if multinode else 'single'}-{kind}"
                items.append({"name": name, "backend": backend, "argv": main_container(component)["args"]})
                expected[name] = (u, kind)
    done = subprocess.run([str(engine_python), str(HERE / "parse_engine_args.py")], input=json.dumps(items),
                          capture_output=True, text=True, timeout=600, check=True)  # fmt: skip
    results = json.loads(done.stdout)
    failed = {name: result["error"][:300] for name, result in results.items() if not result["ok"]}
    assert not failed, failed
    assert set(results) == set(expected)
    for name, result in results.items():
        u, kind = expected[name]
        shape = "" if kind == "worker" else f"{kind}_"
        parsed = result["parsed"]
        if u["backend"] == "vllm":
            assert (parsed["tensor_parallel_size"], parsed["data_parallel_size"]) == (u[f"{shape}tp"], u[f"{shape}attention_dp"])
            assert parsed["max_model_len"] == u["context_length"] and parsed["disaggregation_mode"] == ("agg" if kind == "worker" else kind)
            multinode = u[f"{shape}tp"] * u[f"{shape}attention_dp"] > 8
            if kind != "worker":
                assert (parsed["engine_id"] == f"spica-{u['deployment_mode']}-vllm-01234567-{kind}") == multinode
        else:
            assert (parsed["tp_size"], parsed["dp_size"]) == (u[f"{shape}tp"] * u[f"{shape}attention_dp"], u[f"{shape}attention_dp"])
            assert parsed["disaggregation_mode"] == ("null" if kind == "worker" else kind)  # SGLang spells "off" so


@pytest.mark.e2e
def test_a_misspelt_engine_flag_is_refused(engine_python: Path) -> None:
    manifest = dynamo_manifest(candidate(unrolled("disagg", "sglang", "off", False, False)))
    argv = main_container(components(manifest)["prefill"])["args"]
    vllm_manifest = dynamo_manifest(candidate(unrolled("agg", "vllm", "off", False, False)))
    vllm_argv = main_container(components(vllm_manifest)["worker"])["args"]
    items = [{"name": "sglang", "backend": "sglang", "argv": [*argv, "--page-sise", "16"]},
             {"name": "vllm", "backend": "vllm", "argv": [*vllm_argv, "--gpu-memory-utilisation", "0.5"]}]  # fmt: skip
    done = subprocess.run([str(engine_python), str(HERE / "parse_engine_args.py")], input=json.dumps(items),
                          capture_output=True, text=True, timeout=600, check=True)  # fmt: skip
    assert {name: result["ok"] for name, result in json.loads(done.stdout).items()} == {"sglang": False, "vllm": False}
