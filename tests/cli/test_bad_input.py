"""The bad-input corpus: each case is refused before any work, with exit status 2, one line
naming the field and what is allowed, no traceback, within seconds."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from spica.cli.commands import main

SPACE = "search_space: {model_name: Qwen/Qwen3-32B, hardware_sku: h200_sxm, gpu_budget: 4, router_mode: [round_robin], planner_scaling_policy: [disabled]}\n"
LOAD = "workload: {isl: 1024, osl: 128, concurrency: 8, num_request_ratio: 2}\n"


def refused(capsys, argv: list[str], expected: str) -> str:
    started = time.monotonic()
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2, err
    assert time.monotonic() - started < 60
    assert "Traceback" not in err
    problems = [line.strip() for line in err.splitlines() if line.startswith("  ")]
    assert len(problems) == 1, err
    assert problems[0].startswith(expected), problems[0]
    return problems[0]


CONFIGS = [
    (SPACE.replace("gpu_budget: 4", "gpu_budget: true") + LOAD, "search_space.gpu_budget: True: input should be a valid integer"),
    (SPACE.replace("gpu_budget: 4", "gpu_budget: 0") + LOAD, "search_space.gpu_budget: 0: input should be greater than 0"),
    (SPACE.replace("gpu_budget: 4", "gpu_budget: 100000") + LOAD, "search_space.gpu_budget: 100000 is above the 1024 GPUs Spica enumerates"),
    (SPACE.replace("gpu_budget: 4", "gpu_budget: 1000000000000000000000000000000") + LOAD, "search_space.gpu_budget: 1000000000000000000000000000000 is above the 1024 GPUs"),
    (SPACE.replace("gpu_budget: 4", "gpu_budget: 4, min_endpoint: 100") + LOAD, "search_space: min_endpoint (100) must be <= gpu_budget (4)"),
    (SPACE.replace("gpu_budget: 4", "gpu_budget: 4, min_gpu_budget: 8") + LOAD, "search_space: min_gpu_budget (8) must be <= gpu_budget (4)"),
    (SPACE.replace("h200_sxm", "h999_sxm") + LOAD, "search_space.hardware_sku: 'h999_sxm' has no AI Configurator"),
    (SPACE.replace("hardware_sku: h200_sxm", "hardware_sku: [h200_sxm, h999_sxm]") + LOAD,
     "search_space.hardware_sku[1]: 'h999_sxm' is not a system AI Configurator knows; known: a100_sxm, b200_sxm"),
    (SPACE + LOAD + "goal: {target: cost_per_mtok}\n", "goal.gpu_hour_price: required by cost_per_mtok"),
    (SPACE + LOAD + "goal: {target: cost_per_mtok, gpu_hour_price: {h200_sxm: 3.5, b200_sxm: 5.5}}\n",
     "goal.gpu_hour_price: 'b200_sxm' is not a system this search uses (h200_sxm)"),
    (SPACE.replace("hardware_sku: h200_sxm", "hardware_sku: [h100_sxm, h200_sxm]") + LOAD + "goal: {target: cost_per_mtok, gpu_hour_price: {h200_sxm: 3.5}}\n",
     "goal.gpu_hour_price: no price for h100_sxm, a system this search may choose"),
    (SPACE + LOAD + "goal: {target: cost_per_mtok, gpu_hour_price: {h200_sxm: -3.5}}\n",
     "goal.gpu_hour_price: h200_sxm: -3.5 is not a price; give a finite number > 0 per GPU-hour"),
    (SPACE + LOAD + "goal: {target: cost_per_mtok, gpu_hour_price: {h200_sxm: cheap}}\n",
     "goal.gpu_hour_price: h200_sxm: 'cheap' is not a price; give a finite number > 0 per GPU-hour"),
    (SPACE + LOAD + "goal: {target: throughput, gpu_hour_price: {h200_sxm: 3.5}}\n",
     "goal.gpu_hour_price: only the cost goals use it (cost_per_mtok, min_cost)"),
    (SPACE.replace("Qwen/Qwen3-32B", "Qwen/Qwen3-33B") + LOAD, "search_space.model_name: 'Qwen/Qwen3-33B' is not among AI Configurator's"),
    (SPACE.replace("router_mode: [round_robin]", "router_mode: [random]") + LOAD, "search_space.router_mode[0]: 'random' is not one of kv_router, round_robin"),
    (SPACE.replace("router_mode: [round_robin]", "router_mode: []") + LOAD, "search_space.router_mode: needs at least 1 entries, got 0"),
    (SPACE.replace("planner_scaling_policy: [disabled]", "planner_scaling_policy: [turbo]") + LOAD, "search_space.planner_scaling_policy[0]: 'turbo' is not one of"),
    (SPACE.replace("gpu_budget: 4", "gpu_budget: 4, aic_nextn: 9") + LOAD, "search_space.aic_nextn: 9: input should be less than or equal to 5"),
    (SPACE.replace("gpu_budget: 4", "gpu_budget: 4, num_g2_blocks: 10") + LOAD, "search_space: kv_bytes_per_token is required when host offload is on"),
    (SPACE.replace("gpu_budget: 4", "gpu_budget: 4, overlap_score_credit: [2.0]") + LOAD, "search_space.overlap_score_credit[0]: 2.0: input should be less than or equal to 1"),
    (SPACE.replace("gpu_budget: 4", "gpu_budget: 4, deployment_mode: [agg], parallel_configs: [{pp: 2}]") + LOAD, "search_space.parallel_configs[0]: tp is required"),
    (SPACE.replace("gpu_budget: 4", "gpu_budget: 4, parallel_configs: [{tp: 2}]") + LOAD, "search_space: parallel_configs needs deployment_mode to hold exactly one mode"),
    (SPACE.replace("gpu_budget: 4", "gpu_budget: 4, gpu_budgett: 8") + LOAD, "search_space.gpu_budgett: unknown field; allowed:"),
    (SPACE.replace("router_mode: [round_robin]", "router_mode: [kv_router], active_decode_blocks_threshold: 0.5") + LOAD, "search_space.active_decode_blocks_threshold: Dynamo's Replay cannot model admission control"),
    (SPACE + "workload: {isl: 1024, osl: 128, concurrency: 8}\n", "workload: num_request_ratio is required for a synthetic workload"),
    (SPACE + "workload: {isl: 1024, osl: 128, num_request_ratio: 2}\n", "workload: set exactly one of trace_path, request_rate, concurrency, kv_load_ratio (got: none)"),
    (SPACE + "workload: {isl: 1024, osl: 128, concurrency: 8, request_rate: 1, num_request_ratio: 2}\n", "workload: set exactly one of"),
    (SPACE + "workload: {isl: 1e30, osl: 128, concurrency: 8, num_request_ratio: 2}\n", "workload.isl: '1e30': input should be a valid integer"),
    (SPACE + "workload: {isl: 1024, osl: 128, concurrency: 1e9, num_request_ratio: 2}\n", "workload.concurrency: '1e9' must be a positive integer"),
    (SPACE + "workload: {isl: 1024, osl: 128, concurrency: [8, 16], num_request_ratio: 2}\n", "workload.concurrency: a list of levels is only allowed under goal.target pareto"),
    (SPACE + "workload: {isl: 1024, osl: 128, kv_load_ratio: .inf, num_request_ratio: 2}\n", "workload.kv_load_ratio: inf must be a number ≥ 0, or [min, max] under a pareto goal"),
    (SPACE + "workload: {isl: 1024, osl: 128, kv_load_ratio: -1, num_request_ratio: 2}\n", "workload.kv_load_ratio: -1 must be a number ≥ 0"),
    (SPACE + "workload: {isl: 1024, osl: 128, kv_load_ratio: [0.0, 1.0], num_request_ratio: 2}\n", "workload.kv_load_ratio: a [min, max] range is only allowed under goal.target pareto"),
    (SPACE + "workload: {isl: 1024, osl: 128, request_rate: .nan, num_request_ratio: 2}\n", "workload.request_rate: nan: input should be a finite number"),
    (SPACE + "workload: {isl: 1024, osl: 128, concurrency: 8, num_request_ratio: 2, replay_concurrency: 4}\n", "workload: replay_concurrency applies only to a trace workload"),
    (SPACE + "workload: {trace_path: no/such.jsonl}\n", "workload.trace_path: trace file not found: no/such.jsonl"),
    (SPACE + "workload: {isl: 1024, osl: 128, concurrency: 8, num_request_ratio: 2, shared_prefix_ratio: 2}\n", "workload.shared_prefix_ratio: 2: input should be less than or equal to 1"),
    (SPACE + LOAD + "goal: {target: goodput}\n", "goal: target goodput needs sla.e2e_ms, or both sla.ttft_ms and sla.itl_ms"),
    (SPACE + LOAD + "goal: {target: fastest}\n", "goal.target: 'fastest' is not one of throughput,"),
    (SPACE + LOAD + "goal: {target: goodput, sla: {ttft_ms: .inf, itl_ms: 50}}\n", "goal.sla.ttft_ms: inf: input should be a finite number"),
    (SPACE + LOAD + "goal: {target: goodput, sla: {ttft_ms: 0, itl_ms: 50}}\n", "goal.sla.ttft_ms: 0: input should be greater than 0"),
    (SPACE + LOAD + "goal: {pareto_objectives: [throughput, e2e_latency]}\n", "goal: pareto_objectives is only allowed when target is pareto"),
    (SPACE + LOAD + "goal: {target: pareto, pareto_objectives: [goodput, e2e_latency]}\n", "goal: pareto objective goodput needs sla.e2e_ms"),
    (SPACE + LOAD + "goal: {target: pareto, pareto_objectives: [throughput]}\n", "goal.pareto_objectives: needs at least 2 entries, got 1"),
    (SPACE + LOAD + "goal: {sla: 5}\n", "goal.sla: 5 must be a mapping of e2e_ms, itl_ms, ttft_ms"),
    (SPACE + LOAD + "sweep: {max_rounds: 0}\n", "sweep.max_rounds: 0: input should be greater than 0"),
    (SPACE + LOAD + "sweep: {seed: 1, random_seed: 2}\n", "sweep: seed is the earlier name of random_seed; give only random_seed"),
    (SPACE + LOAD + "sweep: {algorithm: bayes}\n", "sweep.algorithm: 'bayes' is not one of vizier, grid"),
    (SPACE + LOAD + "sweep: {max_eval_seconds: -1}\n", "sweep.max_eval_seconds: -1: input should be greater than 0"),
    (SPACE + LOAD + "sweep: {max_rounds: 8, max_rounds: 1}\n", "max_rounds: given twice in one mapping"),
    (SPACE + LOAD + "extra: {}\n", "extra: unknown field; allowed: goal, search_space, sweep, workload"),
    (LOAD, "search_space: required field is missing"),
    (SPACE, "workload: required field is missing"),
    ("search_space: [unclosed\n", ""),
    (SPACE + LOAD + "evaluation: {executor: k8s}\n", "evaluation.executor: 'k8s' is not one of local, slurm"),
    (SPACE + LOAD + "evaluation: {max_paralel: 3}\n", "evaluation.max_paralel: unknown field; allowed:"),
    (SPACE + LOAD + "sweep: {max_search_seconds: 0}\n", "sweep.max_search_seconds: 0: input should be greater than 0"),
    (SPACE + LOAD + "sweep: {max_search_seconds: soon}\n", "sweep.max_search_seconds: 'soon': input should be a valid number"),
    (SPACE + LOAD + "deploy: {namespace: Not_A_Name}\n", "deploy.namespace:"),
    (SPACE + LOAD + "sweep: {screen_request_ratio: soon}\n",
     "sweep.screen_request_ratio: 'soon': give auto, off or the requests per client of a screening replay (a number above 0)"),
    (SPACE + LOAD + "sweep: {screen_request_ratio: 2}\n",
     "sweep.screen_request_ratio: 2 must be below workload.num_request_ratio (2), the requests per client of a full replay"),
]


@pytest.mark.parametrize("text, expected", CONFIGS, ids=[f"config{i}" for i in range(len(CONFIGS))])
def test_bad_config_files(tmp_path, monkeypatch, capsys, text, expected):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "c.yaml"
    path.write_text(text)
    refused(capsys, ["--config-file", str(path), "--results-dir", str(tmp_path / "out")], expected or f"{path}: not valid YAML")
    assert not (tmp_path / "out" / "evaluations.jsonl").exists()


NOT_MAPPINGS = [("", "nothing (it is empty)"), ("# only a comment\n", "nothing (it is empty)"),
                ("- just\n- a list\n", "a list"), ("5\n", "the int 5")]


@pytest.mark.parametrize("text, held", NOT_MAPPINGS)
@pytest.mark.parametrize("overrides", [[], ["sweep.random_seed=3"]])
def test_a_file_that_is_not_a_mapping_says_what_it_holds(tmp_path, capsys, text, held, overrides):
    """With or without overrides: merging them into a list or nothing used to print omegaconf's internals."""
    path = tmp_path / "c.yaml"
    path.write_text(text)
    refused(capsys, ["--config-file", str(path), *overrides],
            f"{path}: holds {held}; a config is a mapping with search_space and workload (goal, sweep optional)")


