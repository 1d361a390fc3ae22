"""Interactive runs through the whole service with the real CLIs: a turn that asks, a reply
over the API, and a next turn that resumes the same engine session.

The fake LLM answers the first turn with an <ASK_USER_YAML> question; requests that carry the
runner's reply (or auto-decision) message get the finishing variant of the script.
"""

from __future__ import annotations

import json
import threading
from dataclasses import asdict

import pytest

from api import create_app
from api.queue import CeleryQueue
from fake_llm import FakeLLM, Script
from runner_core.engines import get_adapter
from runner_core.statuses import TERMINAL_STATUSES
from runner_core.store.db import make_engine
from tests.engines.harness import counted_as_sent, fake_engine_config, require_binary
from tests.helpers import wait_for_job
from tests.integration.services import WorkerProcess, broker_settings

ENGINES = ["codex", "gemini", "opencode", "qwen", "claude"]
WAITING = ("waiting_user", *TERMINAL_STATUSES)
REPLIED = "The user answered your question"  # the runner's reply message starts so
NOBODY = "Nobody answered your question"  # ... and its auto-decision message
QUESTION = """I drafted two titles.
<ASK_USER_YAML>
kind: choose_one
prompt: Which title should the summary use?
options:
  - label: The plain one
    value: TITLE-A
  - label: The bold one
    value: TITLE-B-7
</ASK_USER_YAML>"""
DONE = {"title": "TITLE-B-7", "text": "hello"}
FINISH = {
    "command": "echo writing the result",
    "final_text": json.dumps({"__SKILL_DONE__": True, **DONE}),
}
ASKS_THEN_FINISHES = Script(
    command="echo drafting titles",
    final_text=QUESTION,
    when=({"contains": REPLIED, **FINISH}, {"contains": NOBODY, **FINISH}),
)


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    root = tmp_path_factory.mktemp("interactive")
    script_file = root / "llm-script.json"
    script_file.write_text(json.dumps(asdict(ASKS_THEN_FINISHES)))
    with FakeLLM(script_file) as llm, broker_settings(root) as settings:
        config_dir = fake_engine_config(root / "engine-config", llm, ENGINES)
        env = {"SKILL_RUNNER_ENGINE_CONFIG_DIR": str(config_dir)}
        worker = WorkerProcess(
            settings, "interactive", settings.data_dir / "worker.log", extra_env=env
        )
        app = create_app({"SETTINGS": settings, "QUEUE": CeleryQueue(settings.broker_url)})
        state = {
            "client": app.test_client(),
            "script": script_file,
            "settings": settings,
            "llm": llm,
            "worker": worker,
            "env": env,
        }
        try:
            yield state
        finally:
            state["worker"].stop()


def start(service, engine="codex", script=ASKS_THEN_FINISHES, skill_id="pick-title", **options):
    require_binary(get_adapter(engine))
    service["script"].write_text(json.dumps(asdict(script)))
    response = service["client"].post(
        "/v1/jobs",
        json={
            "skill_id": skill_id,
            "engine": engine,
            "input": {"text": "hello"},
            "runtime_options": {"execution_mode": "interactive", **options},
        },
    )
    assert response.status_code == 200, response.json
    return response.json["request_id"]


def wait(service, rid, until=WAITING, timeout=120):
    try:
        return wait_for_job(service["client"], rid, timeout, until, interval=0.1)
    except AssertionError as exc:
        logs = service["client"].get(f"/v1/jobs/{rid}/logs").json
        raise AssertionError(f"{exc}: {logs}") from None


