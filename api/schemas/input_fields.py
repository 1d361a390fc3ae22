"""Input fields the API's request schemas share: whole numbers and ISO 8601 times."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from marshmallow import fields


class WholeNumber(fields.Integer):
    """An integer of a query string or JSON body. A number with a fraction (1.5) is refused as
    JSON Schema's `integer` refuses it; marshmallow's own Integer cuts it to 1. 2.0 is 2."""

    def _validated(self, value: Any) -> int:
        if isinstance(value, float) and not value.is_integer():
            raise self.make_error("invalid", input=value)
        return super()._validated(value)


class Timestamp(fields.DateTime):
    """An ISO 8601 time (`2026-01-31T12:00:00Z`, an offset, or a date alone), read as an aware
    datetime; one without an offset is UTC."""

    default_error_messages = {"invalid": "Not a valid ISO 8601 time."}

    def _deserialize(self, value: Any, attr: Any, data: Any, **kwargs: Any) -> datetime:
        try:
            parsed = datetime.fromisoformat(value)
        except (TypeError, ValueError) as exc:
            raise self.make_error("invalid") from exc
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
