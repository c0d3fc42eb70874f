"""Config files are read safely: one line naming the problem, before any work, never a hang."""

from __future__ import annotations

import time

import pytest

from spica.config import ConfigError, SmartSearchConfig

VALID = (
    "search_space: {model_name: Qwen/Qwen3-32B, hardware_sku: h200_sxm}\n"
    "workload: {isl: 1024, osl: 128, concurrency: 8, num_request_ratio: 10}\n"
)


def error_for(tmp_path, text: str | bytes) -> list[str]:
    path = tmp_path / "c.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(ConfigError) as info:
        SmartSearchConfig.from_yaml(path)
    return info.value.lines


def test_a_key_given_twice_is_refused_not_last_wins(tmp_path):
    lines = error_for(tmp_path, VALID + "sweep:\n  max_rounds: 8\n  max_rounds: 1\n")
    assert lines == ["max_rounds: given twice in one mapping (line 5); keep one"]


def test_an_alias_bomb_is_refused_quickly(tmp_path):
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    bomb = "search_space:\n  model_name: Qwen/Qwen3-32B\n  hardware_sku: h200_sxm\n  x:\n" + "".join(f"    {line}\n" for line in levels)
    started = time.monotonic()
    lines = error_for(tmp_path, bomb + "workload: {isl: 1, osl: 1, concurrency: 8, num_request_ratio: 10}\n")
    assert time.monotonic() - started < 5
    assert lines[0].endswith("its aliases expand to more than 100,000 values; a config needs far fewer")
    # a few aliases, as people write them, are fine
    path = tmp_path / "ok.yaml"
    path.write_text(VALID.replace("search_space: {", "search_space: {agg_max_num_seqs: &s [256, 512], decode_max_num_seqs: *s, "))
    assert SmartSearchConfig.from_yaml(path).search_space.decode_max_num_seqs == [256, 512]


def test_not_utf8_not_a_file_and_not_yaml(tmp_path):
    assert error_for(tmp_path, VALID.encode("utf-16"))[0].endswith("not UTF-8 text (byte 0); save the config as UTF-8")
    with pytest.raises(ConfigError) as info:
        SmartSearchConfig.from_yaml(tmp_path)
    assert info.value.lines == [f"config file {tmp_path}: a directory"]
    with pytest.raises(ConfigError) as info:
        SmartSearchConfig.from_yaml(tmp_path / "missing.yaml")
    assert info.value.lines == [f"config file {tmp_path / 'missing.yaml'}: not found"]
    assert "not valid YAML (line 2, column 1)" in error_for(tmp_path, "sweep: [unclosed\n")[0]
