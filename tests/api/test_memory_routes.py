"""/v1/memory and /v1/sessions: each token reads, searches and forgets its own skill memory
and conversations only (admin included), with the seed's error bodies."""

from __future__ import annotations

from sqlalchemy import create_engine
from sqlalchemy.orm import Session

from runner_core.store import memory
from tests.helpers import bearer


def seed(settings) -> None:
    """What skills of alice and bob stored (the worker writes the same rows)."""
    engine = create_engine(settings.database_url)
    with Session(engine) as session:
        for owner, text in (("alice", "alice's queue note"), ("bob", "bob's queue note")):
            scope = memory.Scope(owner=owner, session_id="chat", skill_id="memory_store")
            memory.store(session, scope, text, key="note", meta={"path": f"{owner}.md"})
            memory.store(session, scope, f"{owner} other", key="dir/other")
            memory.append(session, scope, "user", f"hello from {owner}")
        session.commit()
    engine.dispose()


def test_each_token_sees_its_own_memory_only(scoped, settings):
    seed(settings)
    listed = scoped.get("/v1/memory", headers=bearer("alice")).json["entries"]
    assert [(e["key"], e["text"]) for e in listed] == [
        ("dir/other", "alice other"),
        ("note", "alice's queue note"),
    ]
    found = scoped.get("/v1/memory?query=queue", headers=bearer("bob")).json["entries"]
    assert [(e["key"], e["text"], e["path"], e["score"]) for e in found] == [
        ("note", "bob's queue note", "bob.md", 1)
    ]
    assert scoped.get("/v1/memory/dir/other", headers=bearer("alice")).json["text"] == (
        "alice other"
    )
    # admin is a person too: its own (empty) memory, not everyone's
    assert scoped.get("/v1/memory", headers=bearer("root")).json["entries"] == []
    history = scoped.get("/v1/sessions/chat", headers=bearer("bob")).json
    assert [m["content"] for m in history["messages"]] == ["hello from bob"]


def test_forgetting_and_clearing_touch_the_caller_s_own(scoped, settings):
    seed(settings)
    gone = scoped.delete("/v1/memory/note", headers=bearer("alice"))
    assert gone.status_code == 200 and gone.json == {"key": "note", "forgotten": True}
    again = scoped.delete("/v1/memory/note", headers=bearer("alice"))
    assert again.status_code == 404 and again.json["error"]["code"] == "MEMORY_NOT_FOUND"
    assert scoped.get("/v1/memory/note", headers=bearer("bob")).status_code == 200
    cleared = scoped.delete("/v1/sessions/chat", headers=bearer("alice")).json
    assert cleared == {"session_id": "chat", "removed": 1}
    assert len(scoped.get("/v1/sessions/chat", headers=bearer("bob")).json["messages"]) == 1
    # changing needs the submit scope
    refused = scoped.delete("/v1/memory/note", headers=bearer("reader"))
    assert refused.status_code == 403 and refused.json["error"]["code"] == "FORBIDDEN"


def test_bad_arguments_are_400s_with_the_error_body(client):
    for url in ("/v1/memory?limit=0", "/v1/memory?limit=x", "/v1/sessions/s?limit=100000"):
        resp = client.get(url)
        assert resp.status_code in (400, 422), (url, resp.json)
        assert {"code", "message", "details", "request_id"} <= set(resp.json["error"]), url
    long_key = client.get("/v1/memory/" + "k" * 300)
    assert long_key.status_code == 400 and long_key.json["error"]["code"] == "INVALID_REQUEST"
    missing = client.get("/v1/memory/nothing")
    assert missing.status_code == 404 and missing.json["error"]["details"] == {"key": "nothing"}
