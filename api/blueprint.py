"""flask-smorest's Blueprint with our request parser: a body that is not JSON, or JSON nested
deeper than the parser's recursion limit, is a 400 that says so (not a 500)."""

from __future__ import annotations

import json
from typing import Any, NoReturn

import flask_smorest
from webargs.flaskparser import FlaskParser, abort


class RequestParser(FlaskParser):
    def _raw_load_json(self, req) -> Any:
        try:
            return super()._raw_load_json(req)
        except RecursionError:
            abort(400, messages={"json": ["the JSON body is nested too deeply"]})

    def _handle_invalid_json_error(self, error, req, *args, **kwargs) -> NoReturn:
        reason = str(error) if isinstance(error, json.JSONDecodeError) else "not UTF-8"
        abort(400, exc=error, messages={"json": [f"the body is not valid JSON ({reason})"]})


class Blueprint(flask_smorest.Blueprint):
    ARGUMENTS_PARSER = RequestParser()
