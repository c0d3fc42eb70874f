"""Registry entries named by import path ("package.module:attribute") and loaded when used: a
registry then never imports the modules of its entries, which are free to import the registry,
and reading a registry (a config's choices) loads none of them."""

from __future__ import annotations

import importlib
from typing import Any


def load(path: str) -> Any:
    """The attribute `path` names, its module imported on first use."""
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module), attribute)
