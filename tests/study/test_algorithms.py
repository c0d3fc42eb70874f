"""spica/study/algorithms.py is the one list of study algorithms: the config's choices and the
studies a search builds come from it, and a grid or config check never imports Vizier."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from spica.config import SweepConfig
from spica.config.errors import ConfigError
from spica.config import SmartSearchConfig
from spica.study.algorithms import ALGORITHMS, VIZIER_DESIGNERS, StudyRequest
from spica.study.base import AskPlan
from spica.study.params import Objective, Param

REPO = Path(__file__).resolve().parents[2]


def request(**overrides) -> StudyRequest:
    fields = dict(
        study_id="branch", params=(Param("x", "discrete", choices=(1, 2, 4)),), objectives=(Objective("score"),),
        seed=7, fingerprint="plan", points=[{"x": 1}, {"x": 2}, {"x": 4}], asks=AskPlan((2, 2, 2), 0), designer="quasi_random",
    )
    return StudyRequest(**(fields | overrides))


@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_every_entry_is_a_choice_of_the_config_and_builds_a_study_that_asks(name):
    assert SweepConfig(algorithm=name).algorithm == name
    study = ALGORITHMS[name].build(request())
    suggestions = study.ask(2)
    assert len(suggestions) == 2 and all(s.params["x"] in (1, 2, 4) for s in suggestions)
    study.tell(suggestions[0].trial_id, {"score": 1.0})
    assert [t.trial_id for t in study.best()] == [suggestions[0].trial_id]


def test_an_unknown_algorithm_is_one_line_naming_every_entry():
    data = {
        "search_space": {"model_name": "Qwen/Qwen3-32B-FP8", "hardware_sku": "h200_sxm"},
        "workload": {"isl": 512, "osl": 32, "concurrency": 8, "num_request_ratio": 3},
        "sweep": {"algorithm": "bayes"},
    }
    with pytest.raises(ConfigError) as info:
        SmartSearchConfig.from_mapping(data)
    assert str(info.value).splitlines() == [f"sweep.algorithm: 'bayes' is not one of {', '.join(ALGORITHMS)}"]


def test_the_vizier_designers_are_the_ones_the_engine_builds():
    from spica.study import engine

    assert tuple(engine.DESIGNERS) == VIZIER_DESIGNERS
    assert SweepConfig.model_fields["designer"].default in VIZIER_DESIGNERS


def test_only_the_exhaustive_entry_measures_every_point_and_it_needs_no_vizier():
    assert [name for name, entry in ALGORITHMS.items() if entry.exhaustive] == ["grid"]
    script = (
        "import sys\n"
        "from spica.study.algorithms import ALGORITHMS\n"
        "from tests.study.test_algorithms import request\n"
        "study = ALGORITHMS['grid'].build(request())\n"
        "assert [s.params['x'] for s in study.ask(5)] == [1, 2, 4]\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('jax', 'vizier', 'optuna')))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_no_module_but_the_registry_compares_against_an_algorithm_name():
    pattern = re.compile(r"""(algorithm|designer)\s*(==|!=|in)\s*\(?["']""")
    offenders = [
        f"{path.relative_to(REPO)}:{number}"
        for path in (REPO / "spica").rglob("*.py")
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert offenders == []
