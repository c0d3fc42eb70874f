"""Reading a config file: safe YAML, a key given twice refused, alias bombs refused, a mapping at the top."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import yaml

from spica.config.errors import ConfigError

class _UniqueKeyLoader(yaml.SafeLoader):
    """Safe YAML that refuses a key given twice in one mapping (last-wins would hide a typo)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                mark = key_node.start_mark
                raise ConfigError([f"{key}: given twice in one mapping (line {mark.line + 1}); keep one"])
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _UniqueKeyLoader.construct_mapping)

MAX_YAML_NODES = 100_000
"""Far more values than a config holds, once aliases are expanded: a 'billion laughs' file,
whose few lines expand to 10^9 values, is refused before anything walks it."""


def load_yaml(path: str | Path) -> Any:
    """Safe-load a YAML file; a missing, unreadable or malformed file is a one-line ConfigError."""
    path = Path(path)
    if not path.is_file():
        what = "a directory" if path.is_dir() else "not a regular file" if path.exists() else "not found"
        raise ConfigError([f"config file {path}: {what}"])
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError([f"{path}: not UTF-8 text (byte {exc.start}); save the config as UTF-8"]) from None
    except OSError as exc:
        raise ConfigError([f"{path}: cannot be read: {exc.strerror}"]) from None
    try:
        if "*" in text and _expanded_size(yaml.compose(text, Loader=yaml.SafeLoader)) > MAX_YAML_NODES:
            raise ConfigError([f"{path}: its aliases expand to more than {MAX_YAML_NODES:,} values; a config needs far fewer"])
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise ConfigError([f"{path}: not valid YAML{where}: {getattr(exc, 'problem', exc)}"]) from None


def load_config(path: str | Path) -> dict[str, Any]:
    """A config file's top level: a mapping. An empty file, a list or a scalar is refused in one
    line saying what the file holds instead (validating it as a config would only say its type)."""
    data = load_yaml(path)
    if isinstance(data, Mapping):
        return dict(data)
    held = "nothing (it is empty)" if data is None else "a list" if isinstance(data, list) else f"the {type(data).__name__} {data!r}"
    raise ConfigError([f"{path}: holds {held}; a config is a mapping with search_space and workload (goal, sweep optional)"])


def _expanded_size(root: yaml.Node | None) -> int:
    """How many values the document holds with every alias expanded (aliases share nodes)."""
    sizes: dict[int, int] = {}

    def size(node: yaml.Node) -> int:
        if id(node) not in sizes:
            sizes[id(node)] = 1  # a node that (recursively) holds itself counts once
            if isinstance(node, yaml.MappingNode):
                children = [child for pair in node.value for child in pair]
            elif isinstance(node, yaml.SequenceNode):
                children = node.value
            else:
                children = []
            sizes[id(node)] = min(MAX_YAML_NODES + 1, 1 + sum(size(child) for child in children))
        return sizes[id(node)]

    return size(root) if root is not None else 0
