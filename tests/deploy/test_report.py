"""The results folder's deploy/ part: a manifest per selected candidate, the engine versions in
summary.json, and a candidate that cannot be deployed named there instead of ending the write."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import yaml
from dgd_checks import candidate, unrolled

from spica.cli.hydra_app import compose
from spica.config.deploy import DeploySettings
from spica.plan import compile_plan
from spica.results.report import write_results


class Results(list):
    ledger: list
    tallies: dict


def test_write_results_writes_manifests_versions_and_undeployable(tmp_path: Path) -> None:
    config, _ = compose([])
    good = replace(candidate(unrolled("agg", "vllm", "off", False, False)), key="aaaaaaaaaaaaaaaa", objectives={"throughput_per_gpu": 2.0})
    bad_unrolled = unrolled("disagg", "trtllm", "off", False, False) | {"prefill_max_num_batched_tokens": 8100}
    bad = replace(candidate(bad_unrolled), key="bbbbbbbbbbbbbbbb", objectives={"throughput_per_gpu": 1.0})
    results = Results([good, bad])
    results.ledger, results.tallies = [good, bad], {"feasible": 2}
    (tmp_path / "deploy" / "07-from-an-earlier-run").mkdir(parents=True)
    write_results(tmp_path, compile_plan(config), results, predictor_report={}, timings={}, branches=[],
                  deploy=DeploySettings(namespace="prod"))  # fmt: skip
    manifest = yaml.safe_load((tmp_path / "deploy" / "01-aaaaaaaaaaaaaaaa" / "dynamo.yaml").read_text())
    assert manifest["metadata"]["namespace"] == "prod"
    assert not (tmp_path / "deploy" / "02-bbbbbbbbbbbbbbbb" / "dynamo.yaml").exists()
    assert (tmp_path / "deploy" / "02-bbbbbbbbbbbbbbbb" / "replay.json").exists()
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["engine_versions"] == {"trtllm": {"scored": "1.3.0rc20", "runtime": "1.3.0rc29"},
                                          "vllm": {"scored": "0.24.0", "runtime": "0.31.0"}}  # fmt: skip
    assert summary["undeployable"] == {
        "bbbbbbbbbbbbbbbb": "prefill_max_num_batched_tokens: 8100 is not a multiple of prefill_block_size 64 "
        "(TRT-LLM's disagg cache transceiver requires it)"
    }
    sample = json.loads((tmp_path / "deploy" / "01-aaaaaaaaaaaaaaaa" / "candidate.json").read_text())
    assert sample["key"] == "aaaaaaaaaaaaaaaa" and sample["config"] == good.config  # the unrolled sample, upstream's keys
    assert "deployment_mode" in sample["config"] and "mode" not in sample["config"]
    assert sorted(path.name for path in (tmp_path / "deploy").iterdir()) == ["01-aaaaaaaaaaaaaaaa", "02-bbbbbbbbbbbbbbbb"]
