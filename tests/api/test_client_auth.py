"""The SDK against the app with scoped tokens (served on loopback by werkzeug): a missing
scope and another token's run surface as SkillRunnerError with the service's code."""

from __future__ import annotations

import threading

import pytest
from werkzeug.serving import make_server

from skill_runner_client import Client, SkillRunnerError
from tests.helpers import TOKENS


@pytest.fixture
def sdk(scoped_app):
    server = make_server("127.0.0.1", 0, scoped_app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    clients: list[Client] = []

    def client_of(who: str) -> Client:
        token = TOKENS[who][0] if who in TOKENS else who
        clients.append(Client(f"http://127.0.0.1:{server.port}", token, max_retries=0))
        return clients[-1]

    yield client_of
    for client in clients:
        client.close()
    server.shutdown()


def test_403_and_404_are_the_sdks_error_with_the_services_code(sdk):
    alice, bob, reader = sdk("alice"), sdk("bob"), sdk("reader")
    rid = alice.jobs.create("fenced-json", input={"text": "hi"})["request_id"]
    assert alice.jobs.get(rid)["status"] == "queued"
    with pytest.raises(SkillRunnerError) as refused:
        reader.jobs.create("fenced-json", input={"text": "hi"})
    assert refused.value.status == 403 and refused.value.code == "FORBIDDEN"
    assert refused.value.details["required_scope"] == "submit"
    for call in (
        lambda: bob.jobs.get(rid),
        lambda: bob.jobs.cancel(rid),
        lambda: list(bob.jobs.events(rid)),
        lambda: bob.jobs.wait(rid, timeout=1),
    ):
        with pytest.raises(SkillRunnerError) as hidden:
            call()
        assert hidden.value.status == 404 and hidden.value.code == "REQUEST_NOT_FOUND"
    assert [j["request_id"] for j in bob.jobs.list()["items"]] == []
    with pytest.raises(SkillRunnerError) as unknown:
        sdk("not-a-token-0123456789").skills()
    assert unknown.value.status == 401 and unknown.value.code == "UNAUTHORIZED"


def test_an_admin_deletes_a_skill_through_the_sdk_and_others_may_not(sdk, settings):
    with pytest.raises(SkillRunnerError) as refused:
        sdk("alice").delete_skill("fenced-json")
    assert refused.value.status == 403 and refused.value.details["required_scope"] == "admin"
    gone = sdk("root").delete_skill("fenced-json")
    assert gone["skill_id"] == "fenced-json" and gone["archive_path"].startswith("skill_archive/")
    with pytest.raises(SkillRunnerError) as missing:
        sdk("root").delete_skill("fenced-json")
    assert missing.value.code == "SKILL_NOT_FOUND"