def test_bad_bytes_and_paths(tmp_path, capsys):
    utf16 = tmp_path / "utf16.yaml"
    utf16.write_bytes((SPACE + LOAD).encode("utf-16"))
    refused(capsys, ["--config-file", str(utf16)], f"{utf16}: not UTF-8 text")
    refused(capsys, ["--config-file", str(tmp_path)], f"config file {tmp_path}: a directory")
    refused(capsys, ["--config-file", str(tmp_path / "none.yaml")], f"config file {tmp_path / 'none.yaml'}: not found")


OVERRIDES = [
    (["sweep.max_rounds=zero"], "sweep.max_rounds: 'zero': input should be a valid integer"),
    (["search_space.backend=[tensorrt]"], "search_space.backend[0]: 'tensorrt' is not one of vllm, sglang, trtllm"),
    (["goal.target=pareto", "goal.pareto_objectives=[pareto, throughput]"], "goal.pareto_objectives: pareto is not an objective"),
    (["workload.num_request_ratio=0"], "workload.num_request_ratio: 0: input should be greater than 0"),
    (["workload.trace_path=/etc/shadow"], "workload.trace_path: /etc/shadow"),  # not a trace (root reads it; others may not)
    (["search_space.model_name=Qwen/Qwen3-33B"], "search_space.model_name: 'Qwen/Qwen3-33B' is not among AI Configurator's"),
    (["sweep.random_seed=3", "search_space.gpu_budget=100000"], "search_space.gpu_budget: 100000 is above the 1024 GPUs Spica enumerates"),
    (["+search_space.foo=1"], "search_space.foo: unknown field; allowed: active_decode_blocks_threshold,"),
    (["++sweep.bogus=1"], "sweep.bogus: unknown field; allowed: algorithm,"),
    (["sweep.random_seed=${nowhere}"], "override: Interpolation key 'nowhere' not found"),
]


