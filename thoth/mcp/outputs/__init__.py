"""Each tool surface's output models: one module per surface, the only place its own words are applied."""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel, ConfigDict

M = TypeVar("M", bound=BaseModel)


class Output(BaseModel):
    """Every output model's base. Its validator and JSON schema are built when first used, not when
    the class is defined: a start defines all ~45 of them, and a first request needs one or two
    (docs/benchmarks.md, "Cold start"). The schema they give is the same."""

    model_config = ConfigDict(defer_build=True)


def from_fields(model: type[M], *records: object, **values: object) -> M:
    """`model` built from records: `values` as given (the surface's own names and computed values,
    written out where the model is built) and every other field from the first of `records` that
    has an attribute of the field's name (a field no record has keeps its default)."""
    for name in model.model_fields:
        if name not in values:
            record = next((r for r in records if hasattr(r, name)), None)
            if record is not None:
                values[name] = getattr(record, name)
    return model(**values)
