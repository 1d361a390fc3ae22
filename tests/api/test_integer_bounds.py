"""Every integer a request may carry (query, path or JSON body) is bounded above in the OpenAPI
document, and a number past the bound is a 400, not an overflow in SQL (it was a 500); a number
with a fraction is a 422, not cut to a whole one."""

from __future__ import annotations

from unittest.mock import ANY

import pytest
from marshmallow import fields

from api.schemas.input_fields import WholeNumber
from tests.api.test_interaction_routes import reply, waiting_job
from tests.helpers import bearer

HUGE = 10**30


def _integers(schema: dict, spec: dict, where: str, seen: set[str]):
    """(where, schema) of every integer inside a request schema, following $refs."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        if name in seen:
            return
        seen.add(name)
        schema = spec["components"]["schemas"][name]
    if schema.get("type") == "integer" or "integer" in (schema.get("type") or []):
        yield where, schema
    for key, sub in (schema.get("properties") or {}).items():
        if not sub.get("readOnly"):
            yield from _integers(sub, spec, f"{where}.{key}", seen)
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            yield from _integers(schema[key], spec, f"{where}[]", seen)


def request_integers(spec: dict):
    for path, ops in spec["paths"].items():
        for method, op in ops.items():
            if method == "parameters":
                continue
            for param in op.get("parameters", []) + ops.get("parameters", []):
                if "schema" in param:
                    yield from _integers(
                        param["schema"], spec, f"{method} {path} {param['name']}", set()
                    )
            for media in (op.get("requestBody") or {}).get("content", {}).values():
                yield from _integers(
                    media.get("schema") or {}, spec, f"{method} {path} body", set()
                )


def test_every_request_integer_has_a_maximum(client):
    spec = client.get("/openapi.json").json
    found = list(request_integers(spec))
    assert len(found) >= 10, found  # the walk reaches the parameters and bodies
    unbounded = [where for where, schema in found if "maximum" not in schema]
    assert unbounded == []


@pytest.mark.parametrize(
    "query",
    [f"?cursor={HUGE}", f"?limit={HUGE}"],
    ids=["cursor", "limit"],
)
def test_a_huge_audit_page_number_is_a_400(scoped, query):
    resp = scoped.get(f"/v1/management/audit{query}", headers=bearer("root"))
    assert resp.status_code in (400, 422), resp.json
    assert resp.json["error"]["code"] == "REQUEST_VALIDATION_FAILED"
    assert "request_id" in resp.json["error"]


def test_the_largest_allowed_audit_cursor_answers_an_empty_page(scoped):
    resp = scoped.get(f"/v1/management/audit?cursor={2**53 - 1}", headers=bearer("root"))
    assert resp.status_code == 200, resp.json
    assert resp.json["items"] == []


def request_schemas(app):
    """(endpoint, schema) of every query and JSON body schema the views take."""
    for endpoint, view in app.view_functions.items():
        cls = getattr(view, "view_class", None)
        for method in ("get", "post", "put", "patch", "delete"):
            doc = getattr(getattr(cls, method, None), "_apidoc", {})
            for param in doc.get("arguments", {}).get("parameters", []):
                yield endpoint, param["schema"]


def test_every_request_integer_refuses_a_number_with_a_fraction(app):
    schemas = list(request_schemas(app))
    assert len(schemas) >= 10, schemas  # the walk reaches the views' arguments
    lax = [
        f"{endpoint} {name}"
        for endpoint, schema in schemas
        for name, field in schema.fields.items()
        if isinstance(field, fields.Integer) and not isinstance(field, WholeNumber)
    ]
    assert lax == []


def test_an_interaction_id_with_a_fraction_is_refused_and_a_whole_float_taken(client, app, queue):
    rid, _run_id, iid = waiting_job(client, app, queue)
    bad = reply(client, rid, iid + 0.5, "a")
    assert bad.status_code == 422, bad.json
    assert bad.json["error"]["code"] == "REQUEST_VALIDATION_FAILED"
    assert bad.json["error"]["details"]["fields"] == {"json": {"interaction_id": ANY}}
    assert queue.sent == []  # nothing was answered
    assert client.get(f"/v1/jobs/{rid}").json["status"] == "waiting_user"
    assert reply(client, rid, float(iid), "a").status_code == 200  # 1.0 is 1, as JSON Schema


def test_a_fraction_in_another_body_is_a_422(client):
    resp = client.post("/v1/jobs/cleanup", json={"older_than_sec": 1.5})
    assert resp.status_code == 422, resp.json
    assert resp.json["error"]["code"] == "REQUEST_VALIDATION_FAILED"
    assert "older_than_sec" in resp.json["error"]["message"]
