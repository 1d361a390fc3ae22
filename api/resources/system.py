"""The service as the Zotero plugin probes it: `POST /v1/system/handshake` (which protocols
this backend speaks, api.compat_protocols) and `HEAD`/`GET /v1/system/ping` (is it there)."""

from __future__ import annotations

from importlib import metadata
from typing import Any

from flask import Response
from flask.views import MethodView
from marshmallow import EXCLUDE, Schema, fields, validate

from api.blueprint import Blueprint
from api.compat_protocols import default_protocols, protocol_answer

REQUEST_SCHEMA = "zotero-agents.skillrunner-handshake.request.v1"
RESPONSE_SCHEMA = "zotero-agents.skillrunner-handshake.response.v1"
BACKEND_NAME = "skill-runner"

blp = Blueprint(
    "system",
    __name__,
    url_prefix="/v1/system",
    description="Handshake and reachability, as Skill-Runner clients probe a backend",
)


class HandshakeClient(Schema):
    class Meta:
        unknown = EXCLUDE

    name = fields.String(load_default=None, allow_none=True)
    version = fields.String(load_default=None, allow_none=True)


class HandshakeRequest(Schema):
    class Meta:
        unknown = EXCLUDE

    schema = fields.String(load_default=REQUEST_SCHEMA, validate=validate.OneOf([REQUEST_SCHEMA]))
    client = fields.Nested(HandshakeClient, load_default=dict)
    requested_protocols = fields.List(
        fields.String(validate=validate.Length(max=200)),
        load_default=list,
        validate=validate.Length(max=100),
    )


class HandshakeBackend(Schema):
    name = fields.String()
    version = fields.String()


class ProtocolSupport(Schema):
    class Meta:
        unknown = EXCLUDE

    supported = fields.Boolean(required=True)


class HandshakeResponse(Schema):
    schema = fields.String(metadata={"description": RESPONSE_SCHEMA})
    backend = fields.Nested(HandshakeBackend)
    protocols = fields.Dict(
        keys=fields.String(),
        values=fields.Dict(),
        metadata={"description": "protocol -> {supported: bool, ...its limits}"},
    )


def backend_version() -> str:
    try:
        return metadata.version("agent-skill-runner")
    except metadata.PackageNotFoundError:
        return "0"


_HANDSHAKE_ARGS = HandshakeRequest()


@blp.route("/handshake")
class Handshake(MethodView):
    @blp.arguments(_HANDSHAKE_ARGS)
    @blp.response(200, HandshakeResponse)
    def post(self, body: dict[str, Any]) -> dict[str, Any]:
        """Which of the `requested_protocols` this backend serves (every protocol it knows
        when none is named, but interaction files only when named): `{name: {supported:
        bool, ...limits}}`; a protocol it does not know is `supported: false`."""
        wanted = [p.strip() for p in body["requested_protocols"] if p.strip()]
        wanted = wanted or default_protocols()
        return {
            "schema": RESPONSE_SCHEMA,
            "backend": {"name": BACKEND_NAME, "version": backend_version()},
            "protocols": {name: protocol_answer(name, body) for name in dict.fromkeys(wanted)},
        }


@blp.route("/ping", methods=["GET", "HEAD"])
class Ping(MethodView):
    @blp.doc(responses={"204": {"description": "the service answers"}})
    def get(self) -> Response:
        """204 with no body: the service is there (HEAD alike)."""
        return Response(status=204)
