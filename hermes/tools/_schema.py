"""Checking a model's tool arguments against the tool's JSON schema.

Only the part of JSON Schema that tool schemas use: ``required``, ``properties`` with
``type`` (one or a list), ``enum``, ``minimum``/``maximum``, array ``items`` and
``additionalProperties: false``. Models often send ``"5"`` for 5 or ``"true"`` for true;
those are coerced rather than bounced, since the intent is unambiguous.
"""

from __future__ import annotations

import math
from typing import Any

_TYPE_WORDS = {
    "string": "a string",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
    "array": "a list",
    "object": "an object",
    "null": "null",
}


class ArgumentError(ValueError):
    """The arguments do not fit the schema; the message says which one and why."""


def check_arguments(schema: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
    """Return ``args`` coerced to the schema's types, or raise ArgumentError."""
    props: dict[str, Any] = schema.get("properties", {})
    required: list[str] = schema.get("required", [])
    # A null for an optional argument means "not given"; models send that a lot.
    args = {k: v for k, v in args.items() if v is not None or k in required}
    missing = [k for k in required if args.get(k) is None]
    if missing:
        names = ", ".join(f"'{k}'" for k in missing)
        raise ArgumentError(f"missing required argument {names}")
    if schema.get("additionalProperties") is False:
        unknown = sorted(set(args) - set(props))
        if unknown:
            names = ", ".join(f"'{k}'" for k in unknown)
            raise ArgumentError(f"unknown argument {names}")
    return {
        key: _check(key, value, props[key]) if key in props else value
        for key, value in args.items()
    }


def _check(key: str, value: Any, spec: dict[str, Any]) -> Any:
    wanted = spec.get("type")
    if wanted is not None:
        types = wanted if isinstance(wanted, list) else [wanted]
        value = _coerce(key, value, types)
    if "enum" in spec and value not in spec["enum"]:
        options = ", ".join(repr(v) for v in spec["enum"])
        raise ArgumentError(f"'{key}' must be one of {options}, not {value!r}")
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in spec and value < spec["minimum"]:
            raise ArgumentError(f"'{key}' must be at least {spec['minimum']}, not {value!r}")
        if "maximum" in spec and value > spec["maximum"]:
            raise ArgumentError(f"'{key}' must be at most {spec['maximum']}, not {value!r}")
    if isinstance(value, list) and isinstance(spec.get("items"), dict):
        value = [_check(f"{key}[{i}]", item, spec["items"]) for i, item in enumerate(value)]
    return value


def _coerce(key: str, value: Any, types: list[str]) -> Any:
    for name in types:
        ok, coerced = _as_type(value, name)
        if ok:
            return coerced
    wanted = " or ".join(_TYPE_WORDS.get(t, t) for t in types)
    shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
    raise ArgumentError(f"'{key}' must be {wanted}, not {shown}")


def _as_type(value: Any, name: str) -> tuple[bool, Any]:
    if name == "string":
        return isinstance(value, str), value
    if name == "boolean":
        if isinstance(value, bool):
            return True, value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return True, value.strip().lower() == "true"
        return False, value
    if name == "integer":
        if isinstance(value, bool):
            return False, value  # True is an int to Python, not a count to a person
        if isinstance(value, int):
            return True, value
        if isinstance(value, float) and value.is_integer():
            return True, int(value)
        if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
            return True, int(value)
        return False, value
    if name == "number":
        if isinstance(value, bool):
            return False, value
        if isinstance(value, int | float):
            return True, value
        if isinstance(value, str):
            try:
                number = float(value)
            except ValueError:
                return False, value
            return math.isfinite(number), number
        return False, value
    if name == "array":
        return isinstance(value, list), value
    if name == "object":
        return isinstance(value, dict), value
    if name == "null":
        return value is None, value
    return True, value  # a type this checker does not know: let the handler judge


def usage(name: str, schema: dict[str, Any]) -> str:
    """One line that shows the model how to call the tool: ``name(a: string, b?: number)``."""
    required = set(schema.get("required", []))
    parts = []
    for key, spec in schema.get("properties", {}).items():
        wanted = spec.get("type", "any")
        kind = "|".join(wanted) if isinstance(wanted, list) else wanted
        if "enum" in spec:
            kind = "|".join(str(v) for v in spec["enum"])
        parts.append(f"{key}{'' if key in required else '?'}: {kind}")
    return f"{name}({', '.join(parts)})"