def reply(service, rid, interaction_id, response, **extra):
    return service["client"].post(
        f"/v1/jobs/{rid}/interaction/reply",
        json={"interaction_id": interaction_id, "response": response, **extra},
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_a_question_a_reply_and_a_resumed_turn_that_finishes(service, engine):
    sent_before = service["llm"].usage_total()
    rid = start(service, engine)
    status = wait(service, rid)
    assert status["status"] == "waiting_user", status
    assert status["interaction_count"] == 1 and status["pending_interaction_id"] is not None
    pending = service["client"].get(f"/v1/jobs/{rid}/interaction/pending").json
    question = pending["pending"]
    assert question["kind"] == "choose_one"
    assert question["prompt"] == "Which title should the summary use?"
    assert [o["value"] for o in question["options"]] == ["TITLE-A", "TITLE-B-7"]
    assert question["interaction_id"] == status["pending_interaction_id"]

    answered = reply(service, rid, question["interaction_id"], "TITLE-B-7")
    assert answered.status_code == 200, answered.json
    assert answered.json["accepted"] is True

    status = wait(service, rid, TERMINAL_STATUSES)
    assert status["status"] == "succeeded", status
    assert status["pending_interaction_id"] is None and status["interaction_count"] == 1
    codes = [w["code"] for w in status["warnings"]]
    assert "INTERACTIVE_COMPLETED_WITHOUT_DONE_MARKER" not in codes
    result = service["client"].get(f"/v1/jobs/{rid}/result").json["result"]
    assert result["data"] == DONE  # the marker key is not part of the output
    # the second turn resumed the session: its requests resend turn 1 and carry the reply
    resumed = [r.raw for r in service["llm"].requests if REPLIED in r.raw and rid_prompt(r.raw)]
    assert resumed, "no model request carried the reply"
    assert all(
        "TITLE-B-7" in raw and "Which title should the summary use" in raw for raw in resumed
    )
    assert any("drafting titles" in raw for raw in resumed)  # turn 1's tool call is in history
    # both turns are in the run's one stdout log, and the session handle was kept
    run_dir = service["settings"].runs_dir / status["run_id"]
    prompt_log = (run_dir / "logs" / "prompt.txt").read_text()
    assert "Interactive protocol" in prompt_log and "--- turn 2 ---" in prompt_log
    # the run's tokens are both turns' answers, each counted once (not the session's running
    # total again at the resumed turn)
    sent = {k: v - sent_before.get(k, 0) for k, v in service["llm"].usage_total().items()}
    assert counted_as_sent(status["token_usage"], sent), (status["token_usage"], sent)


def rid_prompt(raw: str) -> bool:
    return "pick-title" in raw or "Which title" in raw


def test_a_valid_output_without_the_marker_completes_with_a_warning(service):
    soft = Script(command="echo done", final_text=json.dumps(DONE))
    status = wait(service, start(service, script=soft), TERMINAL_STATUSES)
    assert status["status"] == "succeeded", status
    assert "INTERACTIVE_COMPLETED_WITHOUT_DONE_MARKER" in [w["code"] for w in status["warnings"]]
    assert status["interaction_count"] == 0


def test_a_run_that_keeps_asking_fails_at_max_attempt(service):
    always_asks = Script(command="echo hmm", final_text="Which one do you mean?")
    rid = start(service, script=always_asks)
    for _turn in (1, 2):
        status = wait(service, rid)
        assert status["status"] == "waiting_user", status
        pending = service["client"].get(f"/v1/jobs/{rid}/interaction/pending").json["pending"]
        assert pending["kind"] == "open_text" and pending["prompt"] == "Which one do you mean?"
        assert reply(service, rid, pending["interaction_id"], "the first").status_code == 200
    status = wait(service, rid, TERMINAL_STATUSES)  # turn 3 = the skill's max_attempt
    assert status["status"] == "failed"
    assert status["error"]["code"] == "INTERACTIVE_MAX_ATTEMPT_EXCEEDED"
    assert status["interaction_count"] == 2


@pytest.mark.parametrize("timeout_sec", [1, 0])  # 0: at once (the Zotero plugin may send it)
def test_auto_reply_decides_after_the_timeout(service, timeout_sec):
    rid = start(service, interactive_auto_reply=True, interactive_reply_timeout_sec=timeout_sec)
    status = wait(service, rid, TERMINAL_STATUSES)
    assert status["status"] == "succeeded", status
    assert status["auto_decision_count"] == 1 and status["last_auto_decision_at"]
    assert any(NOBODY in r.raw for r in service["llm"].requests)


def test_without_auto_reply_a_run_waits_and_cancel_ends_it_at_once(service):
    rid = start(service, interactive_reply_timeout_sec=1)
    assert wait(service, rid)["status"] == "waiting_user"
    canceled = service["client"].post(f"/v1/jobs/{rid}/cancel").json
    assert canceled["accepted"] is True and canceled["status"] == "canceled"
    status = service["client"].get(f"/v1/jobs/{rid}").json
    assert (
        status["error"]["code"] == "CANCELED_BY_USER" and status["pending_interaction_id"] is None
    )
    body = service["client"].get(f"/v1/jobs/{rid}/interaction/pending").json
    assert body == {"request_id": rid, "status": "canceled", "pending": None}
    late = reply(service, rid, 1, "TITLE-A")
    assert late.status_code == 409 and late.json["error"]["code"] == "RUN_NOT_WAITING"


def test_stale_invalid_duplicate_and_racing_replies(service):
    rid = start(service)
    status = wait(service, rid)
    iid = status["pending_interaction_id"]
    stale = reply(service, rid, iid + 1000, "TITLE-A")
    assert stale.status_code == 409 and stale.json["error"]["code"] == "INTERACTION_STALE"
    invalid = reply(service, rid, iid, "TITLE-C")
    assert invalid.status_code == 400
    assert invalid.json["error"]["code"] == "INTERACTION_REPLY_INVALID"
    # two replies race for the one question: exactly one is accepted
    answers: dict[str, object] = {}

    def send(key: str) -> None:
        answers[key] = reply(service, rid, iid, "TITLE-B-7", idempotency_key=key)

    racers = [threading.Thread(target=send, args=(key,)) for key in ("first", "second")]
    for t in racers:
        t.start()
    for t in racers:
        t.join()
    codes = {key: a.status_code for key, a in answers.items()}
    assert sorted(codes.values()) == [200, 409], {k: a.json for k, a in answers.items()}
    winner = next(key for key, code in codes.items() if code == 200)
    loser = next(key for key, code in codes.items() if code == 409)
    status = wait(service, rid, TERMINAL_STATUSES)
    assert status["status"] == "succeeded"
    # the winner's key repeated answers the same and starts no second turn; the loser's is 409
    again = reply(service, rid, iid, "TITLE-B-7", idempotency_key=winner)
    assert again.status_code == 200 and again.json["accepted"] is True
    assert reply(service, rid, iid, "TITLE-B-7", idempotency_key=loser).status_code == 409
    assert service["client"].get(f"/v1/jobs/{rid}").json["attempt"] == status["attempt"] == 2


def test_pending_and_reply_refuse_a_run_in_auto_mode(service):
    rid = (
        service["client"]
        .post(
            "/v1/jobs",
            json={"skill_id": "pick-title", "engine": "codex", "input": {"text": "x"}},
        )
        .json["request_id"]
    )
    for response in (
        service["client"].get(f"/v1/jobs/{rid}/interaction/pending"),
        reply(service, rid, 1, "TITLE-A"),
    ):
        assert response.status_code == 400
        assert response.json["error"]["code"] == "RUN_NOT_INTERACTIVE"
    wait(service, rid, TERMINAL_STATUSES)


def test_a_waiting_run_survives_a_worker_restart_and_can_be_replied_to(service):
    rid = start(service)
    status = wait(service, rid)
    assert status["status"] == "waiting_user"
    service["worker"].stop()
    service["worker"] = WorkerProcess(
        service["settings"],
        "interactive-2",
        service["settings"].data_dir / "worker-2.log",
        extra_env=service["env"],
    )
    status = wait_until_recovered(service, rid)
    assert status["status"] == "waiting_user" and status["recovered_at"]
    assert reply(service, rid, status["pending_interaction_id"], "TITLE-B-7").status_code == 200
    assert wait(service, rid, TERMINAL_STATUSES)["status"] == "succeeded"


def wait_until_recovered(service, rid):
    from tests.helpers import wait_for

    def recovered():
        body = service["client"].get(f"/v1/jobs/{rid}").json
        return body if body["recovery_state"] == "recovered_waiting" else None

    return wait_for(recovered, 60, 0.2)


def test_a_resumed_turn_whose_session_is_gone_fails_session_resume_failed(service):
    rid = start(service)
    status = wait(service, rid)
    engine = make_engine(service["settings"].database_url)
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "UPDATE runs SET session_handle = '0199a213-81c0-7800-8aa1-bbab2a035a53' WHERE id = ?"
            if engine.dialect.name == "sqlite"
            else "UPDATE runs SET session_handle = '0199a213-81c0-7800-8aa1-bbab2a035a53' WHERE id = %s",
            (status["run_id"],),
        )
    engine.dispose()
    assert reply(service, rid, status["pending_interaction_id"], "TITLE-A").status_code == 200
    status = wait(service, rid, TERMINAL_STATUSES)
    assert status["status"] == "failed"
    assert status["error"]["code"] == "SESSION_RESUME_FAILED"
    assert "no rollout found" in status["error"]["message"]  # codex's own words


