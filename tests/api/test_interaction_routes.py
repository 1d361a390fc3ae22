"""pending/reply on SQLite and Postgres: the guarded transitions that make a reply start exactly
one next turn (the worker side is in tests/engines/test_interactive_jobs.py)."""

from __future__ import annotations

import shutil
import threading

from runner_core.engines import engine_skill_dirs
from runner_core.events import EventLog, RunRef, is_terminal
from runner_core.interaction import REPLY_MAX_CHARS, Pending
from runner_core.store import cancels, interactions
from runner_core.store.models import Request, Run
from tests.helpers import BOTH_DATABASES


def waiting_job(client, app, queue, kind="choose_one"):
    """An interactive job whose first turn asked (as the worker records it)."""
    rid = client.post(
        "/v1/jobs",
        json={
            "skill_id": "pick-title",
            "engine": "codex",
            "input": {"text": "hello"},
            "runtime_options": {"execution_mode": "interactive"},
        },
    ).json["request_id"]
    with app.extensions["db"]() as session:
        run_id = session.get(Request, rid).run_id
        session.get(Run, run_id).status = "running"
        session.commit()
        options = [{"label": "A", "value": "a"}, {"label": "B", "value": "b"}]
        question = Pending(kind, "Which one?", options if kind == "choose_one" else [])
        finish = {"session_handle": "thread-1"}
        interaction_id = interactions.ask(session, run_id, 1, question, finish)
    assert interaction_id is not None
    queue.sent.clear()
    return rid, run_id, interaction_id


def reply(client, rid, interaction_id, response, **extra):
    return client.post(
        f"/v1/jobs/{rid}/interaction/reply",
        json={"interaction_id": interaction_id, "response": response, **extra},
    )


