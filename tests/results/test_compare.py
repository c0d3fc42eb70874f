"""`spica compare`: results folders side by side in the terminal and on one page opened in a real
headless Chromium; a Hydra multirun compared as one folder; bad input refused in one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_page import count, ledger, local_file, opened, summary

from spica.core.errors import UserError
from spica.results.compare import compare, config_differences, results_folders
from spica.results.saved import SavedSearch

pytestmark = pytest.mark.e2e


def spica(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "spica", *args], cwd=cwd, capture_output=True, text=True, timeout=600)


def test_two_searches_side_by_side_with_what_differs(sla_search, pareto_search, browser, tmp_path):
    table, page = compare([sla_search, pareto_search], tmp_path / "page" / "compare.html")
    first = SavedSearch.load(sla_search).selected[0]
    lines = table.splitlines()
    row = next(line for line in lines if line.startswith("1  "))
    assert first.label() in row and "throughput_per_gpu" in row and f"{first.objectives['throughput_per_gpu']:,.1f}" in row
    front_row = next(line for line in lines if line.startswith("2  "))
    assert "pareto" in front_row and f"  {len(summary(pareto_search)['selected'])}  " in front_row
    assert "  goal.target: \"throughput_per_gpu\" | \"pareto\"" not in table  # fields are the plan's own, under config.
    assert "  config.goal.target: throughput_per_gpu | pareto" in lines
    assert "  config.workload.concurrency: 16 | [2, 32]" in lines

    browser.open("about:blank")
    browser.open(page.as_uri())
    assert browser.errors() == [] and browser.requests() == [page.as_uri()]
    feasible = sum(row["status"] == "feasible" for folder in (sla_search, pareto_search) for row in ledger(folder))
    assert count(browser, "svg.plot circle.point") == feasible
    assert count(browser, ".legend-item") == 2
    reports = browser.run("[...document.querySelectorAll('#searches a')].map(a => a.href)")
    assert [local_file(url, tmp_path.parent) for url in reports] == [sla_search / "report.html", pareto_search / "report.html"]
    assert count(browser, "#differences-table tbody tr") == len(config_differences([SavedSearch.load(sla_search), SavedSearch.load(pareto_search)]))


def test_a_multirun_is_compared_as_one_folder_and_each_job_has_its_report(browser, tmp_path):
    """The README's `spica -m workload=chat,summarize`, then `spica compare` on its folder."""
    sweep = tmp_path / "multirun"
    run = spica("-m", "workload=chat,summarize", f"hydra.sweep.dir={sweep}", cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    assert results_folders([sweep]) == [sweep / "0", sweep / "1"]
    compared = spica("compare", str(sweep), cwd=tmp_path)
    assert compared.returncode == 0, compared.stderr
    assert "workload=chat " in compared.stdout and "workload=summarize " in compared.stdout
    assert "  config.workload.isl: 1024 | 8192" in compared.stdout
    assert compared.stdout.rstrip().endswith(f"wrote {sweep / 'compare.html'}")

    browser.open("about:blank")
    browser.open((sweep / "compare.html").as_uri())
    assert browser.errors() == []
    assert browser.run("[...document.querySelectorAll('#searches tbody tr')].map(r => r.cells[1].textContent)") == ["workload=chat", "workload=summarize"]
    for job in ("0", "1"):  # the default search's own page, per workload
        rows = ledger(sweep / job)
        opened(browser, sweep / job)
        assert count(browser, "svg.plot circle.point") == sum(row["status"] == "feasible" for row in rows)
        assert count(browser, "#ledger tbody tr") == len(rows)


def test_bad_folders_are_refused_in_one_line(tmp_path, sla_search):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(UserError, match=r"empty: neither a results folder nor a folder of them"):
        results_folders([empty])
    with pytest.raises(UserError, match=r"missing: not found"):
        results_folders([tmp_path / "missing"])
    unfinished = tmp_path / "unfinished"
    unfinished.mkdir()
    (unfinished / "summary.json").write_text("{}")
    with pytest.raises(UserError, match=r"not a finished Spica results folder \(no ledger.json, plan.yaml\)"):
        SavedSearch.load(unfinished)
    older = tmp_path / "older"
    for name in ("ledger.json", "plan.yaml"):
        older.mkdir(exist_ok=True)
        (older / name).write_text((sla_search / name).read_text())
    (older / "summary.json").write_text(json.dumps({"selected": []}))
    with pytest.raises(UserError, match=r"summary.json has no goal .* run the same search again into this folder"):
        SavedSearch.load(older)
    run = spica("compare", str(tmp_path / "missing"), cwd=tmp_path)
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.strip().splitlines()[-1].endswith("missing: not found")
