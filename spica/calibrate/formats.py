"""A measured file read by the reader of its format, told apart by content: a silicon CSV
(spica.calibrate.measurements) or an AIPerf profile export (spica.calibrate.aiperf)."""

from __future__ import annotations

from pathlib import Path

from spica.calibrate.aiperf import read_aiperf_export
from spica.calibrate.measurements import SILICON_COLUMNS, Measurement, Skipped, read_silicon_csv
from spica.core.errors import UserError


def read_measurements(path: str | Path, candidate: str | Path | None = None) -> list[Measurement | Skipped]:
    """The measured points of one file, whichever format it is (told apart by content); `candidate`:
    the candidate.json an AIPerf export measured, when it is not beside the export."""
    path = Path(path)
    try:
        head = path.read_bytes()[:4096].decode("utf-8", errors="replace")
    except OSError as exc:
        raise UserError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if not head.strip():
        raise UserError(f"{path}: empty file (give a silicon CSV or an AIPerf profile export)")
    if head.lstrip().startswith("{"):
        return [read_aiperf_export(path, candidate)]
    first = head.splitlines()[0]
    if "silicon_ttft_ms" in first or "silicon_tpot_ms" in first or first.count(",") >= 5:
        return read_silicon_csv(path)
    raise UserError(f"{path}: neither a silicon CSV (header with {', '.join(SILICON_COLUMNS[:4])}, ...) "
                    "nor an AIPerf profile export (profile_export_aiperf.json)")
