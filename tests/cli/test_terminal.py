"""What a person sees in a real terminal (a pseudo-terminal, as a shell gives): Spica's own
phases, progress and table, each redrawn in place, nothing drawn by Replay's workers."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.e2e

CONFIG = """\
search_space: {model_name: Qwen/Qwen3-32B-FP8, hardware_sku: h200_sxm, gpu_budget: 4, context_length: 4096,
               deployment_mode: [agg], backend: [vllm], router_mode: [round_robin], planner_scaling_policy: [disabled]}
workload: {isl: 2000, osl: 200, concurrency: 16, num_request_ratio: 20}
goal: {target: throughput_per_gpu}
sweep: {max_rounds: 2, candidates_per_round: 2, parallel_evals: 2, random_seed: 1}
"""


def in_a_terminal(argv: list[str], cwd, timeout: float = 600) -> str:
    """Run argv with stdin, stdout and stderr on a pseudo-terminal; everything it drew there."""
    main, child = pty.openpty()
    process = subprocess.Popen(argv, stdin=child, stdout=child, stderr=child, cwd=cwd, close_fds=True,
                               env={**os.environ, "TERM": "xterm", "COLUMNS": "200"})
    os.close(child)
    drawn, deadline = b"", time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # EIO: every writer closed the terminal
                break
            if not chunk:
                break
            drawn += chunk
        process.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        process.kill()
        os.close(main)
    assert process.returncode == 0, drawn.decode(errors="replace")[-2000:]
    return drawn.decode(errors="replace")


def test_a_search_in_a_terminal_shows_spicas_progress_and_no_replay_progress_bars(tmp_path):
    (tmp_path / "c.yaml").write_text(CONFIG)
    drawn = in_a_terminal([sys.executable, "-m", "spica", "--config-file", "c.yaml", "--results-dir", "out"], tmp_path)
    assert "offline replay" not in drawn  # Replay's own bar, drawn by each worker when stderr is a terminal
    assert "3/4 evaluations" in drawn and "replaying the best shapes with a replica fewer or more | 5/5 evaluations" in drawn
    assert "5 candidates replayed: 5 feasible" in drawn  # 4 in the rounds, 1 replica step
    assert "\r\x1b[Kspica: enumerating deployments...\r\x1b[Kspica: choosing the load predictor..." in drawn  # redrawn in place
    lines = drawn.replace("\r\n", "\n").split("\n")
    assert len(lines) < 30, drawn  # the table and its notes; progress redrawn in place