@pytest.mark.parametrize("overrides, expected", OVERRIDES, ids=[f"override{i}" for i in range(len(OVERRIDES))])
def test_bad_overrides_of_a_config_file(tmp_path, capsys, overrides, expected):
    path = tmp_path / "c.yaml"
    path.write_text(SPACE + LOAD)
    refused(capsys, ["--config-file", str(path), *overrides], expected)


def test_results_folders_that_cannot_hold_results(tmp_path, capsys):
    config = tmp_path / "c.yaml"
    config.write_text(SPACE + LOAD)
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    refused(capsys, ["--config-file", str(config), "--results-dir", str(a_file)], f"results_dir: {a_file} cannot hold results")
    refused(capsys, ["--config-file", str(config), "--results-dir", str(a_file / "under")], f"results_dir: {a_file / 'under'} cannot hold results")
    refused(capsys, ["--config-file", str(config), "--results-dir", "/proc/spica-results"], "results_dir: /proc/spica-results cannot hold results")


def test_an_unreadable_or_secret_file_as_trace_says_so_and_shows_none_of_it(tmp_path, capsys):
    config = tmp_path / "c.yaml"
    config.write_text(SPACE + LOAD)
    line = refused(capsys, ["--config-file", str(config), "--results-dir", str(tmp_path / "out"), "workload.trace_path=/etc/shadow"],
                   "workload.trace_path: /etc/shadow")
    assert line.endswith(("line 1: not a JSON object (a mooncake trace has one per line)", "cannot be read (Permission denied)"))
    secret = Path("/etc/shadow").read_text().splitlines()[0] if os.access("/etc/shadow", os.R_OK) else ""
    assert not secret or secret.split(":", 1)[0] + ":" not in line  # no line of the file is echoed
    assert not (tmp_path / "out" / "evaluations.jsonl").exists()


