"""Without tokens (the loopback default) any page the browser opens could POST to the API: a
multipart body needs no CORS preflight, so a page on another site could start a one-off run of
a package of its own, install one, or cancel runs. A state-changing request whose `Origin`
names another site is refused, unless SKILL_RUNNER_CORS_ORIGINS lets that origin in."""

from __future__ import annotations

import dataclasses

from api import create_app
from tests.packages import echo_skill, package_upload

EVIL = {"Origin": "https://evil.example"}


def test_a_cross_site_post_without_tokens_is_403(client, queue):
    resp = client.post("/v1/temp-skill-runs", data=package_upload(echo_skill()), headers=EVIL)
    assert resp.status_code == 403, resp.data[:300]
    error = resp.json["error"]
    assert error["code"] == "FORBIDDEN" and error["details"] == {"reason": "cross_origin"}
    assert error["request_id"]
    for path in ("/v1/skill-packages", "/v1/jobs/x/cancel", "/v1/management/runs/x/cancel"):
        assert client.post(path, headers=EVIL).status_code == 403, path
    assert queue.sent == []


def test_what_privileged_browser_code_sends_goes_through(client, queue):
    """Firefox's extensions (and so the Zotero plugin's fetch) send `Origin: null`, Chrome's
    their own scheme: an ordinary page of a site sends neither, and refusing them refused the
    plugin (a sandboxed frame's `null` only tokens keep out)."""
    for origin in ("null", "moz-extension://1b2c", "chrome-extension://abc"):
        headers = {"Origin": origin, "Sec-Fetch-Site": "cross-site"}
        resp = client.post(
            "/v1/temp-skill-runs", data=package_upload(echo_skill()), headers=headers
        )
        assert resp.status_code == 200, (origin, resp.data[:300])
    assert len(queue.sent) == 3


def test_same_origin_no_origin_and_reads_go_through(client, queue):
    data = package_upload(echo_skill())
    assert client.post("/v1/temp-skill-runs", data=data).status_code == 200  # curl, the client
    own = {"Origin": "http://localhost"}  # the test client's host
    assert (
        client.post(
            "/v1/temp-skill-runs", data=package_upload(echo_skill()), headers=own
        ).status_code
        == 200
    )
    assert client.get("/v1/skills", headers=EVIL).status_code == 200
    assert len(queue.sent) == 2


def test_an_origin_the_operator_lets_in_may_post(settings, queue):
    allowed = dataclasses.replace(settings, cors_origins=("https://evil.example",))
    app = create_app({"SETTINGS": allowed, "QUEUE": queue, "TESTING": True})
    resp = app.test_client().post(
        "/v1/temp-skill-runs", data=package_upload(echo_skill()), headers=EVIL
    )
    assert resp.status_code == 200, resp.data[:300]


def test_a_browser_reaching_the_service_by_another_name_is_403(client):
    """DNS rebinding: the page's own name now resolves here, its calls are same-origin."""
    rebound = {"Host": "evil.example:8000", "Sec-Fetch-Site": "same-origin"}
    resp = client.get("/v1/jobs", headers=rebound)
    assert resp.status_code == 403, resp.data[:300]
    assert resp.json["error"]["details"] == {"reason": "host_not_local"}
    origin = {"Host": "evil.example:8000", "Origin": "http://evil.example:8000"}
    assert client.post("/v1/jobs/x/cancel", headers=origin).status_code == 403
    for host in ("127.0.0.1:8000", "localhost:8000", "[::1]:8000", "10.0.0.5"):
        ok = client.get("/v1/skills", headers={"Host": host, "Sec-Fetch-Site": "same-origin"})
        assert ok.status_code == 200, host
    # a client that is no browser may use any name (a container's service name)
    assert client.get("/v1/skills", headers={"Host": "api:8000"}).status_code == 200


def test_answers_may_not_be_sniffed_nor_framed_by_another_site(client):
    for path in ("/ui/skills", "/v1/skills", "/v1/jobs/none"):
        resp = client.get(path)
        assert resp.headers["X-Content-Type-Options"] == "nosniff", path
        assert resp.headers["X-Frame-Options"] == "SAMEORIGIN", path
        assert resp.headers["Content-Security-Policy"] == "frame-ancestors 'self'", path
