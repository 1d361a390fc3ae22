"""The UI's login with tokens configured: a pasted token becomes an HttpOnly, SameSite=Strict
session cookie, accepted for the UI and the API calls its pages make; unsafe requests on the
cookie must come from the UI's own origin; logout and a removed token end the session, for
every app on the same database (a copy of the cookie taken before the logout included)."""

from __future__ import annotations

import dataclasses
import itertools
import os
from datetime import timedelta
from functools import partial

from sqlalchemy import insert, select

from api import create_app
from api.auth.session import COOKIE
from api.jobs import events
from runner_core.api_tokens import token_hash
from runner_core.store.models import EndedUiSession, utcnow
from tests.helpers import BOTH_DATABASES, TOKENS, write_tokens_file

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


def another_app(settings, queue, tokens_file):
    """A second API process on the same database and data directory (or the first restarted)."""
    configured = dataclasses.replace(settings, tokens_file=tokens_file)
    return create_app({"SETTINGS": configured, "QUEUE": queue, "TESTING": True})


def client_with_cookie(app, value: str):
    client = app.test_client()
    client.set_cookie(COOKIE, value)
    return client


@BOTH_DATABASES
def test_a_cookie_copied_before_the_logout_is_refused_by_every_app_after_it(
    scoped, settings, queue, tokens_file
):
    log_in(scoped)
    copied = scoped.get_cookie(COOKIE).value
    other = client_with_cookie(another_app(settings, queue, tokens_file), copied)
    assert other.get("/v1/jobs").status_code == 200
    assert scoped.post("/ui/logout", headers=ORIGIN).status_code == 302
    assert other.get("/v1/jobs").status_code == 401
    page = other.get("/ui/runs")
    assert page.status_code == 302 and page.headers["Location"].startswith("/ui/login")
    assert client_with_cookie(scoped.application, copied).get("/v1/jobs").status_code == 401
    restarted = client_with_cookie(another_app(settings, queue, tokens_file), copied)
    assert restarted.get("/v1/jobs").status_code == 401
    log_in(scoped)  # a new login is a new session
    assert scoped.get_cookie(COOKIE).value != copied
    assert scoped.get("/v1/jobs").status_code == 200
    assert restarted.get("/v1/jobs").status_code == 401


def test_a_session_cookie_without_a_session_id_is_refused(scoped_app, scoped):
    """Cookies signed before sessions had ids cannot be ended by a logout: their holders log
    in again."""
    signer = scoped_app.extensions["ui_sessions"]
    scoped.set_cookie(COOKIE, signer.dumps({"h": token_hash(TOKENS["alice"][0])}))
    assert scoped.get("/v1/jobs").status_code == 401
    page = scoped.get("/ui/runs")
    assert page.status_code == 302 and page.headers["Location"].startswith("/ui/login")
    assert log_in(scoped).status_code == 302
    assert scoped.get("/v1/jobs").status_code == 200


def test_a_logout_without_a_live_session_only_deletes_the_cookie(scoped_app, scoped):
    signer = scoped_app.extensions["ui_sessions"]
    no_sid = signer.dumps({"h": token_hash(TOKENS["alice"][0])})
    for cookie in (None, "eyJoIjoiYWJjIn0.forged.sig", no_sid):
        if cookie is None:
            scoped.delete_cookie(COOKIE)
        else:
            scoped.set_cookie(COOKIE, cookie)
        out = scoped.post("/ui/logout", headers=ORIGIN)
        assert out.status_code == 302 and out.headers["Location"] == "/ui/login", cookie
        assert "skill_runner_session=;" in out.headers["Set-Cookie"]
    log_in(scoped)
    copied = scoped.get_cookie(COOKIE).value
    scoped.post("/ui/logout", headers=ORIGIN)
    scoped.set_cookie(COOKIE, copied)
    again = scoped.post("/ui/logout", headers=ORIGIN)  # ended already
    assert again.status_code == 302 and "skill_runner_session=;" in again.headers["Set-Cookie"]


def test_a_logout_keeps_its_session_until_the_cookie_expires_and_drops_expired_ones(
    scoped_app, scoped
):
    engine = scoped_app.extensions["db_engine"]
    with engine.begin() as conn:
        conn.execute(
            insert(EndedUiSession.__table__),
            {"sid": "long-gone", "expires_at": utcnow() - timedelta(seconds=1)},
        )
    log_in(scoped)
    scoped.post("/ui/logout", headers=ORIGIN)
    with engine.connect() as conn:
        rows = conn.execute(select(EndedUiSession.__table__)).all()
    assert len(rows) == 1 and rows[0].sid != "long-gone"
    expires = rows[0].expires_at.replace(tzinfo=utcnow().tzinfo)  # SQLite keeps no zone
    assert timedelta(hours=11, minutes=59) < expires - utcnow() <= timedelta(hours=12)


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


def _frames(resp):
    for chunk in resp.response:
        yield chunk.decode() if isinstance(chunk, bytes) else chunk


def _followed(client, rid, monkeypatch, **headers):
    """An open event stream of `rid` (heartbeats every 0.1 s) past its snapshot and a first
    heartbeat: alive while its caller is signed in."""
    monkeypatch.setattr(events, "stream", partial(events.stream, heartbeat_sec=0.1))
    resp = client.get(f"/v1/jobs/{rid}/events", headers=headers, buffered=False)
    frames = _frames(resp)
    assert next(frames).startswith("event: snapshot")
    assert next(frames).startswith("event: heartbeat")
    return resp, frames


def test_an_event_stream_ends_once_its_token_is_removed(scoped, tokens_file, monkeypatch):
    alice = {"Authorization": f"Bearer {TOKENS['alice'][0]}"}
    rid = scoped.post("/v1/jobs", json=JOB, headers=alice).json["request_id"]
    resp, frames = _followed(scoped, rid, monkeypatch, **alice)
    assert next(frames).startswith("event: heartbeat")
    write_tokens_file(tokens_file, {"root": TOKENS["root"]})  # alice's line removed
    st = tokens_file.stat()
    os.utime(tokens_file, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    after = len(list(itertools.islice(frames, 20)))
    resp.close()
    assert after == 0, f"{after} frames after the token was removed"  # ended at the next beat
    assert scoped.get(f"/v1/jobs/{rid}/events", headers=alice).status_code == 401


def test_an_event_stream_on_the_ui_session_ends_at_its_logout(scoped, monkeypatch):
    log_in(scoped)
    rid = scoped.post("/v1/jobs", json=JOB, headers=ORIGIN).json["request_id"]
    resp, frames = _followed(scoped, rid, monkeypatch)
    assert scoped.post("/ui/logout", headers=ORIGIN).status_code == 302
    after = len(list(itertools.islice(frames, 20)))
    resp.close()
    assert after == 0, f"{after} frames after the logout"