def _alias_bomb(path: Path) -> Path:
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]  # 10^9 values expanded
    path.write_text("search_space:\n  model_name: Qwen/Qwen3-32B\n  hardware_sku: h200_sxm\n  x:\n"
                    + "".join(f"    {line}\n" for line in levels) + LOAD)
    return path


BOMB_OVERRIDES = [[], ["sweep.random_seed=3"], ["sweep.random_seed=3", "workload.isl=512"]]


@pytest.mark.parametrize("overrides", BOMB_OVERRIDES, ids=["alone", "one-override", "two-overrides"])
def test_an_alias_bomb_is_refused_quickly_with_or_without_overrides(tmp_path, capsys, overrides):
    bomb = _alias_bomb(tmp_path / "bomb.yaml")
    started = time.monotonic()
    line = refused(capsys, ["--config-file", str(bomb), "--results-dir", str(tmp_path / "out"), *overrides],
                   f"{bomb}: its aliases expand to more than 100,000 values")
    assert time.monotonic() - started < 5, line
    assert not (tmp_path / "out").exists()


NO_NETWORK = """
import socket, sys
def refuse(*args, **kwargs):
    print("spica-test: a network connection was attempted", file=sys.stderr)
    raise OSError("network disabled by the test")
socket.socket.connect = socket.socket.connect_ex = refuse
socket.create_connection = socket.getaddrinfo = refuse
sys.argv = ["spica", *sys.argv[1:]]
from spica.cli.commands import main
main()
"""


