from __future__ import annotations

import json
from pathlib import Path

from spica.space import cache


def test_store_merges_and_survives_a_new_process(space_cache_dir: Path) -> None:
    key = {"kind": "test", "n": 1}
    cache.store(key, {"a": [1, None]})
    cache.store(key, {"b": [2, "no room"]})
    cache.forget_in_process()
    assert cache.load(key) == {"a": [1, None], "b": [2, "no room"]}
    files = list((space_cache_dir / "space").glob("*.json"))
    assert any(json.loads(f.read_text())["key"] == key for f in files)


def test_other_keys_and_broken_files_read_as_empty(space_cache_dir: Path) -> None:
    assert cache.load({"kind": "test", "n": 2}) == {}
    key = {"kind": "test", "n": 3}
    cache.store(key, {"a": 1})
    path = next(f for f in (space_cache_dir / "space").glob("*.json") if json.loads(f.read_text())["key"] == key)
    path.write_text("{not json")
    cache.forget_in_process()
    assert cache.load(key) == {}
