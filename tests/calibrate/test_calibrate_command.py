"""`spica calibrate` end to end on real measurements: fitted, cross-validated, written as data,
refused when it cannot help, and a bad input is one line with exit 2."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from spica.calibrate.measurements import Measurement, read_silicon_csv
from spica.evaluation.calibration import load_calibration

pytestmark = pytest.mark.e2e
SHIPPED = Path(__import__("aiconfigurator_core").__file__).parent / "systems" / "silicon_sample.csv"
GROUP = ("Qwen/Qwen3-32B", "h100_sxm", "trtllm", "agg")


def subset(path: Path, keep) -> Path:
    """Rows of the shipped silicon CSV (a user's measurements of one cluster), header included."""
    with SHIPPED.open(newline="") as source, path.open("w", newline="") as target:
        reader = csv.DictReader(source)
        writer = csv.DictWriter(target, reader.fieldnames)
        writer.writeheader()
        for row in reader:
            if keep(row):
                writer.writerow(row)
    return path


def qwen_rows(row: dict) -> bool:
    """12 measured configurations: TP2 and TP8 at 8, 32 and 128 requests, isl 1,024 and 2,048, osl 256.
    Uncalibrated, Spica's decode is 1.15x too slow on them (docs/fidelity.md)."""
    return ((row["model_path"], row["system"], row["backend"], row["mode"]) == GROUP and row["isl"] in ("1024", "2048")
            and row["osl"] == "256" and row["tp_size"] in ("2", "8") and row["batch_size"] in ("8", "32", "128"))


def spica(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "spica", *args], cwd=cwd, capture_output=True, text=True, timeout=900)


def test_a_calibration_fitted_on_measurements_lowers_held_out_error_and_is_written_as_data(tmp_path):
    measured = subset(tmp_path / "cluster.csv", qwen_rows)
    done = spica("calibrate", str(measured), "-o", "cal.yaml", "--folds", "3", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    calibration = load_calibration(tmp_path / "cal.yaml")
    (correction,) = calibration.corrections
    assert (correction.model, correction.system, correction.backend) == GROUP[:3]
    assert correction.fitted_on["points"] == 12 and correction.fitted_on["sources"] == ["cluster.csv"]
    before, after = correction.held_out["before"], correction.held_out["after"]
    assert after["ttft_median_ape"] + after["tpot_median_ape"] < before["ttft_median_ape"] + before["tpot_median_ape"]
    decode_at_16 = correction.decode * (16 / 64) ** correction.decode_exponent  # a step of 16 requests: these points' middle load per rank
    assert decode_at_16 < 0.9 and after["tpot_median_ape"] < 0.75 * before["tpot_median_ape"]  # decode sped up, as measured
    assert "prefill ×" in done.stderr and "held-out median TTFT error" in done.stderr
    assert yaml.safe_load((tmp_path / "cal.yaml").read_text())["spica_calibration"] == 1


def test_measurements_spica_already_predicts_get_no_calibration(tmp_path, predict_in_worker):
    """Measurements equal to Spica's own predictions leave nothing to correct: the fit cannot
    lower held-out error, so no file is written."""
    source = subset(tmp_path / "source.csv", qwen_rows)
    points = [item for item in read_silicon_csv(source) if isinstance(item, Measurement)]
    predicted = {p.measurement.source.split(" ")[0]: p for p in map(predict_in_worker, points)}
    rows = list(csv.DictReader(source.open(newline="")))
    for line, row in enumerate(rows, start=2):
        guess = predicted[f"source.csv:{line}"]
        row["silicon_ttft_ms"], row["silicon_tpot_ms"] = guess.ttft_ms, guess.tpot_ms
    echo = tmp_path / "echo.csv"
    with echo.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    done = spica("calibrate", str(echo), "-o", "cal.yaml", "--folds", "3", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    problems = [line.strip() for line in done.stderr.splitlines() if line.startswith("  ")]
    assert len(problems) == 1 and "the calibration would make held-out error worse" in problems[0] and "not written" in problems[0]
    assert not (tmp_path / "cal.yaml").exists()


@pytest.mark.parametrize("content, expected", [
    ("", "empty file"),
    ("id,silicon_data_source,backend,backend_version,model_path,system,mode,isl,osl,silicon_ttft_ms\n", "missing column 'gemm_quant_mode'"),
    ("{\"time_to_first_token\": {\"avg\": 5}}", "not an AIPerf profile export"),
])
def test_bad_measurements_are_one_line_and_exit_2(tmp_path, content, expected):
    (tmp_path / "m.csv").write_text(content)
    done = spica("calibrate", "m.csv", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    problems = [line.strip() for line in done.stderr.splitlines() if line.startswith("  ")]
    assert len(problems) == 1 and expected in problems[0], done.stderr
