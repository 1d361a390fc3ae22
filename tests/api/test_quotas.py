"""Per-token quotas (a tokens-file entry's `quota`): a job by a token whose runs of the window
spent it is 429 QUOTA_EXCEEDED with the numbers; other tokens and later windows go on."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from datetime import timedelta

import pytest

from api import create_app
from runner_core.api_tokens import TokenFileError, parse_entries
from runner_core.store.models import Request, Run, utcnow
from tests.helpers import TOKENS, bearer, write_tokens_file

QUOTA = {"max_tokens": 10_000, "window_sec": 3600}


@pytest.fixture
def quoted(settings, queue, tmp_path):
    path = write_tokens_file(tmp_path / "tokens.jsonl", TOKENS)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for line in lines:
        if line["name"] == "alice":
            line["quota"] = QUOTA
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    app = create_app({"SETTINGS": dataclasses.replace(settings, tokens_file=path), "QUEUE": queue})
    return app


def job(client, who, text="hello"):
    return client.post(
        "/v1/jobs",
        headers=bearer(who),
        json={
            "skill_id": "echo-prompt",
            "engine": "codex",
            "input": {"text": text},
            "runtime_options": {"no_cache": True},
        },
    )


def spend(app, request_id, tokens, age_sec=0):
    with app.extensions["db"]() as session:
        run = session.get(Run, session.get(Request, request_id).run_id)
        run.token_usage = {"input_tokens": tokens - 100, "output_tokens": 100}
        run.created_at = utcnow() - timedelta(seconds=age_sec)
        session.commit()


def test_a_token_past_its_quota_gets_429_with_the_numbers(quoted, queue):
    client = quoted.test_client()
    first = job(client, "alice")
    assert first.status_code == 200, first.json
    spend(quoted, first.json["request_id"], 6_000)
    second = job(client, "alice", "again")
    assert second.status_code == 200  # 6,000 of 10,000
    spend(quoted, second.json["request_id"], 4_000)
    refused = job(client, "alice", "once more")
    assert refused.status_code == 429, refused.json
    error = refused.json["error"]
    assert error["code"] == "QUOTA_EXCEEDED"
    assert error["details"] == {
        "quota": QUOTA,
        "spent": {"tokens": 10_000, "usd": 0.0},
        "token_name": "alice",
    }
    assert 1 <= int(refused.headers["Retry-After"]) <= 3601
    assert len(queue.sent) == 2  # nothing queued for the refused one
    # another name has its own account (bob has no quota)
    assert job(client, "bob").status_code == 200


def test_spending_older_than_the_window_no_longer_counts(quoted):
    client = quoted.test_client()
    old = job(client, "alice")
    spend(quoted, old.json["request_id"], 50_000, age_sec=3601)
    assert job(client, "alice", "new").status_code == 200


@pytest.mark.parametrize(
    "quota",
    [{"max_tokens": 0}, {"window_sec": 3600}, {"max_usd": 1, "window_sec": 5}, {"tokens": 1}, 3],
    ids=["zero", "no-limit", "tiny-window", "unknown-key", "not-an-object"],
)
def test_a_malformed_quota_is_a_bad_tokens_file_line(quota):
    digest = hashlib.sha256(b"x" * 20).hexdigest()
    line = json.dumps({"name": "ci", "sha256": digest, "scopes": ["read"], "quota": quota})
    with pytest.raises(TokenFileError, match="line 1: quota"):
        parse_entries(line)