@BOTH_DATABASES
def test_racing_replies_start_exactly_one_turn(client, app, queue):
    rid, run_id, iid = waiting_job(client, app, queue)
    status = client.get(f"/v1/jobs/{rid}").json
    assert status["status"] == "waiting_user" and status["pending_interaction_id"] == iid
    answers: list = []
    barrier = threading.Barrier(8)

    def send(n: int) -> None:
        barrier.wait()
        answers.append(reply(client, rid, iid, "b", idempotency_key=f"k{n}").status_code)

    threads = [threading.Thread(target=send, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(answers) == [200] + [409] * 7
    assert queue.sent == [(run_id, "runs.codex")]  # one next turn
    status = client.get(f"/v1/jobs/{rid}").json
    assert status["status"] == "queued" and status["pending_interaction_id"] is None
    with app.extensions["db"]() as session:
        (asked,) = interactions.history(session, run_id)
    assert asked.state == "answered" and asked.response == "b" and asked.answered_at


@BOTH_DATABASES
def test_a_repeated_idempotency_key_answers_the_same_and_sends_nothing(client, app, queue):
    rid, _run_id, iid = waiting_job(client, app, queue)
    first = reply(client, rid, iid, "a", idempotency_key="once")
    second = reply(client, rid, iid, "a", idempotency_key="once")
    assert first.status_code == second.status_code == 200
    assert first.json == second.json == {"request_id": rid, "status": "queued", "accepted": True}
    assert len(queue.sent) == 1
    other = reply(client, rid, iid, "a", idempotency_key="another")
    assert other.status_code == 409 and other.json["error"]["code"] == "RUN_NOT_WAITING"


@BOTH_DATABASES
def test_a_repeated_key_gets_the_first_answer_and_another_reply_with_it_is_409(client, app, queue):
    rid, run_id, iid = waiting_job(client, app, queue)
    first = reply(client, rid, iid, "b", idempotency_key="k1")
    assert first.json == {"request_id": rid, "status": "queued", "accepted": True}
    with app.extensions["db"]() as session:  # the run went on and ended meanwhile
        session.get(Run, run_id).status = "succeeded"
        session.commit()
    again = reply(client, rid, iid, "b", idempotency_key="k1")
    assert again.status_code == 200 and again.json == first.json
    other = reply(client, rid, iid, "a", idempotency_key="k1")
    assert other.status_code == 409, other.json
    error = other.json["error"]
    assert error["code"] == "IDEMPOTENCY_KEY_REUSED" and error["request_id"] == rid
    assert error["details"] == {"idempotency_key": "k1", "interaction_id": iid}
    budget = reply(client, rid, iid, "b", idempotency_key="k1", budget={"max_tokens": 9})
    assert budget.status_code == 409
    assert len(queue.sent) == 1
    with app.extensions["db"]() as session:
        (asked,) = interactions.history(session, run_id)
    assert asked.response == "b" and asked.reply_answer == first.json  # kept in the database


def test_pending_shows_the_question_until_it_is_answered(client, app, queue):
    rid, _run_id, iid = waiting_job(client, app, queue)
    body = client.get(f"/v1/jobs/{rid}/interaction/pending").json
    assert body["status"] == "waiting_user"
    assert body["pending"] == {
        "interaction_id": iid,
        "kind": "choose_one",
        "prompt": "Which one?",
        "options": [{"label": "A", "value": "a"}, {"label": "B", "value": "b"}],
        # also where Skill-Runner's clients read them
        "ui_hints": {"options": [{"label": "A", "value": "a"}, {"label": "B", "value": "b"}]},
        "default_decision_policy": "engine_judgement",
        "required_fields": [],
        "context": {},
    }
    assert reply(client, rid, iid, "a").status_code == 200
    body = client.get(f"/v1/jobs/{rid}/interaction/pending").json
    assert body == {"request_id": rid, "status": "queued", "pending": None}


def test_replies_that_do_not_answer_the_question_are_400(client, app, queue):
    rid, _run_id, iid = waiting_job(client, app, queue)
    for response in ("c", None, 1):
        bad = reply(client, rid, iid, response)
        assert bad.status_code == 400, response
        assert bad.json["error"]["code"] == "INTERACTION_REPLY_INVALID"
        assert bad.json["error"]["request_id"] == rid
    missing = client.post(f"/v1/jobs/{rid}/interaction/reply", json={"response": "a"})
    assert missing.status_code == 422
    assert queue.sent == []


def test_a_blank_answer_is_400_as_an_empty_one(client, app, queue):
    """`""` was refused as no answer, but `"  "` was sent to the agent as one."""
    rid, _run_id, iid = waiting_job(client, app, queue, kind="open_text")
    for response in ("", " \t\n "):
        bad = reply(client, rid, iid, response)
        assert bad.status_code == 400, (response, bad.json)
        assert bad.json["error"]["code"] == "INTERACTION_REPLY_INVALID"
        assert "empty" in bad.json["error"]["message"]
    assert queue.sent == []
    assert reply(client, rid, iid, " a title ").status_code == 200


def test_an_answer_too_long_for_the_agent_is_413_and_the_run_keeps_waiting(client, app, queue):
    """A reply of megabytes was accepted, and the next turn failed the run (codex refuses an
    input over 1 MiB characters): the conversation was lost to one oversized answer."""
    rid, _run_id, iid = waiting_job(client, app, queue, kind="open_text")
    for response in ("x" * (REPLY_MAX_CHARS + 1), {"text": "é" * (REPLY_MAX_CHARS + 1)}):
        big = reply(client, rid, iid, response)
        assert big.status_code == 413, big.json
        error = big.json["error"]
        assert error["code"] == "PAYLOAD_TOO_LARGE" and error["request_id"] == rid
        assert error["details"] == {"chars": REPLY_MAX_CHARS + 1, "max_chars": REPLY_MAX_CHARS}
    assert queue.sent == []
    assert client.get(f"/v1/jobs/{rid}").json["status"] == "waiting_user"
    assert reply(client, rid, iid, "x" * REPLY_MAX_CHARS).status_code == 200


def test_a_cancel_that_ends_the_run_just_after_a_reply_is_its_last_event(
    client, app, queue, monkeypatch
):
    """A cancel landing between the reply's commit and its events (two clients, or a UI's
    buttons) wrote its terminal event first, and the reply's `waiting_user -> queued` came
    after it: the history ended with the canceled run back in the queue."""
    rid, run_id, iid = waiting_job(client, app, queue)
    settings = app.config["SETTINGS"]
    answer = interactions.answer

    def answered_then_canceled(session, *args, **kwargs):
        outcome = answer(session, *args, **kwargs)
        run = session.get(Run, run_id)
        assert cancels.request_cancel(session, run_id)
        assert cancels.cancel_idle(session, run_id, cancels.CANCELED)
        ref = RunRef(run_id, rid, "codex")
        EventLog(settings.runs_dir / run_id, ref).state_changed(
            run.status, "canceled", "cancel", terminal=True
        )
        return outcome

    monkeypatch.setattr(interactions, "answer", answered_then_canceled)
    assert reply(client, rid, iid, "a").status_code == 200
    history = client.get(f"/v1/jobs/{rid}/events/history").json["events"]
    assert is_terminal(history[-1]) and history[-1]["data"]["to"] == "canceled"
    assert client.get(f"/v1/jobs/{rid}").json["status"] == "canceled"


def test_confirm_takes_a_boolean(client, app, queue):
    rid, _run_id, iid = waiting_job(client, app, queue, kind="confirm")
    assert reply(client, rid, iid, "yes").status_code == 400
    assert reply(client, rid, iid, True).status_code == 200


def test_a_reply_refused_for_a_skill_uninstalled_meanwhile_records_nothing(client, app, queue):
    """The reply was recorded (the run queued, the question closed) before the skill was looked
    up to send the turn: the client got 404 SKILL_NOT_FOUND for a reply that had been taken."""
    rid, run_id, iid = waiting_job(client, app, queue)
    assert client.delete("/v1/skills/pick-title").status_code == 200
    refused = reply(client, rid, iid, "a")
    assert refused.status_code == 404 and refused.json["error"]["code"] == "SKILL_NOT_FOUND"
    pending = client.get(f"/v1/jobs/{rid}/interaction/pending").json
    assert pending["status"] == "waiting_user" and pending["pending"]["interaction_id"] == iid
    history = client.get(f"/v1/jobs/{rid}/events/history").json["events"]
    assert not [e for e in history if e["type"] == "interaction.reply.accepted"]
    assert queue.sent == []


def test_a_reply_goes_on_with_the_runs_own_copy_of_a_skill_uninstalled_meanwhile(
    client, app, queue
):
    """A started run keeps its copy of the skill: an uninstall while it waits does not stop
    its next turn, which runs from that copy."""
    rid, run_id, iid = waiting_job(client, app, queue)
    settings = app.config["SETTINGS"]
    copy = settings.runs_dir / run_id / engine_skill_dirs("codex")[0] / "pick-title"
    shutil.copytree(settings.skills_dir / "pick-title", copy)
    assert client.delete("/v1/skills/pick-title").status_code == 200
    accepted = reply(client, rid, iid, "a")
    assert accepted.status_code == 200, accepted.json
    assert accepted.json["status"] == "queued"
    assert [sent[0] for sent in queue.sent] == [run_id]


def test_an_unknown_request_is_404(client):
    missing = client.get("/v1/jobs/nope/interaction/pending")
    assert missing.status_code == 404
    assert missing.json["error"]["code"] == "REQUEST_NOT_FOUND"


@BOTH_DATABASES
def test_the_sweep_finds_questions_past_their_timeout_and_decides_them_once(client, app, queue):
    from datetime import timedelta

    from sqlalchemy import update

    from runner_core.store.models import Interaction, utcnow
    from worker.interactive.waiting import auto_decide

    rid, run_id, iid = waiting_job(client, app, queue)
    other_rid, other_run, other_iid = waiting_job(client, app, queue)
    with app.extensions["db"]() as session:
        options = {
            "execution_mode": "interactive",
            "interactive_auto_reply": True,
            "interactive_reply_timeout_sec": 60,
        }
        session.execute(update(Run).where(Run.id == run_id).values(runtime_options=options))
        old = utcnow() - timedelta(seconds=120)
        session.execute(update(Interaction).values(created_at=old))  # both asked 2 min ago
        session.commit()
        due = interactions.overdue(session, utcnow(), cap_sec=86400)
        assert [row.id for row in due] == [run_id]  # the other one has no auto-reply
        # the server cap shortens timeouts; still only the run with auto-reply is due
        assert [r.id for r in interactions.overdue(session, utcnow(), cap_sec=30)] == [run_id]
        assert auto_decide(session, run_id, iid, 86400, "task-1") == interactions.ACCEPTED
        assert auto_decide(session, run_id, iid, 86400, "task-2") == "not_waiting"
    status = client.get(f"/v1/jobs/{rid}").json
    assert status["status"] == "queued" and status["auto_decision_count"] == 1
    assert status["last_auto_decision_at"]
    with app.extensions["db"]() as session:
        (asked,) = interactions.history(session, run_id)
        assert asked.state == "auto" and asked.response is None
    assert client.get(f"/v1/jobs/{other_rid}").json["status"] == "waiting_user"


@BOTH_DATABASES
def test_a_due_question_is_found_behind_many_older_ones_that_are_not(client, app, queue):
    """The sweep read the oldest 500 waiting runs and kept those due: behind 500 older
    conversations without auto-reply (abandoned chats) or with a longer timeout, a question
    past its timeout (an hour-plus one, or one whose countdown was lost) was never decided."""
    from datetime import timedelta

    from sqlalchemy import update

    from runner_core.store.models import Interaction, utcnow

    def waiting(asked_ago: int, **options) -> str:
        _rid, run_id, iid = waiting_job(client, app, queue)
        with app.extensions["db"]() as session:
            stored = {"execution_mode": "interactive", **options}
            session.execute(update(Run).where(Run.id == run_id).values(runtime_options=stored))
            old = utcnow() - timedelta(seconds=asked_ago)
            session.execute(update(Interaction).where(Interaction.id == iid).values(created_at=old))
            session.commit()
        return run_id

    for _ in range(2):
        waiting(9000)  # no auto-reply
        waiting(8000, interactive_auto_reply=True, interactive_reply_timeout_sec=86400)
    due = waiting(3000, interactive_auto_reply=True, interactive_reply_timeout_sec=600)
    with app.extensions["db"]() as session:
        found = interactions.overdue(session, utcnow(), cap_sec=86400, limit=2)
    assert [row.id for row in found] == [due]


def test_an_early_auto_decision_waits_for_the_timeout(client, app, queue):
    from sqlalchemy import update

    from worker.interactive.waiting import auto_decide

    rid, run_id, iid = waiting_job(client, app, queue)
    with app.extensions["db"]() as session:
        options = {
            "execution_mode": "interactive",
            "interactive_auto_reply": True,
            "interactive_reply_timeout_sec": 600,
        }
        session.execute(update(Run).where(Run.id == run_id).values(runtime_options=options))
        session.commit()
        assert auto_decide(session, run_id, iid, 86400, "t") == "early"
        assert auto_decide(session, run_id, iid, 30, "t") == "early"  # capped to 30 s: still early
    assert client.get(f"/v1/jobs/{rid}").json["status"] == "waiting_user"
