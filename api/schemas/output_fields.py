"""Output fields the API's schemas share: timestamps in UTC with a trailing Z, and lists that
are written as [] when the value is None."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from marshmallow import fields


def iso(value: datetime | None) -> str | None:
    """ISO 8601 in UTC with a trailing Z; SQLite hands back naive datetimes stored as UTC."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.isoformat().replace("+00:00", "Z")


class UtcDateTime(fields.DateTime):
    """A datetime written as `iso()` writes it (documented as a plain string)."""

    def _serialize(self, value: datetime | None, attr: Any, obj: Any, **kwargs: Any) -> str | None:
        return iso(value)


class ListOrEmpty(fields.List):
    """A list written as [] when the value is None."""

    def _serialize(self, value: Any, attr: Any, obj: Any, **kwargs: Any) -> list[Any] | None:
        return [] if value is None else super()._serialize(value, attr, obj, **kwargs)
