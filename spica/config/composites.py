"""Validation and resolution of composite knob entries (a preset id or a complete dict).

A dict replaces the preset it resembles: it must carry every field the policy needs, and
nothing else. Resolution turns every entry into a (name, fields) pair that later layers use.
"""

from __future__ import annotations

import logging
import math
from typing import Any, Callable, Mapping

from spica.config import presets

Entry = str | Mapping[str, Any]
log = logging.getLogger("spica.config")


def _choices(table: Mapping[str, Any]) -> str:
    return ", ".join(table)


def _check_keys(entry: Mapping[str, Any], required: set[str], optional: set[str]) -> None:
    unknown = sorted(set(entry) - required - optional)
    if unknown:
        raise ValueError(f"unknown key {unknown[0]!r}; allowed: {', '.join(sorted(required | optional))}")
    missing = sorted(required - set(entry))
    if missing:
        raise ValueError(f"missing key {missing[0]!r}; a dict entry must be complete: {', '.join(sorted(required))}")


def _positive_int(entry: Mapping[str, Any], key: str, upper: int | None = None) -> None:
    value = entry[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < (0 if upper else 1) or (upper and value > upper):
        bound = f"an integer in 0..{upper}" if upper else "a positive integer"
        raise ValueError(f"{key}: {value!r} must be {bound}")


def _flag(entry: Mapping[str, Any], key: str) -> None:
    if not isinstance(entry[key], bool):
        raise ValueError(f"{key}: {entry[key]!r} must be true or false")


def scaling_policy_entry(entry: Any) -> Entry:
    """A dict holds both flags and both intervals, whichever scaling it enables (docs/config.md)."""
    if isinstance(entry, str):
        return _preset(entry, presets.PLANNER_SCALING_POLICIES)
    entry = _mapping(entry)
    flags = ("enable_throughput_scaling", "enable_load_scaling")
    intervals = ("throughput_adjustment_interval_seconds", "load_adjustment_interval_seconds")
    _check_keys(entry, set(flags) | set(intervals), set())
    for flag in flags:
        _flag(entry, flag)
    for key in intervals:
        _positive_int(entry, key)
    return dict(entry)


def fpm_sampling_entry(entry: Any) -> Entry:
    if isinstance(entry, str):
        return _preset(entry, presets.PLANNER_FPM_SAMPLING)
    entry = _mapping(entry)
    _check_keys(entry, {"max_num_fpm_samples", "fpm_sample_bucket_size"}, set())
    _positive_int(entry, "max_num_fpm_samples")
    _positive_int(entry, "fpm_sample_bucket_size")
    bucket = entry["fpm_sample_bucket_size"]
    if math.isqrt(bucket) ** 2 != bucket:
        raise ValueError(f"fpm_sample_bucket_size: {bucket} must be a perfect square (4, 16, 64, ...)")
    return dict(entry)


def load_sensitivity_entry(entry: Any) -> Entry:
    if isinstance(entry, str):
        return _preset(entry, presets.PLANNER_LOAD_SENSITIVITY)
    entry = _mapping(entry)
    _check_keys(entry, {"load_scaling_down_sensitivity", "load_min_observations"}, set())
    _positive_int(entry, "load_scaling_down_sensitivity", upper=100)
    _positive_int(entry, "load_min_observations")
    return dict(entry)


def load_predictor_entry(entry: Any) -> Entry:
    """A family and any predictor fields; a field of another family is ignored with a warning."""
    if isinstance(entry, str):
        return _preset(entry, presets.LOAD_PREDICTORS)
    entry = _mapping(entry)
    family = entry.get("load_predictor")
    if family not in presets.PREDICTOR_FAMILY_FIELDS:
        raise ValueError(f"load_predictor: {family!r} is not one of {_choices(presets.PREDICTOR_FAMILY_FIELDS)}")
    every_field = {key for keys in presets.PREDICTOR_FAMILY_FIELDS.values() for key in keys} | {"load_predictor_log1p"}
    _check_keys(entry, {"load_predictor"}, every_field)
    own = set(presets.PREDICTOR_FAMILY_FIELDS[family]) | {"load_predictor", "load_predictor_log1p"}
    ignored = sorted(set(entry) - own)
    if ignored:
        log.warning("load_predictor_candidates: %s does not apply to the %s predictor and is ignored", ", ".join(ignored), family)
    return {key: value for key, value in entry.items() if key in own}


def _preset(name: str, table: Mapping[str, Any]) -> str:
    if name not in table:
        raise ValueError(f"{name!r} is not one of {_choices(table)} (or a complete dict)")
    return name


def _mapping(entry: Any) -> Mapping[str, Any]:
    if not isinstance(entry, Mapping):
        raise ValueError(f"{entry!r} must be a preset id or a dict")
    return entry


def resolve(entries: list[Entry], table: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """Name every entry: presets by id, dicts as custom_<index>; fields always a fresh dict."""
    resolved = []
    for index, entry in enumerate(entries):
        if isinstance(entry, str):
            resolved.append((entry, dict(table[entry])))
        else:
            resolved.append((f"custom_{index}", dict(entry)))
    return resolved


Validator = Callable[[Any], Entry]
