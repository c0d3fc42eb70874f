"""The loop as a user lives it (README, "Checking and calibrating Spica against your cluster"):
a search recommends a deployment; a real AIPerf run measures an OpenAI-compatible endpoint
standing in for it — Dynamo's own mocker engine behind Dynamo's own frontend, running the
recommended candidate's engine settings with a timing table whose prefill and decode are slower
than AIS says (the "cluster" Spica does not know); `spica calibrate` ingests AIPerf's exports;
the search run again with the calibration predicts what AIPerf measured more closely.

The stand-in's TTFT is not what Replay predicts even at the cluster's own timing: AIPerf's
identical requests drift apart in real time, while Replay's stay in lock-step (docs/fidelity.md);
so this test holds the calibration to TPOT, which both agree on.

Everything listens on 127.0.0.1 only; the AIPerf venv (tests/calibrate/aiperf.lock) and a
tokenizer made here (tiny_tokenizer.py) live under the Spica cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from spica.core.paths import cache_root
from spica.evaluation.calibration import load_calibration
from spica.evaluation.deployment import ReplayCall
from spica.evaluation.replay import _token_position
from spica.evaluation.timing import materialize_engine_args
from spica.search import run_smart_search
from tests.search.test_search import small

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1500)]
HERE = Path(__file__).resolve().parent
CLUSTER = {"prefill": 1.6, "prefill_exponent": 0.0, "decode": 1.4, "decode_exponent": 0.0}
"""How much slower than AIS the stand-in cluster prefills and decodes."""
CONCURRENCIES = (1, 2, 4, 8)
MODEL = "Qwen/Qwen3-32B-FP8"


@pytest.fixture(scope="module")
def aiperf_python() -> Path:
    """AIPerf 0.13.0 and its pinned closure in a venv of their own (its dependencies are not Spica's)."""
    lock = HERE / "aiperf.lock"
    venv = cache_root() / f"aiperf-{hashlib.sha256(lock.read_bytes()).hexdigest()[:12]}"
    python = venv / "bin" / "python"
    if not (venv / ".installed").is_file():
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([shutil.which("python3.11") or sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q", "--no-deps", "-r", str(lock)],
                       check=True, timeout=1200)
        (venv / ".installed").write_text("ok\n")
    return python


@pytest.fixture(scope="module")
def tokenizer_dir(aiperf_python: Path, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("tokenizer")
    subprocess.run([str(aiperf_python), str(HERE / "tiny_tokenizer.py"), str(out)], check=True, timeout=300)
    return out


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _ready(port: int, model: str) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2) as answer:
            return any(item.get("id") == model for item in json.loads(answer.read()).get("data", []))
    except OSError:
        return False


def cluster_engine_args(deploy: Path, folder: Path) -> Path:
    """The recommended candidate's engine, timed by the cached table scaled by CLUSTER."""
    replay = json.loads((deploy / "replay.json").read_text())
    call = ReplayCall.from_dict(replay)
    engine = json.loads(json.dumps(replay["kwargs"]["extra_engine_args"]))
    engine["engine"]["timing_model"]["scale"] = CLUSTER
    resolved = materialize_engine_args(engine, "table", _token_position(call))
    path = folder / "cluster_engine.json"
    path.write_text(json.dumps(resolved))
    return path


@pytest.fixture
def endpoint(tmp_path, tokenizer_dir):
    """Dynamo's frontend and mocker on loopback ports, file-based discovery; stopped after the test."""
    started: list[subprocess.Popen] = []

    def start(engine_args: Path) -> int:
        port = _free_port()
        env = {**os.environ, "DYN_FILE_KV": str(tmp_path / "discovery"), "DYN_TCP_RPC_HOST": "127.0.0.1",
               "DYN_EVENT_PLANE_HOST": "127.0.0.1", "DYN_TCP_RESPONSE_STREAM_HOST": "127.0.0.1", "DYN_SYSTEM_HOST": "127.0.0.1",
               "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        common = ["--discovery-backend", "file", "--request-plane", "tcp", "--event-plane", "zmq"]
        logs = tmp_path / "logs"
        logs.mkdir(exist_ok=True)
        for name, argv in (
            ("frontend", ["-m", "dynamo.frontend", "--http-host", "127.0.0.1", "--http-port", str(port), *common]),
            ("mocker", ["-m", "dynamo.mocker", "--model-path", str(tokenizer_dir), "--model-name", MODEL,
                        "--extra-engine-args", str(engine_args), *common]),
        ):
            with (logs / f"{name}.log").open("w") as log:
                started.append(subprocess.Popen([sys.executable, *argv], env=env, stdout=log, stderr=subprocess.STDOUT,
                                                start_new_session=True))
        deadline = time.monotonic() + 120
        while not _ready(port, MODEL):
            if time.monotonic() > deadline or any(process.poll() is not None for process in started):
                pytest.fail("Dynamo's frontend/mocker did not come up:\n" + "\n".join(
                    (logs / f"{name}.log").read_text()[-2000:] for name in ("frontend", "mocker")))
            time.sleep(0.5)
        return port

    yield start
    for process in started:
        with_group = process.pid
        try:
            os.killpg(with_group, signal.SIGTERM)
        except ProcessLookupError:
            continue
    for process in started:
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)


def aiperf(python: Path, port: int, tokenizer: Path, concurrency: int, out: Path) -> Path:
    out.mkdir(parents=True)
    subprocess.run(
        [str(python), "-m", "aiperf", "profile", "--model", MODEL, "--url", f"http://127.0.0.1:{port}", "--endpoint-type", "chat",
         "--streaming", "--tokenizer", str(tokenizer), "--use-server-token-count", "--concurrency", str(concurrency),
         "--request-count", str(6 * concurrency), "--warmup-request-count", str(concurrency), "--isl", "512", "--isl-stddev", "0",
         "--osl", "32", "--osl-stddev", "0", "--extra-inputs", "ignore_eos:true", "--random-seed", "7", "--ui", "none",
         "--artifact-dir", str(out)],
        check=True, timeout=300, capture_output=True,
    )
    return out / "profile_export_aiperf.json"


def test_a_search_measured_by_aiperf_and_calibrated_predicts_the_measurement_better(tmp_path, aiperf_python, tokenizer_dir, endpoint):
    config = small(search_space={"gpu_budget": 1}, sweep={"parallel_evals": 2})  # one deployment: agg vLLM TP1, on worker processes
    first = run_smart_search(config, results_dir=tmp_path / "search")
    deploy = sorted((tmp_path / "search" / "deploy").iterdir())[0]
    candidate = json.loads((deploy / "candidate.json").read_text())["config"]
    assert candidate["deployment_mode"] == "agg" and candidate["replicas"] == 1
    port = endpoint(cluster_engine_args(deploy, tmp_path))
    exports = []
    for concurrency in CONCURRENCIES:
        export = aiperf(aiperf_python, port, tokenizer_dir, concurrency, tmp_path / f"aiperf-c{concurrency}")
        shutil.copy(deploy / "candidate.json", export.parent / "candidate.json")
        exports.append(export)
    done = subprocess.run([sys.executable, "-m", "spica", "calibrate", *map(str, exports), "-o", str(tmp_path / "cal.yaml"),
                           "--folds", "2"], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    (correction,) = load_calibration(tmp_path / "cal.yaml").corrections
    assert correction.decode > 1.15  # toward the cluster's 1.4: its decode steps are slower than AIS says
    assert correction.fitted_on["points"] == len(CONCURRENCIES)
    before_error, after_error = correction.held_out["before"], correction.held_out["after"]
    assert after_error["tpot_median_ape"] < 0.5 * before_error["tpot_median_ape"]

    truth = json.loads(exports[-1].read_text())["inter_token_latency"]["avg"]  # AIPerf at c8: the search's own load
    again = run_smart_search(config, results_dir=tmp_path / "calibrated", calibration=tmp_path / "cal.yaml")
    before, after = first[0], again[0]
    assert before.label() == after.label()
    assert abs(after.metrics["mean_tpot_ms"] / truth - 1) < abs(before.metrics["mean_tpot_ms"] / truth - 1)
    assert abs(after.metrics["mean_tpot_ms"] / truth - 1) < 0.15
