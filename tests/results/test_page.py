"""report.html opened in a real headless Chromium, network off: what its scripts drew is checked
against the folder it was written for (points, rows, reasons, links), and crafted markup in the
inputs stays text."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from headless import Chromium

from spica.results.page import write_report

pytestmark = pytest.mark.e2e


def ledger(folder: Path) -> list[dict]:
    return json.loads((folder / "ledger.json").read_text())


def summary(folder: Path) -> dict:
    return json.loads((folder / "summary.json").read_text())


def opened(browser: Chromium, folder: Path, fragment: str = "") -> Chromium:
    browser.open("about:blank")  # a fresh document, whatever the test before left open
    browser.open((folder / "report.html").as_uri() + fragment)
    assert browser.errors() == []  # the script ran: no exception, no blocked script (its CSP hash matches)
    assert browser.requests() == [(folder / "report.html").as_uri()]  # nothing asked of any network
    return browser


def local_file(url: str, folder: Path) -> Path:
    parsed = urlparse(url)
    assert parsed.scheme == "file", url
    path = Path(unquote(parsed.path))
    assert folder.resolve() in path.resolve().parents, f"{path} is outside {folder}"
    return path


def count(browser: Chromium, selector: str) -> int:
    return browser.run(f"document.querySelectorAll({json.dumps(selector)}).length")


def test_the_report_plots_every_feasible_candidate_and_lists_every_ledger_row(sla_search, browser, tmp_path):
    rows = ledger(sla_search)
    feasible = [row for row in rows if row["status"] == "feasible"]
    missed = [row for row in rows if row["status"] == "infeasible"]
    assert feasible and missed  # the fixture's SLA splits the candidates
    opened(browser, sla_search)
    assert count(browser, "svg.plot circle.point[data-status=feasible]") == len(feasible)
    # under an SLA the page shows, as plot.png does, the bounded latency against GPUs: the misses as crosses above the line
    assert count(browser, "svg.plot path.point.missed") == len(missed)
    assert count(browser, "svg.plot line.sla") == 1
    assert browser.run("document.querySelector('svg.plot .sla-label').textContent") == "SLA: mean_ttft_ms ≤ 600"
    assert count(browser, "#ledger tbody tr") == len(rows)
    assert sorted(browser.run("[...document.querySelectorAll('#ledger tbody tr')].map(r => r.dataset.key)")) == sorted(r["key"] for r in rows)
    # the misses apart, by reason
    assert browser.run("[...document.querySelectorAll('#reasons tbody tr')].map(r => [r.cells[0].textContent, r.cells[1].textContent])") == [["sla", str(len(missed))]]
    ranked = browser.run("[...document.querySelectorAll('#ledger tbody tr')].slice(0, 3).map(r => r.dataset.key)")
    assert ranked == summary(sla_search)["selected"][:3]  # sorted best first, as the table
    assert "SLA (mean): ttft_ms ≤ 600" in browser.run("document.querySelector('.notes').textContent")
    browser.screenshot(tmp_path / "report.png")
    assert (tmp_path / "report.png").stat().st_size > 20_000


def test_a_clicked_point_shows_its_manifest_replay_input_and_candidate_json(sla_search, browser):
    first = summary(sla_search)["selected"][0]
    opened(browser, sla_search)
    browser.run(f"document.querySelector('svg.plot [data-key=\"{first}\"]').dispatchEvent(new MouseEvent('click', {{bubbles: true}}))")
    assert browser.run("location.hash") == f"#candidate={first}"
    links = browser.run("Object.fromEntries([...document.querySelectorAll('#details .files a')].map(a => [a.className, a.href]))")
    assert set(links) == {"manifest", "replay", "candidate"}
    for kind, name in (("manifest", "dynamo.yaml"), ("replay", "replay.json"), ("candidate", "candidate.json")):
        path = local_file(links[kind], sla_search)
        assert path.name == name and path.is_file() and path.parent.name.startswith("01-")
    assert json.loads(local_file(links["candidate"], sla_search).read_text())["key"] == first
    # hovering shows the deployment with its metrics
    browser.run(f"document.querySelector('svg.plot [data-key=\"{first}\"]').dispatchEvent(new MouseEvent('mouseenter', {{clientX: 200, clientY: 200}}))")
    tip = browser.run("document.querySelector('.tooltip').textContent")
    best = next(row for row in ledger(sla_search) if row["key"] == first)
    assert tip.startswith("#1 agg vllm") or tip.startswith("#1 disagg vllm")
    assert f"{best['unrolled']['used_gpus']} GPUs" in tip and "mean TTFT (ms)" in tip


def test_a_candidate_not_selected_opens_by_its_link_with_its_replay_input(sla_search, browser):
    selected = set(summary(sla_search)["selected"])
    other = next(row for row in ledger(sla_search) if row["key"] not in selected)
    opened(browser, sla_search, f"#candidate={other['key']}")
    assert count(browser, "#details .files a") == 0
    assert "no deploy folder was written" in browser.run("document.querySelector('#details').textContent")
    shown = json.loads(browser.run("document.querySelector('#details details pre').textContent"))
    assert shown == other["replay_input"]


def test_the_ledger_sorts_by_a_clicked_column_and_filters(sla_search, browser):
    rows = ledger(sla_search)
    opened(browser, sla_search)
    browser.run("[...document.querySelectorAll('#ledger th')].find(th => th.textContent === 'GPUs').click()")
    gpus = browser.run("[...document.querySelectorAll('#ledger tbody tr')].map(r => Number(r.cells[3].textContent))")
    assert gpus == sorted(row["unrolled"]["used_gpus"] for row in rows)
    browser.run("const s = document.querySelector('select[aria-label=status]'); s.value = 'infeasible'; s.dispatchEvent(new Event('change'))")
    assert set(browser.run("[...document.querySelectorAll('#ledger tbody tr')].map(r => r.dataset.status)")) == {"infeasible"}
    browser.run("const f = document.querySelector('input[type=search]'); f.value = 'disagg'; f.dispatchEvent(new Event('input'))")
    keys = browser.run("[...document.querySelectorAll('#ledger tbody tr')].map(r => r.dataset.key)")
    want = [row for row in rows if row["status"] == "infeasible" and row["unrolled"]["deployment_mode"] == "disagg"]
    assert sorted(keys) == sorted(row["key"] for row in want)
    assert browser.run("document.querySelector('#ledger-section .count').textContent") == f"showing {len(want)} of {len(rows)} rows"


def test_a_pareto_report_draws_the_front_through_its_points(pareto_search, browser):
    front = summary(pareto_search)["selected"]
    feasible = [row for row in ledger(pareto_search) if row["status"] == "feasible"]
    assert len(front) >= 2
    opened(browser, pareto_search)
    assert count(browser, "svg.plot circle.point") == len(feasible)
    assert browser.run("document.querySelector('svg.plot polyline.front').getAttribute('points').split(' ').length") == len(front)
    assert browser.run("document.querySelector('#plot-section h2').textContent") == "Front"


def test_screened_candidates_are_drawn_apart_from_the_answer_and_not_as_misses(screened_search, browser):
    rows = ledger(screened_search)
    screened = [row for row in rows if row["status"] == "screened"]
    feasible = [row for row in rows if row["status"] == "feasible"]
    assert screened and feasible
    opened(browser, screened_search)
    assert count(browser, "svg.plot circle.point[data-status=screened]") == len(screened)
    assert count(browser, "svg.plot circle.point[data-status=feasible]") == len(feasible)
    assert count(browser, "svg.plot path.point.missed") == 0  # a screening replay missed nothing
    assert browser.run("document.querySelector('svg.plot polyline.front').getAttribute('points').split(' ').length") == len(summary(screened_search)["selected"])
    assert count(browser, "#ledger tbody tr") == len(rows) and count(browser, "#reasons tbody tr") == 0
    assert f"{len(screened)} screened" in browser.run("document.querySelector('.lede').textContent")
    assert "candidates were screened first" in browser.run("document.querySelector('.notes').textContent")


def test_markup_in_the_inputs_shows_as_text_and_runs_nothing(sla_search, browser, tmp_path):
    """A results folder is a set of files anyone can hand over: a crafted title, reason or plan."""
    folder = tmp_path / "crafted"
    shutil.copytree(sla_search, folder)
    attack = "</script><script>window.pwned = 1</script><img src=x onerror=\"window.pwned = 2\">"
    data = summary(folder)
    data["goal"]["title"] = f"Qwen {attack}"
    (folder / "summary.json").write_text(json.dumps(data))
    rows = ledger(folder)
    missed = next(row for row in rows if row["status"] == "infeasible")
    missed["reason"] = f"sla: {attack}"
    (folder / "ledger.json").write_text(json.dumps(rows))
    (folder / "plan.yaml").write_text((folder / "plan.yaml").read_text() + f"# trace_path: /data/{attack}\n")
    write_report(folder)
    opened(browser, folder)
    assert browser.run("window.pwned === undefined")
    assert browser.run("document.querySelector('h1').textContent") == f"Qwen {attack}"
    assert count(browser, "img") == 0
    assert attack in browser.run("document.querySelector('#config pre').textContent")
    assert attack in browser.run("document.querySelector('#reasons').textContent")