def test_an_unknown_model_is_refused_without_touching_the_network(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text(SPACE.replace("Qwen/Qwen3-32B", "Qwen/Qwen3-33B") + LOAD)
    env = {**os.environ, "HF_HUB_OFFLINE": "0", "TRANSFORMERS_OFFLINE": "0"}  # offline switches would hide a lookup
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", NO_NETWORK, "--config-file", str(config), "--results-dir", str(tmp_path / "out")],
                          cwd=Path(__file__).resolve().parents[2], env=env, capture_output=True, text=True, timeout=120)
    assert time.monotonic() - started < 60
    assert done.returncode == 2, done.stderr[-2000:]
    assert "network connection was attempted" not in done.stderr and "Traceback" not in done.stderr
    problems = [line.strip() for line in done.stderr.splitlines() if line.startswith("  ")]
    assert len(problems) == 1, done.stderr
    assert problems[0].startswith("search_space.model_name: 'Qwen/Qwen3-33B' is not among AI Configurator's ")
    assert problems[0].endswith("bundled models and is not a local folder with a config.json; close names: "
                                "Qwen/Qwen3-32B, Qwen/Qwen3-8B, Qwen/Qwen3-30B-A3B, Qwen/Qwen3-1.7B")


@pytest.fixture
def tmpfs(tmp_path):
    """Mount real tmpfs file systems (root only; in CI as root they must mount), unmounted at teardown."""
    mounted: list[Path] = []

    def mount(options: str) -> Path:
        if os.geteuid() != 0:
            pytest.skip("mounting a real full or read-only file system (tmpfs) needs root")
        where = tmp_path / f"fs{len(mounted)}"
        where.mkdir()
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], capture_output=True, text=True)
        if done.returncode:
            message = f"mount -t tmpfs -o {options} is not permitted here: {done.stderr.strip()}"
            if os.environ.get("CI") == "true":
                pytest.fail(message)
            pytest.skip(message)
        mounted.append(where)
        return where

    yield mount
    for where in reversed(mounted):
        if subprocess.run(["umount", str(where)]).returncode:  # busy: a file the code under test left open
            subprocess.run(["umount", "--lazy", str(where)], check=True)


def _fill(folder: Path, leave_bytes: int = 0) -> None:
    """Write zeros until the file system has at most `leave_bytes` free (0: until ENOSPC)."""
    with (folder / "filler").open("wb", buffering=0) as handle:
        try:
            while (free := os.statvfs(folder).f_bavail * os.statvfs(folder).f_frsize) > leave_bytes:
                handle.write(bytes(min(free - leave_bytes, 2**20)) if leave_bytes else bytes(2**20))
        except OSError as exc:
            assert exc.errno == errno.ENOSPC and not leave_bytes


