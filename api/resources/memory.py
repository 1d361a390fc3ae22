"""What skill.json code skills keep for the caller (ctx.memory and ctx.session): read it,
search it and forget it. Every route acts on the caller's own (its token's name; the one store
without tokens), admin tokens included: memory is a person's, not the service's."""

from __future__ import annotations

from typing import Any

from flask.views import MethodView
from marshmallow import Schema, fields, validate

from api import auth, context
from api.blueprint import Blueprint
from api.errors import ApiError
from api.schemas.input_fields import WholeNumber
from runner_core.error_codes import ErrorCode
from runner_core.store import memory

blp = Blueprint(
    "memory", __name__, url_prefix="/v1", description="Skill memory and sessions (ctx.memory)"
)


class MemoryArgs(Schema):
    query = fields.String(
        validate=validate.Length(max=1000),
        metadata={"description": "search as ctx.memory.search does; without it, newest first"},
    )
    limit = WholeNumber(load_default=20, validate=validate.Range(min=1, max=memory.MAX_RESULTS))


class MemoryEntry(Schema):
    key = fields.String()
    text = fields.String(metadata={"description": "the entry (listing) or the hit's snippet"})
    meta = fields.Dict()
    updated_at = fields.String()
    score = fields.Integer(metadata={"description": "search only: query words the entry holds"})
    path = fields.String()
    startLine = fields.Integer()  # noqa: N815 (the seed's name)
    endLine = fields.Integer()  # noqa: N815


class MemoryList(Schema):
    entries = fields.List(fields.Nested(MemoryEntry))


class Forgotten(Schema):
    key = fields.String()
    forgotten = fields.Boolean()


class HistoryArgs(Schema):
    limit = WholeNumber(load_default=50, validate=validate.Range(min=1, max=memory.MAX_HISTORY))


class Message(Schema):
    role = fields.String()
    content = fields.String()
    at = fields.String()


class SessionHistory(Schema):
    session_id = fields.String()
    messages = fields.List(fields.Nested(Message))


class SessionCleared(Schema):
    session_id = fields.String()
    removed = fields.Integer()


def _scope(session_id: str = "") -> memory.Scope:
    return memory.Scope(owner=auth.owner() or "", session_id=session_id, skill_id="")


@blp.route("/memory")
class Memory(MethodView):
    @blp.arguments(MemoryArgs(), location="query")
    @blp.response(200, MemoryList)
    def get(self, args: dict[str, Any]):
        """The caller's memory entries: the best matches of `query`, or the newest."""
        with context.db_session() as session:
            if args.get("query"):
                hits = memory.search(session, _scope(), args["query"], args["limit"])
                return {"entries": [{**h, "text": h.pop("snippet")} for h in hits]}
            return {"entries": memory.entries(session, _scope(), args["limit"])}


@blp.route("/memory/<path:key>")
class MemoryKey(MethodView):
    @blp.response(200, MemoryEntry)
    def get(self, key: str):
        """One entry of the caller's memory."""
        with context.db_session() as session:
            entry = memory.get(session, _scope(), _key(key))
        if entry is None:
            raise ApiError(
                404, ErrorCode.MEMORY_NOT_FOUND, f"no memory entry {key!r}", {"key": key}
            )
        return entry

    @blp.response(200, Forgotten)
    def delete(self, key: str):
        """Forget one entry (as ctx.memory.forget)."""
        with context.db_session() as session:
            done = memory.forget(session, _scope(), _key(key))
            session.commit()
        if not done["forgotten"]:
            raise ApiError(
                404, ErrorCode.MEMORY_NOT_FOUND, f"no memory entry {key!r}", {"key": key}
            )
        return {"key": key, **done}


@blp.route("/sessions/<session_id>")
class SkillSession(MethodView):
    @blp.arguments(HistoryArgs(), location="query")
    @blp.response(200, SessionHistory)
    def get(self, args: dict[str, Any], session_id: str):
        """A conversation's last `limit` messages, oldest first (none: an empty list)."""
        with context.db_session() as session:
            messages = memory.history(session, _scope(session_id), args["limit"])
        return {"session_id": session_id, "messages": messages}

    @blp.response(200, SessionCleared)
    def delete(self, session_id: str):
        """Remove a conversation's messages."""
        with context.db_session() as session:
            done = memory.clear(session, _scope(session_id))
            session.commit()
        return {"session_id": session_id, **done}


def _key(key: str) -> str:
    if len(key) > memory.MAX_KEY:
        raise ApiError(
            400,
            ErrorCode.INVALID_REQUEST,
            f"a memory key has at most {memory.MAX_KEY} characters",
            {"key": key[:64]},
        )
    return key
