"""The optional API token (SKILL_RUNNER_API_TOKEN)."""

from __future__ import annotations

import dataclasses
import logging

import pytest

from api import create_app
from api.auth import presented_token

TOKEN, OLD_TOKEN = "t0k3n-for-the-tests-0123456789", "an-older-token-still-accepted"


@pytest.fixture
def guarded(settings, queue):
    with_tokens = dataclasses.replace(settings, api_tokens=(TOKEN, OLD_TOKEN))
    return create_app({"SETTINGS": with_tokens, "QUEUE": queue, "TESTING": True}).test_client()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_without_a_configured_token_nothing_is_asked(client) -> None:
    assert client.get("/v1/skills").status_code == 200
    assert "securitySchemes" not in client.get("/openapi.json").json.get("components", {})


@pytest.mark.parametrize(
    "headers, message",
    [
        ({}, "needs an API token"),
        ({"Authorization": "Basic dXNlcjpwYXNz"}, "not valid"),  # user:pass, pass no token
        ({"Authorization": "Basic dXNlcjo="}, "needs an API token"),  # user: (no password)
        ({"Authorization": "Basic not-base64!"}, "needs an API token"),
        ({"Authorization": "Bearer "}, "needs an API token"),
        (bearer("wrong-token-0123456789"), "not valid"),
        (bearer(TOKEN + "x"), "not valid"),
    ],
)
def test_requests_without_an_accepted_token_get_401_in_the_error_body(
    guarded, queue, headers, message
) -> None:
    resp = guarded.post(
        "/v1/jobs", json={"skill_id": "fenced-json", "input": {"text": "hi"}}, headers=headers
    )
    assert resp.status_code == 401
    error = resp.json["error"]
    assert error["code"] == "UNAUTHORIZED" and message in error["message"]
    assert error["request_id"] == resp.headers["X-Request-ID"]
    assert resp.headers["WWW-Authenticate"].startswith("Bearer")
    assert queue.sent == []  # refused before anything was stored or sent


def test_every_accepted_token_works_and_the_scheme_is_case_insensitive(guarded, queue) -> None:
    for headers in (bearer(TOKEN), bearer(OLD_TOKEN), {"Authorization": f"bearer {TOKEN}"}):
        resp = guarded.post(
            "/v1/jobs", json={"skill_id": "fenced-json", "input": {"text": "hi"}}, headers=headers
        )
        assert resp.status_code == 200, resp.json
    assert len(queue.sent) == 3
    assert guarded.get("/v1/jobs", headers=bearer(TOKEN)).status_code == 200
    assert guarded.get("/v1/jobs").status_code == 401


def test_health_and_docs_stay_open_and_the_openapi_document_names_the_scheme(guarded) -> None:
    assert guarded.get("/healthz").status_code == 200
    assert guarded.get("/docs").status_code == 200
    spec = guarded.get("/openapi.json").json
    assert spec["components"]["securitySchemes"]["bearerAuth"] == {
        "type": "http",
        "scheme": "bearer",
    }
    assert spec["security"] == [{"bearerAuth": []}]
    # an unknown path is refused like a known one: the token check comes before routing
    assert guarded.get("/v1/nothing-here").status_code == 401


def test_the_token_is_not_logged(guarded, caplog) -> None:
    with caplog.at_level(logging.DEBUG):
        guarded.get("/v1/skills", headers=bearer(TOKEN))
        guarded.get("/v1/skills", headers=bearer("wrong-token-0123456789"))
    assert TOKEN not in caplog.text and "wrong-token" not in caplog.text


def test_token_helpers() -> None:
    assert presented_token("Bearer abc") == "abc"
    assert presented_token("  BEARER   abc  ") == "abc"
    assert presented_token("Token abc") is None and presented_token("") is None


@pytest.fixture
def browser_client(settings, queue):
    configured = dataclasses.replace(
        settings, api_tokens=(TOKEN,), cors_origins=("https://app.example.org",)
    )
    return create_app({"SETTINGS": configured, "QUEUE": queue, "TESTING": True}).test_client()


def test_a_preflight_from_an_allowed_origin_needs_no_token(browser_client) -> None:
    resp = browser_client.options(
        "/v1/jobs",
        headers={
            "Origin": "https://app.example.org",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type",
        },
    )
    assert resp.status_code == 200
    assert resp.headers["Access-Control-Allow-Origin"] == "https://app.example.org"
    assert "authorization" in resp.headers["Access-Control-Allow-Headers"].lower()
    assert "POST" in resp.headers["Access-Control-Allow-Methods"]


def test_answers_and_errors_carry_cors_headers_for_allowed_origins_only(browser_client) -> None:
    origin = {"Origin": "https://app.example.org"}
    ok = browser_client.get("/v1/skills", headers={**origin, **bearer(TOKEN)})
    assert ok.status_code == 200
    assert ok.headers["Access-Control-Allow-Origin"] == "https://app.example.org"
    assert "X-Request-ID" in ok.headers["Access-Control-Expose-Headers"]
    refused = browser_client.get("/v1/skills", headers=origin)  # no token: the page can read why
    assert refused.status_code == 401
    assert refused.headers["Access-Control-Allow-Origin"] == "https://app.example.org"
    other = browser_client.get(
        "/v1/skills", headers={"Origin": "https://evil.example.com", **bearer(TOKEN)}
    )
    assert "Access-Control-Allow-Origin" not in other.headers


def test_no_cors_headers_unless_configured(client) -> None:
    resp = client.get("/v1/skills", headers={"Origin": "https://app.example.org"})
    assert "Access-Control-Allow-Origin" not in resp.headers
