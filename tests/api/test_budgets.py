"""runtime_options.budget at the API: checked when the job is created, and a run that reached
its budget between turns takes a reply only with a larger one (the stop mid-turn is in
tests/engines/test_budgets.py)."""

from __future__ import annotations

import pytest

from runner_core.interaction import Pending
from runner_core.store import interactions
from runner_core.store.models import Request, Run


def create(client, engine="codex", **options):
    return client.post(
        "/v1/jobs",
        json={
            "skill_id": "pick-title",
            "engine": engine,
            "input": {"text": "hello"},
            "runtime_options": {"execution_mode": "interactive", **options},
        },
    )


MALFORMED = pytest.mark.parametrize(
    "budget",
    [{}, {"max_tokens": 0}, {"max_usd": -1}, {"max_tokens": "many"}, {"tokens": 5}, 7],
    ids=["empty", "zero-tokens", "negative-usd", "tokens-text", "unknown-key", "not-an-object"],
)


@MALFORMED
def test_a_malformed_budget_is_a_400_naming_it(client, queue, budget):
    resp = create(client, budget=budget)
    assert resp.status_code == 400, resp.json
    assert resp.json["error"]["code"] == "SCHEMA_VALIDATION_FAILED"
    assert "runtime_options.budget" in resp.json["error"]["message"]
    assert queue.sent == []


def test_a_usd_budget_for_an_engine_that_prices_nothing_is_refused(client, queue):
    resp = create(client, "codex", budget={"max_usd": 0.5})
    assert resp.status_code == 400, resp.json
    assert resp.json["error"]["code"] == "BUDGET_UNENFORCEABLE"
    assert "SKILL_RUNNER_PRICES_FILE" in resp.json["error"]["message"]
    assert queue.sent == []
    # tokens hold for every engine; claude prices its runs itself
    assert create(client, "codex", budget={"max_tokens": 10_000}).status_code == 200
    assert create(client, "claude", budget={"max_usd": 0.5}).status_code == 200


def test_a_usd_budget_holds_where_the_price_table_names_the_engine(app, client, queue, tmp_path):
    import dataclasses

    prices = tmp_path / "prices.yaml"
    prices.write_text("codex: {input: 1.0, output: 4.0}\n")
    settings = app.config["SETTINGS"]
    app.config["SETTINGS"] = dataclasses.replace(settings, prices_file=prices)
    try:
        assert create(client, "codex", budget={"max_usd": 0.5}).status_code == 200
    finally:
        app.config["SETTINGS"] = settings


def waiting_over_budget(client, app, spent: int, budget: int) -> tuple[str, int]:
    """An interactive run whose first turn asked, having spent `spent` tokens."""
    rid = create(client, budget={"max_tokens": budget}).json["request_id"]
    with app.extensions["db"]() as session:
        run = session.get(Run, session.get(Request, rid).run_id)
        run.status = "running"
        session.commit()
        question = Pending("open_text", "Which one?", [])
        usage = {"input_tokens": spent - 10, "output_tokens": 10}
        finish = {"session_handle": "thread-1", "token_usage": usage}
        iid = interactions.ask(session, run.id, 1, question, finish)
    assert iid is not None
    return rid, iid


def reply(client, rid, iid, **extra):
    return client.post(
        f"/v1/jobs/{rid}/interaction/reply",
        json={"interaction_id": iid, "response": "the bold one", **extra},
    )


def test_a_run_that_reached_its_budget_waits_for_a_reply_raising_it(client, app, queue):
    rid, iid = waiting_over_budget(client, app, spent=5_000, budget=4_000)
    queue.sent.clear()
    refused = reply(client, rid, iid)
    assert refused.status_code == 409, refused.json
    error = refused.json["error"]
    assert error["code"] == "BUDGET_EXCEEDED"
    assert error["details"] == {
        "budget": {"max_tokens": 4_000},
        "spent": {"tokens": 5_000, "usd": 0.0},
    }
    assert "5,000 tokens of 4,000" in error["message"] and "larger `budget`" in error["message"]
    # a raise it has already spent is refused too
    assert reply(client, rid, iid, budget={"max_tokens": 5_000}).status_code == 409
    assert reply(client, rid, iid, budget={"max_tokens": -1}).status_code == 400
    assert queue.sent == [] and client.get(f"/v1/jobs/{rid}").json["status"] == "waiting_user"
    # a larger one: the next turn is queued, and keeps it
    accepted = reply(client, rid, iid, budget={"max_tokens": 20_000})
    assert accepted.status_code == 200, accepted.json
    assert len(queue.sent) == 1
    with app.extensions["db"]() as session:
        run = session.get(Run, session.get(Request, rid).run_id)
        assert run.runtime_options["budget"] == {"max_tokens": 20_000}
        assert run.runtime_options["execution_mode"] == "interactive"


def test_a_run_within_its_budget_takes_a_reply_as_before(client, app, queue):
    rid, iid = waiting_over_budget(client, app, spent=1_000, budget=4_000)
    queue.sent.clear()
    assert reply(client, rid, iid).status_code == 200
    assert len(queue.sent) == 1


@MALFORMED
def test_a_malformed_budget_in_a_reply_is_refused_as_in_the_job(client, app, queue, budget):
    rid, iid = waiting_over_budget(client, app, spent=5_000, budget=4_000)
    queue.sent.clear()
    refused = reply(client, rid, iid, budget=budget)
    assert refused.status_code == 400, refused.json
    error = refused.json["error"]
    created = create(client, budget=budget).json["error"]
    assert error["code"] == created["code"] == "SCHEMA_VALIDATION_FAILED"
    assert error["message"] == created["message"]
    assert error["details"] == created["details"]
    assert error["details"]["schema"] == "runtime_options" and error["details"]["errors"]
    assert error["request_id"] == rid
    assert queue.sent == [] and client.get(f"/v1/jobs/{rid}").json["status"] == "waiting_user"
