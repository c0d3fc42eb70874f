"""The README's "Checking and calibrating Spica against your cluster" says what the command and the
results do; what it names must exist."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from spica.config.app import EvaluationSettings
from spica.evaluation.calibration import OVERHEADS, Correction

README = Path(__file__).resolve().parents[2] / "README.md"


def section() -> str:
    text = README.read_text()
    start = text.index("### Checking and calibrating Spica against your cluster")
    return text[start:text.index("\n### ", start + 10)]


def test_the_readmes_calibrate_flags_and_keys_are_the_commands():
    text = section()
    calls = [line for line in text.splitlines() if "spica calibrate" in line and line.startswith("bin/spica")]
    assert calls, "the section shows a `bin/spica calibrate` call"
    helped = subprocess.run([sys.executable, "-m", "spica", "calibrate", "--help"], capture_output=True, text=True, timeout=120).stdout
    for flag in set(re.findall(r"\s(--?[a-z][a-z-]*)", " ".join(calls) + " " + " ".join(re.findall(r"`(--[a-z-]+)`", text)))):
        assert flag in helped, flag
    assert "evaluation.calibration=calibration.yaml" in text and "calibration" in EvaluationSettings.model_fields
    for name in ("timing_calibration", "spica/calibration", "summary.json"):
        assert name in text
    for name in OVERHEADS:  # the request overhead the section explains is the file's own field
        assert f"`{name}`" in text and name in Correction.__dataclass_fields__
