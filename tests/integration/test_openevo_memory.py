"""ctx.memory, ctx.session and ctx.scratch of skill.json code skills (Python and JavaScript)
through the API, Redis and a real worker in the run box: what one run stores another finds, a
conversation named by `runtime_options.session_id` carries over runs, a composite's steps share
scratch and session, and a run that touches memory never comes from the result cache."""

from __future__ import annotations

import json

import pytest

from tests.integration.openevo_stack import install_node_runners, openevo_stack

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    install_node_runners()
    with openevo_stack(tmp_path_factory.mktemp("memory"), "sqlite") as stack:
        yield stack


def run(stack, skill_id: str, inline: dict, **options) -> tuple[str, dict]:
    body = {"skill_id": skill_id, "input": inline, "runtime_options": options}
    resp = stack.client.post("/v1/jobs", json=body)
    assert resp.status_code == 200, resp.json
    rid = resp.json["request_id"]
    status = stack.wait(rid, 60)
    assert status["status"] == "succeeded", (status, logs(stack, rid))
    return rid, stack.client.get(f"/v1/jobs/{rid}/result").json["result"]["data"]


def logs(stack, rid: str) -> str:
    return stack.client.get(f"/v1/jobs/{rid}/logs").json.get("stderr", "")


def test_what_one_run_stores_another_finds_and_forgets(stack):
    _, stored = run(stack, "memory_store", {"text": "Redis keeps the queue of runs", "path": "n/r"})
    run(
        stack, "memory_store", {"text": "Celery workers take runs\nfrom the queue", "key": "celery"}
    )
    run(stack, "memory_store", {"text": "工作进程从队列中取出运行", "key": "zh"})
    run(stack, "memory_store", {"text": "SQL holds every result", "key": "sql"})

    _, found = run(stack, "memory_recall", {"query": "queue runs"})
    assert [(r["key"], r["score"]) for r in found["results"]] == [
        ("celery", 2),  # both words; the newer of the two first
        (stored["key"], 2),
    ]
    celery, redis = found["results"]
    assert celery["snippet"].startswith("Celery workers") and celery["endLine"] == 2
    assert redis["path"] == "n/r" and celery["path"] == "memory/celery"
    assert found["entries"] == 4

    _, chinese = run(stack, "memory_recall", {"query": "队列"})
    assert [r["key"] for r in chinese["results"]] == ["zh"]

    # a key stored again is replaced, not doubled; a forgotten one is gone
    run(stack, "memory_store", {"text": "SQL holds every run", "key": "sql"})
    _, after = run(stack, "memory_recall", {"query": "every", "forget": "celery"})
    assert after["forgotten"] is True and after["entries"] == 3
    assert [r["snippet"] for r in after["results"]] == ["SQL holds every run"]


def test_a_named_session_carries_over_runs_and_an_unnamed_one_is_the_run_s_own(stack):
    _, first = run(stack, "memory_store", {"text": "first"}, session_id="chat-1", no_cache=True)
    _, second = run(stack, "memory_store", {"text": "second"}, session_id="chat-1")
    assert first["session_id"] == second["session_id"] == "chat-1"
    assert (first["messages"], second["messages"]) == (1, 2)
    _, recalled = run(stack, "memory_recall", {"query": "x"}, session_id="chat-1")
    assert [(m["role"], m["content"]) for m in recalled["history"]] == [
        ("user", "first"),
        ("user", "second"),
    ]
    rid, alone = run(stack, "memory_store", {"text": "alone"})
    assert alone["session_id"] == rid and alone["messages"] == 1
    # what the skills kept, as the API shows it
    shown = stack.client.get("/v1/sessions/chat-1").json["messages"]
    assert [m["content"] for m in shown] == ["first", "second"]
    assert stack.client.get(f"/v1/memory/{first['key']}").json["text"] == "first"


def test_a_composite_s_steps_share_scratch_and_session(stack):
    rid, data = run(
        stack, "remember_then_recall", {"text": "Beat sends the sweep", "query": "sweep"}
    )
    assert data["last_key"] == data["key"]  # the store step's scratch, read by the recall step
    assert data["session_id"] == data["recalled_session"] == rid
    assert [m["content"] for m in data["history"]] == ["Beat sends the sweep"]
    assert [r["key"] for r in data["results"]] == [data["key"]]
    parent = stack.client.get(f"/v1/jobs/{rid}").json["run_id"]
    scratch = json.loads((stack.settings.runs_dir / parent / ".scratch.json").read_text())
    assert scratch == {"last_key": data["key"]}


def test_a_run_that_touches_memory_is_never_served_from_the_cache(stack):
    first, before = run(stack, "memory_recall", {"query": "cache probe"})
    run(stack, "memory_store", {"text": "cache probe entry", "key": "probe"})
    second, after = run(stack, "memory_recall", {"query": "cache probe"})
    assert stack.client.get(f"/v1/jobs/{second}").json.get("cache_hit") is not True
    assert "probe" not in [r["key"] for r in before["results"]]
    assert "probe" in [r["key"] for r in after["results"]]


def test_a_refused_memory_request_fails_the_run_with_the_reason(stack):
    resp = stack.client.post(
        "/v1/jobs", json={"skill_id": "memory_store", "input": {"text": "x", "key": "k" * 300}}
    )
    rid = resp.json["request_id"]
    status = stack.wait(rid, 60)
    assert status["status"] == "failed" and status["error"]["code"] == "SKILL_SCRIPT_FAILED"
    assert "ctx.memory.store: a memory key is a non-empty string of at most 255" in logs(stack, rid)
