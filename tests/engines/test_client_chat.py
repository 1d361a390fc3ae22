"""Skill-Runner's clients on an interactive codex run (REST -> Redis -> worker -> codex -> fake
LLM), as the Zotero plugin and the e2e web client call it: the question in /chat/history, a
reply typed as text (an option's label, or a word for no option at all), the conversation as
chat messages (/chat), the run's file tree and a file's preview, and both bundles."""

from __future__ import annotations

import io
import json
import zipfile

from tests.engines.test_interactive_jobs import DONE, TERMINAL_STATUSES, service, start, wait

__all__ = ["service"]  # the module-scoped worker + fake LLM of the interactive tests


def typed(service, rid: str, interaction_id: int, text: str):
    return service["client"].post(
        f"/v1/jobs/{rid}/interaction/reply",
        json={"mode": "interaction", "interaction_id": interaction_id, "response": {"text": text}},
    )


def chat_messages(service, rid: str) -> list[dict]:
    """The /chat stream of a finished run: it replays and closes after the terminal event."""
    body = service["client"].get(f"/v1/jobs/{rid}/chat").get_data(as_text=True)
    frames = [f for f in body.split("\n\n") if f.strip()]
    assert frames[0].startswith("event: snapshot\n")
    return [
        json.loads(f.rpartition("data: ")[2]) for f in frames if f.startswith("event: chat_event")
    ]


def test_a_typed_label_answers_and_the_run_reads_as_a_chat(service):
    client = service["client"]
    rid = start(service)
    assert wait(service, rid)["status"] == "waiting_user"
    history = client.get(f"/v1/jobs/{rid}/chat/history").json
    question = [m for m in history["events"] if m["kind"] == "assistant_message"][-1]
    assert question["role"] == "assistant" and "Which title" in question["text"]
    assert history["count"] == len(history["events"]) and history["cursor_floor"] == 1
    assert history["cursor_ceiling"] >= question["seq"] and history["source"] == "events.jsonl"
    # the chat stream ends once the run waits (the clients reconnect and read the question)
    waiting = chat_messages(service, rid)
    assert waiting[-1]["text"].endswith("waiting_user")
    asked = next(m for m in waiting if m["fcmp_type"] == "user.input.required")
    assert asked["type"] == "interaction.pending.created"  # the plugin refreshes on it
    pending = client.get(f"/v1/jobs/{rid}/interaction/pending").json["pending"]
    assert [o["value"] for o in pending["ui_hints"]["options"]] == ["TITLE-A", "TITLE-B-7"]

    answered = typed(service, rid, pending["interaction_id"], "  the bold ONE ")
    assert answered.status_code == 200 and answered.json["accepted"] is True, answered.json
    status = wait(service, rid, TERMINAL_STATUSES)
    assert status["status"] == "succeeded", status
    assert client.get(f"/v1/jobs/{rid}/result").json["result"]["data"] == DONE

    messages = chat_messages(service, rid)
    kinds = [(m["role"], m["kind"]) for m in messages]
    assert ("user", "interaction_reply") in kinds and ("assistant", "assistant_message") in kinds
    reply = next(m for m in messages if m["kind"] == "interaction_reply")
    assert reply["text"] == "TITLE-B-7"  # the label typed, the option's value sent on
    assert messages[-1]["role"] == "system" and messages[-1]["text"].endswith("succeeded")
    assert all(m["seq"] > 0 for m in messages)
    events = client.get(f"/v1/jobs/{rid}/events/history").json
    assert events["count"] == len(events["events"]) >= len(messages)
    assert events["cursor_ceiling"] == events["events"][-1]["seq"]

    tree = client.get(f"/v1/jobs/{rid}/files").json
    entries = {e["path"]: e for e in tree["entries"]}
    assert entries["result"]["is_dir"] is True and entries["result"]["depth"] == 0
    assert entries["result/result.json"] == {
        **entries["result/result.json"],
        "name": "result.json",
        "is_dir": False,
        "depth": 1,
    }
    assert not any(p.startswith(".") for p in entries)  # engine homes stay out
    shown = client.get(f"/v1/jobs/{rid}/file?path=result/result.json").json["preview"]
    assert shown["mode"] == "text" and shown["detected_format"] == "json"
    assert json.loads(shown["content"])["data"] == DONE
    refused = client.get(f"/v1/jobs/{rid}/file?path=../../runs.db")
    assert refused.status_code == 403 and refused.json["error"]["code"] == "RUN_FILE_REFUSED"

    normal = zipfile.ZipFile(io.BytesIO(client.get(f"/v1/jobs/{rid}/bundle").data)).namelist()
    debug = client.get(f"/v1/jobs/{rid}/bundle/debug")
    assert (
        debug.status_code == 200 and "run_bundle_debug.zip" in debug.headers["Content-Disposition"]
    )
    names = zipfile.ZipFile(io.BytesIO(debug.data)).namelist()
    assert "logs/stdout.txt" in names and "logs/stdout.txt" not in normal


def test_a_typed_word_that_is_no_option_goes_to_the_agent_not_a_400(service):
    rid = start(service)
    assert wait(service, rid)["status"] == "waiting_user"
    pending = service["client"].get(f"/v1/jobs/{rid}/interaction/pending").json["pending"]
    answered = typed(service, rid, pending["interaction_id"], "whichever is shorter")
    assert answered.status_code == 200 and answered.json["accepted"] is True, answered.json
    assert wait(service, rid, TERMINAL_STATUSES)["status"] == "succeeded"
    replies = [
        m
        for m in service["client"].get(f"/v1/jobs/{rid}/chat/history").json["events"]
        if m["kind"] == "interaction_reply"
    ]
    assert [m["text"] for m in replies] == ["whichever is shorter"]