def test_a_results_folder_on_a_full_disk_is_refused_before_any_work(tmp_path, capsys, tmpfs):
    config = tmp_path / "c.yaml"
    config.write_text(SPACE + LOAD)
    full = tmpfs("size=1m")
    _fill(full)
    assert os.statvfs(full).f_bavail == 0
    line = refused(capsys, ["--config-file", str(config), "--results-dir", str(full / "out")], f"results_dir: {full / 'out'} has 0.0 MiB free")
    assert line.endswith("less than the 16 MiB a search needs for its results; free some space or choose another folder")
    assert sorted(path.name for path in (full / "out").iterdir()) == []  # nothing written, not even the lock
    refused(capsys, [f"results_dir={full / 'hydra'}"], f"results_dir: {full / 'hydra'} has 0.0 MiB free")  # before Hydra's own files
    nearly = tmpfs("size=24m")
    _fill(nearly, leave_bytes=8 * 2**20)  # 8 MiB free: a first replay's worth, not a search's results
    refused(capsys, ["--config-file", str(config), "--results-dir", str(nearly)], f"results_dir: {nearly} has 8.0 MiB free, less than the 16 MiB")
    assert not (nearly / "evaluations.jsonl").exists()


def test_a_results_folder_with_room_passes_the_check(tmpfs):
    from spica.results.ledger import ensure_results_folder

    roomy = tmpfs("size=24m")
    ensure_results_folder(roomy / "out")
    assert list((roomy / "out").iterdir()) == []  # the probe is gone


def test_a_results_folder_on_a_read_only_file_system_is_refused_before_any_work(tmp_path, capsys, tmpfs):
    config = tmp_path / "c.yaml"
    config.write_text(SPACE + LOAD)
    read_only = tmpfs("ro,size=24m")
    for folder in (read_only, read_only / "new"):
        refused(capsys, ["--config-file", str(config), "--results-dir", str(folder)], f"results_dir: {folder} cannot hold results (Read-only file system)")
    assert list(read_only.iterdir()) == []


def _plan(tmp_path) -> Path:
    config = tmp_path / "c.yaml"
    config.write_text(SPACE + LOAD)
    main(["compile", "--config-file", str(config), "-o", str(tmp_path / "plan.yaml")])
    return tmp_path / "plan.yaml"


def _resigned(path: Path, edit) -> Path:
    from spica.plan import _fingerprint

    data = yaml.safe_load(path.read_text())
    data.pop("fingerprint")
    edit(data)
    path.write_text(yaml.safe_dump({"fingerprint": _fingerprint(data), **data}))
    return path


PLAN_EDITS = [
    (lambda data: data.pop("versions"), "versions must map each package to its version, got None"),
    (lambda data: data.update(versions=["spica"]), "versions must map each package to its version, got ['spica']"),
    (lambda data: data.update(seed="one"), "seed must be an integer, got 'one'"),
    (lambda data: data.update(trace_sha256=5), "trace_sha256 must be a sha256 string or null, got 5"),
    (lambda data: data["config"]["workload"].pop("num_request_ratio"), "the recorded config is no longer valid: workload: num_request_ratio is required"),
]


@pytest.mark.parametrize("edit, expected", PLAN_EDITS)
def test_bad_plans(tmp_path, capsys, edit, expected):
    plan = _resigned(_plan(tmp_path), edit)
    capsys.readouterr()
    refused(capsys, ["run-plan", str(plan), "-o", str(tmp_path / "out")], f"{plan}: {expected}")


def test_an_edited_plan(tmp_path, capsys):
    plan = _plan(tmp_path)
    plan.write_text(plan.read_text().replace("gpu_budget: 4", "gpu_budget: 5"))
    capsys.readouterr()
    refused(capsys, ["run-plan", str(plan)], f"{plan}: fingerprint does not match the content")


