"""flask-smorest's Blueprint with our request parser: a body that is not JSON, JSON nested
deeper than the decoder's recursion limit, or a string with a lone surrogate, is a 400 that says
so (not a 500)."""

from __future__ import annotations

import json
from typing import Any

import flask
import flask_smorest
import marshmallow as ma
from webargs import core
from webargs.flaskparser import FlaskParser, abort, is_json_request

from api import json_bodies


class RequestParser(FlaskParser):
    def load_json(self, req: flask.Request, schema: ma.Schema) -> Any:
        """The JSON body; `missing` when the request is not JSON or its body is empty."""
        if not is_json_request(req):
            return core.missing
        try:
            return json_bodies.loads(_text(req.get_data(cache=True)))
        except json.JSONDecodeError as exc:
            if exc.doc == "":
                return core.missing
            abort(400, exc=exc, messages={"json": [f"the body is not valid JSON ({exc})"]})
        except RecursionError:
            abort(400, messages={"json": ["the JSON body is nested too deeply"]})


def _text(body: bytes) -> str:
    """The body as UTF-8 text; JSONDecodeError (as webargs gives) for bytes that are not."""
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise json.JSONDecodeError(
            f"Bytes decoding error : {exc.reason}", doc=str(exc.object), pos=exc.start
        ) from exc


class Blueprint(flask_smorest.Blueprint):
    ARGUMENTS_PARSER = RequestParser()
