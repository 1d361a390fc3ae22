"""The SDK against the app with scoped tokens (through httpx's WSGI transport): a missing
scope and another token's run surface as SkillRunnerError with the service's code."""

from __future__ import annotations

import httpx
import pytest

from skill_runner_client import Client, SkillRunnerError
from tests.helpers import bearer


def sdk(app, who: str) -> Client:
    http = httpx.Client(
        transport=httpx.WSGITransport(app=app), base_url="http://sdk.test", headers=bearer(who)
    )
    return Client("http://sdk.test", http=http, max_retries=0)


def test_403_and_404_are_the_sdks_error_with_the_services_code(scoped_app):
    alice, bob, reader = sdk(scoped_app, "alice"), sdk(scoped_app, "bob"), sdk(scoped_app, "reader")
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
        sdk(scoped_app, "not-a-token-0123456789").skills()
    assert unknown.value.status == 401 and unknown.value.code == "UNAUTHORIZED"


def test_an_admin_deletes_a_skill_through_the_sdk_and_others_may_not(scoped_app, settings):
    with pytest.raises(SkillRunnerError) as refused:
        sdk(scoped_app, "alice").delete_skill("fenced-json")
    assert refused.value.status == 403 and refused.value.details["required_scope"] == "admin"
    gone = sdk(scoped_app, "root").delete_skill("fenced-json")
    assert gone["skill_id"] == "fenced-json" and gone["archive_path"].startswith("skill_archive/")
    with pytest.raises(SkillRunnerError) as missing:
        sdk(scoped_app, "root").delete_skill("fenced-json")
    assert missing.value.code == "SKILL_NOT_FOUND"
