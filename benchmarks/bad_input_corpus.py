"""Count the bad-input corpus (tests/cli/test_bad_input.py) as a user meets it: every case runs
through the real `spica` command in a process of its own, and is counted as

  refused    exit 2, exactly one problem line, no traceback, within the time bound
  other      exit 2 without a traceback, but not one line (several, or none)
  traceback  "Traceback" in stderr
  hang       still running after the bound (killed): hung, or took the input and is searching
  accepted   any other exit status: the input was taken

    PYTHONPATH=. .venv/bin/python benchmarks/bad_input_corpus.py [--bound 60]

The full-disk and read-only folder cases mount real tmpfs file systems and are run as root only.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "cli"))
import test_bad_input as corpus  # noqa: E402  (the tables the tests assert on)


@contextlib.contextmanager
def _tmpfs(where: Path, options: str) -> Iterator[Path]:
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "--lazy", str(where)], check=True)


def cases(work: Path, stack: contextlib.ExitStack) -> Iterator[tuple[str, list[str]]]:
    """(name, argv after `spica`) for every corpus case, files written under `work`."""
    good = work / "good.yaml"
    good.write_text(corpus.SPACE + corpus.LOAD)
    out = ["--results-dir", str(work / "out")]
    for index, (text, _) in enumerate(corpus.CONFIGS):
        path = work / f"config{index}.yaml"
        path.write_text(text)
        yield f"config{index}", ["--config-file", str(path), *out]
    for index, (text, _) in enumerate(corpus.NOT_MAPPINGS):
        path = work / f"not-a-mapping{index}.yaml"
        path.write_text(text)
        yield f"not-a-mapping{index}", ["--config-file", str(path), "sweep.random_seed=3", *out]
    utf16 = work / "utf16.yaml"
    utf16.write_bytes((corpus.SPACE + corpus.LOAD).encode("utf-16"))
    yield "utf16", ["--config-file", str(utf16)]
    yield "directory", ["--config-file", str(work)]
    yield "missing", ["--config-file", str(work / "none.yaml")]
    for index, (overrides, _) in enumerate(corpus.OVERRIDES):
        yield f"override{index}", ["--config-file", str(good), *overrides, *out]
    bomb = corpus._alias_bomb(work / "bomb.yaml")
    for overrides in corpus.BOMB_OVERRIDES:
        yield f"bomb+{len(overrides)}", ["--config-file", str(bomb), *overrides, *out]
    a_file = work / "a-file"
    a_file.write_text("x")
    for name, folder in (("file", a_file), ("under-file", a_file / "under"), ("proc", Path("/proc/spica-results"))):
        yield f"results-{name}", ["--config-file", str(good), "--results-dir", str(folder)]
    if os.geteuid() == 0:
        full = stack.enter_context(_tmpfs(work / "full", "size=1m"))
        corpus._fill(full)
        nearly = stack.enter_context(_tmpfs(work / "nearly", "size=24m"))
        corpus._fill(nearly, leave_bytes=8 * 2**20)
        read_only = stack.enter_context(_tmpfs(work / "ro", "ro,size=24m"))
        for name, folder in (("full", full / "out"), ("8MiB-free", nearly), ("read-only", read_only), ("under-read-only", read_only / "new")):
            yield f"results-{name}", ["--config-file", str(good), "--results-dir", str(folder)]
    for index, (rows, _) in enumerate(corpus.TRACES):
        trace = work / f"t{index}.jsonl"
        trace.write_text(rows)
        config = work / f"trace{index}.yaml"
        config.write_text(corpus.SPACE + f"workload: {{trace_path: {trace}}}\n")
        yield f"trace{index}", ["--config-file", str(config), *out]
    for index, (workload, _) in enumerate(corpus.LOADS):
        config = work / f"load{index}.yaml"
        config.write_text(corpus.SPACE.replace("gpu_budget: 4", "gpu_budget: 4, context_length: 4096") + f"workload: {workload}\n")
        yield f"load{index}", ["--config-file", str(config), *out]
    for index, (edit, _) in enumerate(corpus.PLAN_EDITS):
        folder = work / f"plan{index}"
        folder.mkdir()
        plan = corpus._resigned(_compiled(good, folder), edit)
        yield f"plan{index}", ["run-plan", str(plan), "-o", str(folder / "out")]
    edited = _compiled(good, work / "plan-edited")
    edited.write_text(edited.read_text().replace("gpu_budget: 4", "gpu_budget: 5"))
    yield "plan-edited", ["run-plan", str(edited), "-o", str(work / "plan-edited" / "out")]
    for name, command in (("compile", ["compile", "-o", str(work / "p.yaml")]), ("search", out)):
        yield f"perf-data-{name}", [*command, "--config-file", str(good), "search_space.backend_version=0.27.0"]


def _compiled(config: Path, folder: Path) -> Path:
    folder.mkdir(exist_ok=True)
    plan = folder / "plan.yaml"
    subprocess.run([sys.executable, "-m", "spica", "compile", "--config-file", str(config), "-o", str(plan)],
                   cwd=REPO, check=True, capture_output=True)
    return plan


def classify(argv: list[str], bound: float) -> tuple[str, float, str]:
    started = time.monotonic()
    try:
        done = subprocess.run([sys.executable, "-m", "spica", *argv], cwd=REPO, capture_output=True, text=True, timeout=bound)
    except subprocess.TimeoutExpired:
        return "hang", time.monotonic() - started, ""
    seconds = time.monotonic() - started
    problems = [line.strip() for line in done.stderr.splitlines() if line.startswith("  ")]
    if "Traceback" in done.stderr:
        return "traceback", seconds, done.stderr.strip().splitlines()[-1]
    if done.returncode == 2:
        return ("refused" if len(problems) == 1 else "other"), seconds, " | ".join(problems)
    return "accepted", seconds, f"exit {done.returncode}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bound", type=float, default=60.0, help="seconds before a case counts as a hang")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every case")
    args = parser.parse_args()
    counts: collections.Counter[str] = collections.Counter()
    slowest = (0.0, "")
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        for name, argv in cases(Path(tmp), stack):
            kind, seconds, detail = classify(argv, args.bound)
            counts[kind] += 1
            slowest = max(slowest, (seconds, name))
            if args.verbose or kind != "refused":
                print(f"{kind:9} {seconds:5.1f}s {name}: {detail}")
    total = sum(counts.values())
    print(f"{total} bad inputs: " + ", ".join(f"{counts[kind]} {kind}" for kind in ("refused", "other", "traceback", "hang", "accepted"))
          + f"; slowest {slowest[1]} {slowest[0]:.1f} s")


if __name__ == "__main__":
    main()
