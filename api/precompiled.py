"""Schemas whose dump runs a plan compiled once from their own fields, so the schema stays
the one definition of an output that is written many times per request (a page of jobs)
without marshmallow's per-field calls and lookups.

Only field types whose output is known here are accepted (anything else is a TypeError when
the plan is built): strings, numbers, booleans, raw values and dicts pass through as the
object holds them (typed values from SQL rows), and the few converting fields say how.
"""
from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from operator import attrgetter
from typing import Any

from marshmallow import Schema, fields

from api.schema_fields import ListOrEmpty, UtcDateTime, iso

Dump = Callable[[Any], Any]
_PASS_THROUGH = (fields.String, fields.Integer, fields.Boolean, fields.Raw, fields.Dict)


def compile_dump(schema: Schema) -> Dump:
    """A function writing one object as `schema.dump` would (attributes, not dict keys)."""
    steps = tuple((field.data_key or name, attrgetter(field.attribute or name), _converter(field))
                  for name, field in schema.dump_fields.items())

    def dump(obj: Any) -> dict[str, Any]:
        return {key: get(obj) if convert is None else convert(get(obj))
                for key, get, convert in steps}
    return dump


def _converter(field: fields.Field) -> Dump | None:
    """None when the value is written as it is, else the function that writes it."""
    kind = type(field)
    if kind is UtcDateTime:
        return iso
    if kind is ListOrEmpty and type(field.inner) is fields.Raw:
        return lambda value: [] if value is None else list(value)
    if kind is fields.List and type(field.inner) is fields.Nested:
        one = compile_dump(field.inner.schema)
        return lambda value: None if value is None else [one(item) for item in value]
    if kind is fields.Nested and not field.many:
        one = compile_dump(field.schema)
        return lambda value: None if value is None else one(value)
    if kind in _PASS_THROUGH and not getattr(field, "as_string", False) and (
            kind is not fields.Dict or (field.key_field is None and field.value_field is None)):
        return None
    raise TypeError(f"no precompiled dump for {kind.__name__} field {field.name!r}")


class PrecompiledSchema(Schema):
    """A Schema whose `dump` runs its compiled plan (loading is marshmallow's own)."""

    @cached_property
    def _dump_one(self) -> Dump:
        return compile_dump(self)

    def dump(self, obj: Any, *, many: bool | None = None) -> Any:
        many = self.many if many is None else bool(many)
        return [self._dump_one(item) for item in obj] if many else self._dump_one(obj)
