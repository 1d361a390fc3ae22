"""The one JSON decoder of request bodies and of the JSON a form field carries: json.loads, but a
string (key or value) holding a lone surrogate (`"\\ud800"` without its pair) is refused as a
JSONDecodeError, since it is no Unicode text: nothing after it could encode, hash or store it;
so are NaN, Infinity and a number out of a double's range (1e400), which no JSON can hold."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from flask.json.provider import DefaultJSONProvider

_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)


def loads(doc: str | bytes) -> Any:
    """The value `doc` holds (bytes decoded as json.loads decodes them); JSONDecodeError for
    invalid JSON, bytes that are not text, or a lone surrogate."""
    if isinstance(doc, bytes | bytearray):
        try:
            doc = doc.decode(json.detect_encoding(doc), "surrogatepass")
        except UnicodeDecodeError as exc:
            raise json.JSONDecodeError(
                f"not {exc.encoding} text", str(exc.object), exc.start
            ) from exc
    value = json.loads(doc, parse_constant=_not_json, parse_float=_finite, parse_int=_integer)
    found = _SURROGATE.search(doc)  # a surrogate sent as UTF-8 bytes (decoded with surrogatepass)
    if found:
        raise _lone_surrogate(doc, found.start())
    if _SURROGATE_ESCAPE.search(doc) and _SURROGATE.search(json.dumps(value, ensure_ascii=False)):
        # only such an escape decodes to one; a pair decodes to one character
        for string in _STRING.finditer(doc):  # doc is valid JSON: these are its strings
            if _SURROGATE.search(json.loads(string.group())):
                raise _lone_surrogate(doc, string.start())
    return value


def _not_json(name: str) -> Any:
    """NaN, Infinity and -Infinity, which Python's decoder takes but JSON has not."""
    raise json.JSONDecodeError(f"{name} is not a JSON number", name, 0)


def _finite(text: str) -> float:
    """A number too large for a double (1e400) is no value the service could store or hash."""
    number = float(text)
    if not math.isfinite(number):
        raise json.JSONDecodeError(f"{text} is out of the range of a JSON number", text, 0)
    return number


def _integer(text: str) -> int:
    """An integer of more digits than Python converts (4300) is refused, not a 500."""
    try:
        return int(text)
    except ValueError as exc:
        raise json.JSONDecodeError(
            f"an integer of {len(text)} digits is too long", text, 0
        ) from exc


def _lone_surrogate(doc: str, pos: int) -> json.JSONDecodeError:
    return json.JSONDecodeError(
        "a string holds a lone surrogate, which is no Unicode text", doc, pos
    )


class JSONProvider(DefaultJSONProvider):
    """Flask's JSON with `loads` above, for request.get_json."""

    def loads(self, s: str | bytes, **kwargs: Any) -> Any:
        return loads(s)
