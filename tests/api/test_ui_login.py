"""The UI's login with tokens configured: a pasted token becomes an HttpOnly, SameSite=Strict
session cookie, accepted for the UI and the API calls its pages make; unsafe requests on the
cookie must come from the UI's own origin; logout and a removed token end the session."""

from __future__ import annotations

import os

from tests.helpers import TOKENS, write_tokens_file

ORIGIN = {"Origin": "http://localhost"}
JOB = {"skill_id": "fenced-json", "input": {"text": "hi"}}


def log_in(client, name="alice", **headers):
    return client.post(
        "/ui/login",
        data={"token": TOKENS[name][0], "next": "/ui/runs"},
        headers=headers or ORIGIN,
    )


def test_ui_pages_send_a_visitor_without_a_session_to_the_login(scoped):
    resp = scoped.get("/ui/runs?status=queued")
    assert resp.status_code == 302
    assert resp.headers["Location"] == "/ui/login?next=/ui/runs%3Fstatus%3Dqueued"
    page = scoped.get("/ui/login")
    assert page.status_code == 200 and b'name="token"' in page.data


def test_a_valid_token_sets_a_strict_httponly_cookie_that_works_for_ui_and_api(scoped):
    resp = log_in(scoped)
    assert resp.status_code == 302 and resp.headers["Location"] == "/ui/runs"
    cookie = resp.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
    assert TOKENS["alice"][0] not in cookie  # the cookie holds no token
    page = scoped.get("/ui/runs")
    assert page.status_code == 200 and b"alice" in page.data  # who is signed in
    assert b"/ui/packages" not in page.data  # installing is for admin tokens
    again = scoped.get("/ui/login?next=/ui/engines")  # signed in already: sent on
    assert again.status_code == 302 and again.headers["Location"] == "/ui/engines"
    created = scoped.post("/v1/jobs", json=JOB, headers=ORIGIN)
    assert created.status_code == 200
    rid = created.json["request_id"]
    assert scoped.get(f"/v1/jobs/{rid}").json["status"] == "queued"
    assert scoped.get(f"/ui/runs/{rid}").status_code == 200


def test_unsafe_requests_on_the_cookie_need_the_uis_own_origin(scoped, queue):
    log_in(scoped)
    for headers in ({}, {"Origin": "https://evil.example.com"}, {"Referer": "https://evil.x/"}):
        resp = scoped.post("/v1/jobs", json=JOB, headers=headers)
        assert resp.status_code == 403, headers
        assert resp.json["error"]["details"] == {"reason": "cross_origin"}
    assert scoped.post("/v1/jobs", json=JOB, headers={"Referer": "http://localhost/ui/"}).json
    assert len(queue.sent) == 1


def test_a_bad_token_or_a_cross_site_login_sets_no_cookie(scoped):
    bad = scoped.post("/ui/login", data={"token": "nope-0123456789abcdef"}, headers=ORIGIN)
    assert bad.status_code == 401 and "Set-Cookie" not in bad.headers
    assert b"not valid" in bad.data
    forged = log_in(scoped, Origin="https://evil.example.com")
    assert forged.status_code == 403 and "Set-Cookie" not in forged.headers


def test_the_cookie_session_keeps_the_tokens_scope_and_ownership(scoped):
    rid = scoped.post(
        "/v1/jobs", json=JOB, headers={"Authorization": f"Bearer {TOKENS['bob'][0]}"}
    ).json["request_id"]
    log_in(scoped, "reader")
    assert scoped.post("/v1/jobs", json=JOB, headers=ORIGIN).status_code == 403
    assert scoped.get(f"/v1/jobs/{rid}").status_code == 404  # bob's
    assert scoped.get(f"/ui/runs/{rid}").status_code == 404
    assert scoped.get(f"/v1/management/runs/{rid}/events").status_code == 404


def test_logout_and_a_removed_token_end_the_session(scoped, tokens_file):
    log_in(scoped)
    assert scoped.get("/v1/jobs").status_code == 200
    out = scoped.post("/ui/logout", headers=ORIGIN)
    assert out.status_code == 302 and "skill_runner_session=;" in out.headers["Set-Cookie"]
    assert scoped.get("/v1/jobs").status_code == 401
    log_in(scoped)
    write_tokens_file(tokens_file, {"root": TOKENS["root"]})  # alice's line removed
    st = tokens_file.stat()
    os.utime(tokens_file, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert scoped.get("/v1/jobs").status_code == 401


def test_a_forged_cookie_is_no_session(scoped):
    scoped.set_cookie("skill_runner_session", "eyJoIjoiYWJjIn0.forged.sig")
    assert scoped.get("/v1/jobs").status_code == 401


def test_without_tokens_the_login_page_sends_you_on(client):
    resp = client.get("/ui/login")
    assert resp.status_code == 302 and resp.headers["Location"] == "/ui/skills"


def test_an_admin_session_sees_the_install_page(scoped):
    log_in(scoped, "root")
    assert b"/ui/packages" in scoped.get("/ui/skills").data
    assert scoped.get("/ui/packages").status_code == 200
