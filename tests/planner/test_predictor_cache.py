"""The sub-sweep's disk cache is data: read back equal, never executed, replaced when invalid."""

from __future__ import annotations

import json
import pickle

from spica.config.presets import LOAD_PREDICTORS
from spica.planner import predictors
from spica.planner.predictors import SubSweepResult, cached_predictor_sub_sweep

CANDIDATES = [("constant_last", dict(LOAD_PREDICTORS["constant_last"])), ("arima_raw", dict(LOAD_PREDICTORS["arima_raw"]))]


def _trace(tmp_path):
    path = tmp_path / "t.jsonl"
    rows = [{"timestamp": 1000 * i, "input_length": 100 + i, "output_length": 10, "hash_ids": [0, 1]} for i in range(600)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


def test_a_cached_sweep_round_trips_as_json_and_a_crafted_pickle_never_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("SPICA_CACHE_DIR", str(tmp_path / "cache"))
    trace = _trace(tmp_path)
    first = cached_predictor_sub_sweep(trace, "sha", [60], CANDIDATES)
    (entry,) = (tmp_path / "cache" / "predictors").glob("*.json")
    assert SubSweepResult.from_dict(json.loads(entry.read_text())) == first

    calls = []
    monkeypatch.setattr(predictors, "predictor_sub_sweep", lambda *args, **kwargs: calls.append(args) or first)
    assert cached_predictor_sub_sweep(trace, "sha", [60], CANDIDATES) == first and calls == []  # served from disk

    class Payload:
        def __reduce__(self):
            return (exec, ("open(%r, 'w').write('ran')" % str(tmp_path / "pwned"),))

    entry.write_bytes(pickle.dumps(Payload()))  # a crafted entry under the cache folder
    assert cached_predictor_sub_sweep(trace, "sha", [60], CANDIDATES) == first
    assert not (tmp_path / "pwned").exists() and len(calls) == 1  # recomputed, not executed
    entry.write_text(json.dumps({"reason": "swept", "intervals": {"60": {"winner": 3}}}))  # valid JSON, wrong shape
    assert cached_predictor_sub_sweep(trace, "sha", [60], CANDIDATES) == first and len(calls) == 2