GOOD_ROW = '{"timestamp": 0, "input_length": 600, "output_length": 10, "hash_ids": [1, 2]}\n'
TRACES = [
    ("", "holds no request"),
    ("not json\n", "line 1: not a JSON object (a mooncake trace has one per line)"),
    ("42\n", "line 1: '42' is not a JSON object"),
    (GOOD_ROW + '{"timestamp": 5, "output_length": 10, "hash_ids": [1, 2]}\n', "line 2: input_length None must be a positive integer"),
    (GOOD_ROW + '{"timestamp": 5, "input_length": "600", "output_length": 10, "hash_ids": [1, 2]}\n', "line 2: input_length '600' must be a positive integer"),
    ('{"timestamp": 0, "input_length": 600, "output_length": 10, "hash_ids": [1]}\n', "line 1: 1 hash_ids cover 512 tokens, fewer than input_length 600"),
    ('{"timestamp": -5, "input_length": 600, "output_length": 10, "hash_ids": [1, 2]}\n', "line 1: timestamp -5 must be a number of ms ≥ 0"),
    ('{"timestamp": 9, "input_length": 600, "output_length": 10, "hash_ids": [1, 2]}\n' + GOOD_ROW, "line 2: timestamp 0 goes back from 9"),
    (GOOD_ROW.replace("[1, 2]", '"abc"'), "line 1: hash_ids must be a list of integers"),
]


@pytest.mark.parametrize("rows, expected", TRACES, ids=[f"trace{i}" for i in range(len(TRACES))])
def test_bad_traces_name_the_line_and_field(tmp_path, capsys, rows, expected):
    trace = tmp_path / "t.jsonl"
    trace.write_text(rows)
    config = tmp_path / "c.yaml"
    config.write_text(SPACE + f"workload: {{trace_path: {trace}}}\n")
    line = refused(capsys, ["--config-file", str(config)], f"workload.trace_path: {trace}")
    assert expected in line


def test_bad_trace_messages(tmp_path):
    from spica.workloads.summary import check_trace
    from spica.workloads.trace import TraceError

    for index, (rows, expected) in enumerate(TRACES):
        trace = tmp_path / f"t{index}.jsonl"
        trace.write_text(rows)
        with pytest.raises(TraceError) as info:
            check_trace(trace)
        assert expected in str(info.value), (rows, str(info.value))
    with pytest.raises(TraceError, match="not a JSON object|not UTF-8"):
        check_trace("/etc/shadow")


LOADS = [
    ("{isl: 1024, osl: 128, concurrency: 1000000000, num_request_ratio: 2}", "workload: num_request_ratio × load = 2,000,000,000 requests per replay; at most 1,000,000"),
    ("{isl: 1024, osl: 128, concurrency: 8, num_request_ratio: 1.0e12}", "workload: num_request_ratio × load = 8,000,000,000,000 requests per replay"),
    ("{isl: 8192, osl: 128, concurrency: 8, num_request_ratio: 2}", "workload: isl + osl = 8320 tokens does not fit search_space.context_length 4096"),
]


@pytest.mark.parametrize("workload, expected", LOADS)
def test_loads_replay_cannot_run(tmp_path, capsys, workload, expected):
    config = tmp_path / "c.yaml"
    config.write_text(SPACE.replace("gpu_budget: 4", "gpu_budget: 4, context_length: 4096") + f"workload: {workload}\n")
    refused(capsys, ["--config-file", str(config)], expected)


def test_a_trace_request_longer_than_the_set_context_is_said_with_its_line(tmp_path, config_warnings):
    from spica.config import SmartSearchConfig

    trace = tmp_path / "t.jsonl"
    trace.write_text(GOOD_ROW + GOOD_ROW.replace('"timestamp": 0', '"timestamp": 1').replace("600", "5000").replace("[1, 2]", str(list(range(10)))))
    config = yaml.safe_load(SPACE.replace("gpu_budget: 4", "gpu_budget: 4, context_length: 4096"))
    SmartSearchConfig.from_mapping({**config, "workload": {"trace_path": str(trace)}})
    assert ("workload.trace_path: line 2 holds a request of 5010 tokens (input_length + output_length, the trace's longest), "
            "longer than search_space.context_length 4096: Replay serves such requests, a deployed engine refuses them, and they "
            "can keep a replay running until sweep.max_eval_seconds") in config_warnings.text


