"""Reading measured points: AI Configurator's silicon CSV with its traps, and refusing what is not one."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from spica.calibrate.formats import read_measurements
from spica.calibrate.measurements import SILICON_COLUMNS, Measurement, Skipped, read_silicon_csv
from spica.core.errors import UserError

SHIPPED = Path(__import__("aiconfigurator_core").__file__).parent / "systems" / "silicon_sample.csv"
COLUMNS = list(SILICON_COLUMNS) + [f"{role}_{name}" for role in ("prefill", "decode") for name in
                                   ("num_workers", "tp_size", "pp_size", "attention_dp_size", "moe_tp_size", "moe_ep_size")]


def write(path: Path, rows: list[dict], columns=COLUMNS) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, columns)
        writer.writeheader()
        for row in rows:
            writer.writerow({name: row.get(name, "") for name in columns})
    return path


def row(**fields) -> dict:
    base = {"id": "x_agg_1024x1024_c8_tp2", "silicon_data_source": "source_file=a.csv", "backend": "vllm", "backend_version": "0.12.0",
            "model_path": "Qwen/Qwen3-32B", "system": "h100_sxm", "mode": "agg", "isl": 1024, "osl": 1024, "batch_size": 8,
            "tp_size": 2, "pp_size": 1, "attention_dp_size": 1, "moe_tp_size": 1, "moe_ep_size": 1,
            "silicon_ttft_ms": 150.0, "silicon_tpot_ms": 16.0}
    return {**base, **fields}


def test_the_shipped_csv_reads_whole_with_every_left_out_row_counted_by_reason():
    items = read_silicon_csv(SHIPPED)
    assert len(items) == 5221
    reasons = {item.reason.split(":")[0] for item in items if isinstance(item, Skipped)}
    assert reasons <= {"disagg_worker_counts", "duplicate", "shape_inconsistent", "incomplete", "pipeline_parallel"}
    points = [item for item in items if isinstance(item, Measurement)]
    qwen = [p for p in points if p.group == ("Qwen/Qwen3-32B", "h100_sxm", "vllm", "agg")]
    assert len(qwen) == 93
    assert all(p.ttft_ms > 0 and p.tpot_ms > 0 and p.concurrency > 0 for p in points)


def test_a_rows_precision_is_read_where_the_file_has_the_column(tmp_path):
    (fp8, blank) = read_silicon_csv(write(tmp_path / "p.csv", [row(precision="fp8"), row(precision="", osl=512)], COLUMNS + ["precision"]))
    assert (fp8.precision, blank.precision) == ("fp8", None)
    (without,) = read_silicon_csv(write(tmp_path / "q.csv", [row()]))
    assert without.precision is None


def test_a_dep_rows_concurrency_is_the_recorded_total_not_the_per_rank_batch(tmp_path):
    dep = row(id="dsr1_b200_trtllm_fp4_agg_1024x1024_c256_cfg192", silicon_data_source="db-dump/2026-04-27; silicon_concurrency=256",
              model_path="deepseek-ai/DeepSeek-R1", backend="trtllm", batch_size=16, tp_size=1, attention_dp_size=16, moe_tp_size=4, moe_ep_size=4)
    (point,) = read_silicon_csv(write(tmp_path / "dep.csv", [dep]))
    assert point.concurrency == 256 and point.pools[0].shape.attention_dp == 16


def test_a_dump_that_widened_tp_by_ep_is_read_at_the_ids_width_and_its_twin_once(tmp_path):
    widened = row(id="2026_04_06_deepseek_r1_b200_sxm_sglang_fp8_agg_1024x8192_c16_tp8_ep8_1032", model_path="deepseek-ai/DeepSeek-R1",
                  backend="sglang", batch_size=16, tp_size=64, moe_tp_size=8, moe_ep_size=8)
    twin = {**widened, "id": "2026_03_25_deepseek_r1_b200_sxm_sglang_fp8_agg_1024x8192_c16_tp8_0_ep8_0_1", "tp_size": 8,
            "moe_tp_size": 1, "moe_ep_size": 8}
    first, second = read_silicon_csv(write(tmp_path / "w.csv", [widened, twin]))
    assert first.pools[0].shape.to_dict() == {"tp": 8, "pp": 1, "attention_dp": 1, "moe_tp": 1, "moe_ep": 8}
    assert isinstance(second, Skipped) and second.reason.startswith("duplicate: the same measurement as w.csv:2")


def test_disagg_rows_without_worker_counts_are_left_out_and_with_them_read(tmp_path):
    disagg = row(mode="disagg", tp_size="", batch_size="", prefill_tp_size=2, decode_tp_size=4)
    counted = {**disagg, "prefill_num_workers": 2, "decode_num_workers": 1, "silicon_ttft_ms": 99.0}
    first, second = read_silicon_csv(write(tmp_path / "d.csv", [disagg, counted]))
    assert isinstance(first, Skipped) and first.reason.startswith("disagg_worker_counts")
    assert [(p.role, p.shape.tp, p.replicas) for p in second.pools] == [("prefill", 2, 2), ("decode", 4, 1)]
    assert second.gpus == 8


@pytest.mark.parametrize("content, expected", [
    ("", "empty file"),
    ("id,backend\n1,vllm\n", "neither a silicon CSV"),
    (",".join(c for c in SILICON_COLUMNS if c != "silicon_tpot_ms") + ",extra,more\n", "missing column 'silicon_tpot_ms'"),
])
def test_a_file_that_is_not_a_silicon_csv_is_one_line(tmp_path, content, expected):
    path = tmp_path / "m.csv"
    path.write_text(content)
    with pytest.raises(UserError) as error:
        read_measurements(path)
    assert len(error.value.lines) == 1 and expected in error.value.lines[0]


@pytest.mark.parametrize("field, value, expected", [
    ("silicon_ttft_ms", "-3", "m.csv:2: column 'silicon_ttft_ms': -3 must be a positive number"),
    ("silicon_tpot_ms", "fast", "m.csv:2: column 'silicon_tpot_ms': 'fast' is not a number"),
    ("mode", "hybrid", "m.csv:2: column 'mode': 'hybrid' is not one of agg, disagg"),
])
def test_a_bad_value_names_its_line_and_column(tmp_path, field, value, expected):
    path = write(tmp_path / "m.csv", [row(**{field: value})])
    with pytest.raises(UserError) as error:
        read_measurements(path)
    assert error.value.lines == [expected]
