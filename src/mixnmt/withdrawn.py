"""The verdicts withdrawn since they were published: docs/withdrawn.yaml names each by its
experiment and contrast, with why in a few words, and the README's claims table and
figure mark it (`mixnmt readme`); docs/results.md says it whole. A published contrast
keeps its numbers: what its runs found stays what they found, and a later finding
(another budget, a model found degenerate, a stricter adjustment) says how far it holds."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated

import jsonschema

from mixnmt import MixnmtError
from mixnmt.config import read
from mixnmt.schema import Validator, schema_error, settings_schema

WITHDRAWN = Path("docs/withdrawn.yaml")


@dataclasses.dataclass(frozen=True)
class Withdrawal:
    """One withdrawn verdict of an experiment: its contrast's two models, and why."""

    a: Annotated[str, {"description": "the contrast's model A, as its table names it"}]
    b: Annotated[str, {"description": "the contrast's model B"}]
    why: Annotated[str, {"minLength": 1, "maxLength": 200, "description": "why, in a few words"}]


SCHEMA = {
    "type": "object",
    "additionalProperties": {"type": "array", "minItems": 1, "items": settings_schema(Withdrawal)},
}
"""An experiment's name to its withdrawn verdicts."""

Contrast = tuple[str, str, str]
"""An experiment's name and a contrast's A and B."""


def withdrawals(path: Path, claimed: set[Contrast]) -> dict[Contrast, str]:
    """Why each withdrawn verdict of `path` was withdrawn, by its experiment and contrast,
    each of which must be one of `claimed` (the contrasts of the published experiments
    that make a claim); refused in one line naming the file and the entry otherwise."""
    entries = read(path)
    error = jsonschema.exceptions.best_match(Validator(SCHEMA).iter_errors(entries))
    if error is not None:
        raise MixnmtError(f"{path}: {schema_error(error)}")
    found: dict[Contrast, str] = {}
    for experiment, items in entries.items():
        for w in items:
            contrast, pair = (experiment, w["a"], w["b"]), f"{w['a']} against {w['b']}"
            if contrast not in claimed:
                raise MixnmtError(
                    f"{path}: {experiment}: no published contrast of {pair} makes a claim to withdraw"
                )
            if contrast in found:
                raise MixnmtError(f"{path}: {experiment}: {pair} is withdrawn twice (one entry a contrast)")
            found[contrast] = w["why"]
    return found
