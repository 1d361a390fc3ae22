"""flask-smorest's Blueprint with our request parser: a body that is not JSON, or JSON nested
deeper than the decoder's recursion limit, is a 400 that says so (not a 500)."""

from __future__ import annotations

import json
from typing import Any

import flask
import flask_smorest
import marshmallow as ma
from webargs import core
from webargs.flaskparser import FlaskParser, abort, is_json_request


class RequestParser(FlaskParser):
    def load_json(self, req: flask.Request, schema: ma.Schema) -> Any:
        """The JSON body; `missing` when the request is not JSON or its body is empty."""
        if not is_json_request(req):
            return core.missing
        try:
            return core.parse_json(req.get_data(cache=True))
        except json.JSONDecodeError as exc:
            if exc.doc == "":
                return core.missing
            abort(400, exc=exc, messages={"json": [f"the body is not valid JSON ({exc})"]})
        except RecursionError:
            abort(400, messages={"json": ["the JSON body is nested too deeply"]})


class Blueprint(flask_smorest.Blueprint):
    ARGUMENTS_PARSER = RequestParser()