def test_twenty_waiting_runs_hold_no_slot_while_an_auto_run_completes(service):
    waiting = [start(service) for _ in range(20)]
    for rid in waiting:
        assert wait(service, rid)["status"] == "waiting_user"
    service["script"].write_text(
        json.dumps(asdict(Script(command="echo ok", final_text=json.dumps(DONE))))
    )
    auto = (
        service["client"]
        .post(
            "/v1/jobs",
            json={
                "skill_id": "pick-title",
                "engine": "codex",
                "input": {"text": "hello"},
                "runtime_options": {"no_cache": True},
            },
        )
        .json["request_id"]
    )
    assert wait(service, auto, TERMINAL_STATUSES, timeout=60)["status"] == "succeeded"
    for rid in waiting:  # still waiting: nothing timed out or was dropped
        assert service["client"].get(f"/v1/jobs/{rid}").json["status"] == "waiting_user"
        service["client"].post(f"/v1/jobs/{rid}/cancel")


def sse_frames(client, url, headers=None):
    """The frames of an SSE response as (event, id, data) until the server closes it."""
    response = client.get(url, headers=headers or {}, buffered=False)
    assert response.status_code == 200 and response.mimetype == "text/event-stream"
    text = ""
    for chunk in response.response:
        text += chunk.decode() if isinstance(chunk, bytes) else chunk
    frames = []
    for block in text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        frames.append((fields["event"], fields.get("id"), json.loads(fields["data"])))
    return frames


