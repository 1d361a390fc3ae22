"""Input fields the API's request schemas share."""

from __future__ import annotations

from typing import Any

from marshmallow import fields


class WholeNumber(fields.Integer):
    """An integer of a query string or JSON body. A number with a fraction (1.5) is refused as
    JSON Schema's `integer` refuses it; marshmallow's own Integer cuts it to 1. 2.0 is 2."""

    def _validated(self, value: Any) -> int:
        if isinstance(value, float) and not value.is_integer():
            raise self.make_error("invalid", input=value)
        return super()._validated(value)
