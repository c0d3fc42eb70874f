"""Turn validation failures into one line per problem: the field path, then what is allowed.

Pydantic's own messages are precise but long and type-centric; a user editing YAML needs
`search_space.router_mode[0]: 'random' is not one of kv_router, round_robin`.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Sequence

from pydantic import BaseModel, ValidationError

from spica.core.errors import UserError


FIELD_FIRST = re.compile(r"^([a-z][a-z0-9_]*): (.+)$", re.DOTALL)


class ConfigError(UserError):
    """An invalid configuration; `lines` holds one message per problem."""


def field_path(loc: Iterable[Any]) -> str:
    """('search_space', 'router_mode', 0) -> 'search_space.router_mode[0]'."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif str(part).startswith("function-") or str(part) in {"list", "str", "dict"}:
            continue  # pydantic's internal union/validator labels carry no meaning for users
        else:
            path += f".{part}" if path else str(part)
    return path


def _allowed_fields(model: type[BaseModel] | None, loc: Sequence[Any]) -> list[str]:
    """Walk the schema along `loc` to list the fields the enclosing model accepts."""
    current = model
    for part in loc:
        if current is None or isinstance(part, int):
            continue
        field = current.model_fields.get(str(part))
        if field is None:
            return []
        current = _model_in(field.annotation)
    return sorted(current.model_fields) if current is not None else []


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _expected(ctx: dict[str, Any]) -> str:
    return str(ctx.get("expected", "")).replace("'", "").replace(" or ", ", ")


def _message(error: dict[str, Any], root: type[BaseModel] | None) -> str:
    kind = error["type"]
    loc = error["loc"]
    value = error.get("input")
    ctx = error.get("ctx") or {}
    if kind in {"literal_error", "enum"}:
        return f"{value!r} is not one of {_expected(ctx)}"
    if kind == "extra_forbidden":
        allowed = _allowed_fields(root, loc[:-1])
        return "unknown field" + (f"; allowed: {', '.join(allowed)}" if allowed else "")
    if kind in {"model_type", "model_attributes_type", "dict_type"}:
        allowed = _allowed_fields(root, loc)
        shown = f"{value!r} " if value is not None else ""
        return f"{shown}must be a mapping" + (f" of {', '.join(allowed)}" if allowed else "")
    if kind == "missing":
        return "required field is missing"
    if kind in {"value_error", "assertion_error"}:
        return str(ctx.get("error", error["msg"])).removeprefix("Value error, ")
    if kind == "too_short":
        return f"needs at least {ctx.get('min_length')} entries, got {ctx.get('actual_length')}"
    if kind == "too_long":
        return f"allows at most {ctx.get('max_length')} entries, got {ctx.get('actual_length')}"
    return f"{value!r}: {error['msg'].lower()}" if value is not None else error["msg"].lower()


def format_validation_error(exc: ValidationError, root: type[BaseModel] | None = None, prefix: Sequence[Any] = ()) -> list[str]:
    """One line per pydantic error, de-duplicated, in the order pydantic found them."""
    lines: list[str] = []
    for error in exc.errors(include_url=False):
        loc = tuple(prefix) + tuple(error["loc"])
        message = _message(error, root)
        named = FIELD_FIRST.match(message)
        if named and named.group(1) in _allowed_fields(root, error["loc"]):
            loc, message = loc + (named.group(1),), named.group(2)  # a cross-field rule about one field
        path = field_path(loc)
        line = f"{path}: {message}" if path else message
        if line not in lines:
            lines.append(line)
    return lines