def test_the_event_stream_tells_the_whole_conversation(service):
    client = service["client"]
    rid = start(service)
    seen: dict = {}
    reader = threading.Thread(
        target=lambda: seen.update(frames=sse_frames(client, f"/v1/jobs/{rid}/events"))
    )
    reader.start()  # subscribed from the start: live events, not a replay
    status = wait(service, rid)
    asked_id = status["pending_interaction_id"]
    reply(service, rid, asked_id, "TITLE-B-7")
    status = wait(service, rid, TERMINAL_STATUSES)
    reader.join(timeout=60)
    assert not reader.is_alive(), "the stream did not close after the terminal event"
    frames = seen["frames"]
    assert frames[0][0] == "snapshot" and frames[0][2]["status"] in ("queued", "running")
    streamed = [data for kind, _id, data in frames if kind == "chat_event"]
    history = client.get(f"/v1/jobs/{rid}/events/history").json["events"]
    assert streamed == history  # nothing lost, nothing repeated
    assert [e["seq"] for e in history] == list(range(1, len(history) + 1))
    assert {e["protocol_version"] for e in history} == {"fcmp/1.0"}
    assert {e["run_id"] for e in history} == {status["run_id"]}
    types = [e["type"] for e in history]
    changes = [
        (e["data"]["from"], e["data"]["to"]) for e in history if e["type"].endswith("changed")
    ]
    assert changes == [
        ("queued", "running"),
        ("running", "waiting_user"),
        ("waiting_user", "queued"),
        ("queued", "running"),
        ("running", "succeeded"),
    ]
    assert history[-1]["data"]["terminal"] == {"status": "succeeded", "error": None}
    for wanted in (
        "user.input.required",
        "interaction.reply.accepted",
        "tool.call",
        "tool.result",
        "assistant.message.final",
        "raw.stdout",
    ):
        assert wanted in types, wanted
    asked = next(e for e in history if e["type"] == "user.input.required")
    assert asked["data"]["interaction_id"] == asked_id and asked["data"]["kind"] == "choose_one"
    # a raw chunk points at its bytes in logs/range
    raw = next(e for e in history if e["type"] == "raw.stdout")["data"]
    ref = raw["raw_ref"]
    ranged = client.get(
        f"/v1/jobs/{rid}/logs/range",
        query_string={"stream": "stdout", "byte_from": ref["byte_from"], "byte_to": ref["byte_to"]},
    ).json
    assert ranged["text"].startswith(raw["text"][:100])
    # resuming mid-way: after seq 3 comes exactly the rest (cursor or Last-Event-ID)
    for url, headers in (
        (f"/v1/jobs/{rid}/events?cursor=3", None),
        (f"/v1/jobs/{rid}/events", {"Last-Event-ID": "3"}),
    ):
        rest = [d for kind, _i, d in sse_frames(client, url, headers) if kind == "chat_event"]
        assert rest == history[3:]
    window = client.get(f"/v1/jobs/{rid}/events/history?from_seq=2&to_seq=4").json["events"]
    assert [e["seq"] for e in window] == [2, 3, 4]


def test_each_turn_of_the_cli_gets_the_requests_variables(service):
    """runtime_options.env reaches the engine CLI of the first turn and of the resumed one
    (their shell tools write what they see), and the token is masked in the run's logs."""
    token = "bridge-token-4c6e8a0b2d"
    seen = 'printf "%s %s" "$ZOTERO_BRIDGE_SCOPE" "$ZOTERO_BRIDGE_TOKEN"'
    finish = {**FINISH, "command": f"{seen} > turn2.txt; echo $ZOTERO_BRIDGE_TOKEN"}
    script = Script(
        command=f"{seen} > turn1.txt",
        final_text=QUESTION,
        when=({"contains": REPLIED, **finish},),
    )
    env = {"ZOTERO_BRIDGE_SCOPE": "scope-1", "ZOTERO_BRIDGE_TOKEN": token}
    rid = start(service, script=script, env=env)
    status = wait(service, rid)
    assert status["status"] == "waiting_user", status
    answered = reply(service, rid, status["pending_interaction_id"], "TITLE-B-7")
    assert answered.status_code == 200, answered.json
    status = wait(service, rid, TERMINAL_STATUSES)
    assert status["status"] == "succeeded", status
    run_dir = service["settings"].runs_dir / status["run_id"]
    for turn in ("turn1.txt", "turn2.txt"):
        assert (run_dir / turn).read_text() == f"scope-1 {token}"
    logs = service["client"].get(f"/v1/jobs/{rid}/logs").get_data(as_text=True)
    assert token not in logs and "*" * len(token) in logs  # the echo is there, masked