def test_a_trace_request_longer_than_the_models_maximum_context_is_said_at_enumeration(tmp_path, config_warnings):
    """context_length null is the model's maximum (40,960 for Qwen3-32B), known once the space is enumerated."""
    from spica.config import SmartSearchConfig
    from spica.search.branches import branches_for

    trace = tmp_path / "t.jsonl"
    long_row = GOOD_ROW.replace('"timestamp": 0', '"timestamp": 1').replace("600", "50000").replace("[1, 2]", str(list(range(98))))
    trace.write_text(GOOD_ROW + long_row)
    config = SmartSearchConfig.from_mapping({**yaml.safe_load(SPACE), "workload": {"trace_path": str(trace)}})
    assert "holds a request" not in config_warnings.text  # nothing to compare with before the model's maximum is known
    branches = branches_for(config)
    assert branches[0].context_length == 40960
    assert ("workload.trace_path: line 2 holds a request of 50010 tokens (input_length + output_length, the trace's longest), "
            "longer than the model's maximum context 40960: Replay serves such requests, a deployed engine refuses them, and "
            "they can keep a replay running until sweep.max_eval_seconds") in config_warnings.text


@pytest.mark.parametrize("compiling", [True, False], ids=["compile", "search"])
def test_a_perf_data_version_not_installed_is_refused_before_any_work(tmp_path, capsys, compiling):
    config = tmp_path / "c.yaml"
    config.write_text(SPACE + LOAD)
    command = ["compile", "-o", str(tmp_path / "p.yaml")] if compiling else ["--results-dir", str(tmp_path / "out")]
    refused(capsys, [*command, "--config-file", str(config), "search_space.backend_version=0.27.0"],
            "search_space.backend_version: '0.27.0' is not a vllm perf-data version on h200_sxm")
    assert not (tmp_path / "p.yaml").exists() and not (tmp_path / "out" / "evaluations.jsonl").exists()


def test_a_bug_is_a_traceback_with_a_report_hint_never_invalid_input(tmp_path, capsys, monkeypatch):
    import spica.space.enumeration

    def broken(request):
        raise ValueError("an internal invariant broke")  # a bug in enumeration, not a user mistake

    monkeypatch.setattr(spica.space.enumeration, "enumerate_branches", broken)
    monkeypatch.setattr("spica.search.branches.enumerate_branches", broken)
    config = tmp_path / "c.yaml"
    config.write_text(SPACE + LOAD)
    with pytest.raises(SystemExit) as exit_info:
        main(["space", "--config-file", str(config)])
    err = capsys.readouterr().err
    assert exit_info.value.code == 1 and "invalid input" not in err
    assert "Traceback (most recent call last)" in err and "ValueError: an internal invariant broke" in err
    assert err.strip().splitlines()[-1].startswith("spica: this is a bug in Spica, not a problem with your input (ValueError); please report it")


INJECTED_BUG = """
import sys
import spica.search

def broken(*args, **kwargs):
    raise RuntimeError("an injected bug")

spica.search.run_smart_search = broken
from spica.__main__ import main
sys.argv = ["spica", *sys.argv[1:]]
main()
"""


@pytest.mark.parametrize("how", ["config-file", "hydra"])
def test_a_bug_in_a_search_is_a_traceback_with_a_report_hint(tmp_path, how):
    """Both ways of starting a search, as the command runs (its own process: a Hydra app run in
    the test process leaves its log handlers on the test's captured streams): an exception
    nobody raised on purpose is exit 1 with its traceback, never exit 2 "invalid input" (Hydra's
    own error handling is in between)."""
    config = tmp_path / "c.yaml"
    config.write_text(SPACE + LOAD)
    out = f"results_dir={tmp_path / 'out'}"
    arguments = ["--config-file", str(config), out] if how == "config-file" else [out]
    done = subprocess.run([sys.executable, "-c", INJECTED_BUG, *arguments], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    err = done.stderr
    assert done.returncode == 1 and "invalid input" not in err
    assert "Traceback (most recent call last)" in err and "RuntimeError: an injected bug" in err
    assert err.strip().splitlines()[-1] == ("spica: this is a bug in Spica, not a problem with your input (RuntimeError); "
                                            "please report it with the traceback above and the command you ran")
