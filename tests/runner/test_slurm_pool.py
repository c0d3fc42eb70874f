"""SlurmPool on the real SLURM cluster: ordered results, failures returned as objects."""

from __future__ import annotations

import math
import pickle

import pytest

from runner.slurm_pool import SlurmPool, _transportable
from spica.search.pool import run_all


@pytest.mark.e2e
def test_results_come_back_in_order_with_the_exception_of_a_failing_item_in_order_and_the_exception_of_a_failing_item(slurm_partition, tmp_path):
    with SlurmPool(tmp_path / "pool", slurm_partition=slurm_partition, max_parallel=2, timeout_min=5,
                   container_image=None) as pool:
        results = run_all(pool, math.sqrt, [16.0, 4.0, -1.0, 9.0])
        assert run_all(pool, math.sqrt, []) == []
    assert results[:2] == [4.0, 2.0] and results[3] == 3.0
    assert isinstance(results[2], ValueError)
    assert str(results[2]) == "math domain error"
    assert any("raised in SLURM job" in note for note in results[2].__notes__)


def test_max_parallel_must_be_positive(tmp_path):
    with pytest.raises(ValueError, match=r"^max_parallel=0 must be >= 1$"):
        SlurmPool(tmp_path, max_parallel=0, container_image=None)


class _NeedsTwoArguments(Exception):
    def __init__(self, code: int, detail: str) -> None:
        super().__init__(f"{code}: {detail}")


def test_an_exception_that_cannot_travel_back_becomes_a_runtime_error_naming_it():
    sent = _transportable(_NeedsTwoArguments(7, "bad shape"))
    received = pickle.loads(pickle.dumps(sent))
    assert type(received) is RuntimeError
    assert str(received) == "_NeedsTwoArguments: 7: bad shape"
    assert "_NeedsTwoArguments" in received.__notes__[0]
