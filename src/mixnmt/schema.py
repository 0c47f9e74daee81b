"""JSON schema from type annotations: a setting or hyperparameter is declared once, as an
annotated field or constructor argument whose `Annotated` metadata are JSON-schema
keywords (bounds, a `description`), and its schema is derived from that declaration."""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from typing import Annotated, Any

import jsonschema

JSON_TYPES = {int: "integer", float: "number", bool: "boolean", str: "string"}

Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine_many(
        {
            "integer": lambda _, value: isinstance(value, int) and not isinstance(value, bool),
            "number": lambda _, value: (
                (isinstance(value, int) and not isinstance(value, bool))
                or (isinstance(value, float) and math.isfinite(value))
            ),
        }
    ),
)
"""JSON Schema 2020-12, except that an integer is an int: 32.0 is not one (the standard
counts it as one, and the code it configures would get a float); and a number is finite:
YAML's .nan and .inf and JSON's NaN parse as floats, and NaN passes every bound."""


def schema_error(error: jsonschema.ValidationError, within: str = "") -> str:
    """One line for a jsonschema ValidationError of a config (or of its part `within`, a
    dotted key): the key at fault, then what is wrong."""
    message = error.message
    if error.validator == "pattern" and "description" in error.schema:  # say it in words
        message = f"{error.instance!r} is not {error.schema['description']}"
    number = "number" in (error.validator_value if error.validator == "type" else ())
    if number and isinstance(error.instance, float) and not math.isfinite(error.instance):
        message = f"expected a finite number, got {error.instance}"
    if len(message) > 200:  # a long value's repr
        message = message[:197] + "..."
    key = ".".join(map(str, [*([within] if within else []), *error.absolute_path]))
    return f"{key}: {message}" if key else message


SIZE_LIMIT = 1 << 16
"""The largest width, count or depth a hyperparameter may have: a sanity bound."""
PositiveInt = Annotated[int, {"minimum": 1, "maximum": SIZE_LIMIT}]
NonNegativeInt = Annotated[int, {"minimum": 0, "maximum": SIZE_LIMIT}]
NonNegativeFloat = Annotated[float, {"minimum": 0}]
Probability = Annotated[float, {"minimum": 0, "exclusiveMaximum": 1}]


def property_schema(hint: Any) -> dict[str, Any]:
    """The JSON schema of a value of type `hint`: a scalar, a Literal (an enum), `X | None`,
    or a fixed-length tuple; Annotated metadata are added as keywords."""
    schema: dict[str, Any] = {}
    if typing.get_origin(hint) is Annotated:
        hint, *extras = typing.get_args(hint)
        for extra in extras:
            schema |= extra
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Literal:
        return schema | {"enum": list(args)}
    if origin in (typing.Union, types.UnionType):
        (inner,) = [a for a in args if a is not type(None)]  # X | None
        inner_schema = property_schema(inner)
        return schema | inner_schema | {"type": [inner_schema["type"], "null"]}
    if origin is tuple:
        items = property_schema(args[0])
        return schema | {"type": "array", "items": items, "minItems": len(args), "maxItems": len(args)}
    return schema | {"type": JSON_TYPES[hint]}


def settings_schema(cls: type, exclude: tuple[str, ...] = ()) -> dict[str, Any]:
    """The JSON schema of a config section that dataclass `cls` declares: every field but
    `exclude` required, nothing else allowed."""
    hints = typing.get_type_hints(cls, include_extras=True)
    names = [f.name for f in dataclasses.fields(cls) if f.name not in exclude]
    return {
        "type": "object",
        "additionalProperties": False,
        "required": names,
        "properties": {name: property_schema(hints[name]) for name in names},
    }


def help_lines(cls: type, exclude: tuple[str, ...] = ()) -> str:
    """Each setting of `cls` with its description, one per line (for `--help`)."""
    properties = settings_schema(cls, exclude)["properties"]
    return "\n".join(f"  {name}: {p.get('description', '')}" for name, p in properties.items())
