"""POST /v1/skill-packages and GET /v1/skill-packages/{install_id} through the test client."""

from __future__ import annotations

import io
import json

import pytest

from tests.helpers import zip_bytes
from tests.packages import echo_skill, package_upload


def install(client, files, **kwargs):
    return client.post("/v1/skill-packages", data=package_upload(files), **kwargs)


def test_install_makes_the_skill_available(client, settings):
    resp = install(client, echo_skill(version="1.0.0"))
    assert resp.status_code == 200, resp.json
    body = resp.json
    assert body["status"] == "succeeded" and body["action"] == "installed"
    assert body["skill_id"] == "pkg-echo" and body["version"] == "1.0.0"
    assert body["previous_version"] is None and body["archive_path"] is None
    skill = client.get("/v1/skills/pkg-echo").json
    assert skill["health"] == "ok" and skill["version"] == "1.0.0"
    assert not list((settings.skills_dir / ".staging").iterdir())  # nothing left staged


def test_single_top_level_folder_is_accepted(client):
    resp = install(client, echo_skill(prefix="pkg-echo/"))
    assert resp.status_code == 200, resp.json
    assert resp.json["skill_id"] == "pkg-echo"


def test_raw_zip_body_is_accepted(client):
    resp = client.post(
        "/v1/skill-packages", data=zip_bytes(echo_skill()), content_type="application/zip"
    )
    assert resp.status_code == 200, resp.json


def test_update_raises_the_version_and_archives_the_old_one(client, settings):
    install(client, echo_skill(version="1.0.0", message="one"))
    resp = install(client, echo_skill(version="1.2.0", message="two"))
    assert resp.status_code == 200, resp.json
    assert resp.json["action"] == "updated" and resp.json["previous_version"] == "1.0.0"
    assert resp.json["archive_path"] == "skill_archive/pkg-echo/1.0.0"
    archived = settings.data_dir / "skill_archive" / "pkg-echo" / "1.0.0"
    assert (archived / "assets" / "message.txt").read_text() == "one"
    live = settings.skills_dir / "pkg-echo"
    assert (live / "assets" / "message.txt").read_text() == "two"
    assert client.get("/v1/skills/pkg-echo").json["version"] == "1.2.0"


def test_downgrade_is_refused(client, settings):
    install(client, echo_skill(version="2.0.0", message="two"))
    resp = install(client, echo_skill(version="1.9.0", message="old"))
    assert resp.status_code == 400
    error = resp.json["error"]
    assert error["code"] == "SKILL_VERSION_NOT_INCREASED"
    assert error["details"]["installed_version"] == "2.0.0"
    assert error["details"]["errors"] == [error["message"]]
    assert (settings.skills_dir / "pkg-echo" / "assets" / "message.txt").read_text() == "two"


def test_same_version_is_refused(client):
    install(client, echo_skill(version="1.0.0"))
    resp = install(client, echo_skill(version="1.0.0", message="changed"))
    assert resp.status_code == 400
    assert resp.json["error"]["code"] == "SKILL_VERSION_NOT_INCREASED"
    assert "is the installed version" in resp.json["error"]["message"]


def test_bad_zip_is_refused_with_its_upload_code(client, settings):
    resp = client.post("/v1/skill-packages", data={"package": (io.BytesIO(b"not a zip"), "x.zip")})
    assert resp.status_code == 400
    assert resp.json["error"]["code"] == "UPLOAD_NOT_ZIP"
    assert resp.json["error"]["details"]["errors"]
    unsafe = install(client, {"../evil/SKILL.md": "x"})
    assert unsafe.json["error"]["code"] == "UPLOAD_UNSAFE_PATH"
    assert not (settings.skills_dir.parent / "evil").exists()


def test_missing_package_field_is_400(client):
    form = {"other": "x"}
    resp = client.post("/v1/skill-packages", data=form, content_type="multipart/form-data")
    assert resp.status_code == 400 and resp.json["error"]["code"] == "PACKAGE_MISSING"


def test_every_validation_error_is_listed(client, settings):
    files = echo_skill()
    manifest = json.loads(files["assets/runner.json"])
    del manifest["execution_modes"]
    manifest["version"] = "not.a.version!"
    files["assets/runner.json"] = json.dumps(manifest)
    files["assets/input.schema.json"] = json.dumps(
        {"type": "object", "properties": {"text": {"type": "string", "x-input-source": "stdin"}}}
    )
    files["assets/output.schema.json"] = json.dumps(
        {
            "type": "object",
            "properties": {
                "out": {"type": "string", "x-type": "artifact", "x-filename": "../out.md"}
            },
        }
    )
    del files["assets/parameter.schema.json"]
    resp = install(client, files)
    assert resp.status_code == 400
    error = resp.json["error"]
    assert error["code"] == "SKILL_PACKAGE_INVALID"
    errors = error["details"]["errors"]
    expected = [
        "'execution_modes' is required",
        "x-input-source must be 'file' or 'inline'",
        "x-filename must be a plain file name",
        "schemas.parameter file not found",
        "is not a valid version",
    ]
    for fragment in expected:
        assert any(fragment in e for e in errors), (fragment, errors)
    assert len(errors) == len(expected)
    assert not (settings.skills_dir / "pkg-echo").exists()


@pytest.mark.parametrize(
    ("name", "content", "problem"),
    [
        ("SKILL.md", b"\xff\xfe", "SKILL.md: not valid UTF-8 (byte 0xff at offset 0)"),
        ("assets/runner.json", b'{"id": "\xff"}', "assets/runner.json: not valid UTF-8"),
        ("assets/output.schema.json", b"\xfe", "assets/output.schema.json: not valid UTF-8"),
        ("assets/input.schema.json", b"{not json", "assets/input.schema.json: invalid JSON"),
    ],
)
def test_a_file_not_in_utf8_or_not_json_is_named(client, settings, name, content, problem):
    files = {**echo_skill(), name: content}
    resp = install(client, files)
    assert resp.status_code == 400, resp.json
    error = resp.json["error"]
    assert error["code"] == "SKILL_PACKAGE_INVALID"
    assert any(e.startswith(problem) for e in error["details"]["errors"]), error
    assert not (settings.skills_dir / "pkg-echo").exists()


def test_install_status_is_queryable(client):
    ok = install(client, echo_skill()).json
    status = client.get(f"/v1/skill-packages/{ok['install_id']}").json
    assert status["status"] == "succeeded" and status["skill_id"] == "pkg-echo"
    assert status["created_at"] and status["finished_at"] and len(status["package_sha256"]) == 64
    refused = install(client, echo_skill()).json["error"]
    failed = client.get(f"/v1/skill-packages/{refused['details']['install_id']}").json
    assert failed["status"] == "failed"
    assert failed["error"]["code"] == "SKILL_VERSION_NOT_INCREASED"
    assert failed["skill_id"] == "pkg-echo"


def test_unknown_install_is_404(client):
    resp = client.get("/v1/skill-packages/nope")
    assert resp.status_code == 404 and resp.json["error"]["code"] == "INSTALL_NOT_FOUND"


def test_description_colon_is_a_warning_not_a_refusal(client):
    files = echo_skill()
    files["SKILL.md"] = files["SKILL.md"].replace(
        'description: "Echo a message shipped in the package. Used by the package tests."',
        "description: Echo a message, see a:b",
    )
    resp = install(client, files)
    assert resp.status_code == 200, resp.json
    assert any("unquoted ':'" in w for w in resp.json["warnings"])


def test_deleting_a_reinstalled_version_keeps_each_archive(client, settings):
    install(client, echo_skill(version="1.0.0", message="first"))
    first = client.delete("/v1/skills/pkg-echo")
    assert first.status_code == 200, first.json
    install(client, echo_skill(version="1.0.0", message="second"))
    second = client.delete("/v1/skills/pkg-echo")
    assert second.status_code == 200, second.json
    assert first.json["archive_path"] == "skill_archive/pkg-echo/1.0.0"
    assert second.json["archive_path"] != first.json["archive_path"]
    assert second.json["archive_path"].startswith("skill_archive/pkg-echo/1.0.0.")
    for answer, message in ((first, "first"), (second, "second")):
        archived = settings.data_dir / answer.json["archive_path"]
        assert (archived / "assets" / "message.txt").read_text() == message


def test_a_package_whose_id_is_a_skill_of_the_other_format_is_409(client, settings):
    headline = settings.skills_dir / "text" / "headline"  # a skill.json skill
    resp = install(client, echo_skill("headline", version="9.0.0"))
    assert resp.status_code == 409, resp.json
    error = resp.json["error"]
    assert error["code"] == "SKILL_ID_CONFLICT" and error["request_id"]
    assert error["details"]["installed_format"] == "skill.json"
    failed = client.get(f"/v1/skill-packages/{error['details']['install_id']}").json
    assert failed["status"] == "failed" and failed["skill_id"] == "headline"
    assert not (headline / "SKILL.md").exists()
    assert client.get("/v1/skills/headline").json["format"] == "skill.json"
    # the other way: a skill.json package named like an installed SKILL.md skill
    assert install(client, echo_skill("pkgecho")).status_code == 200
    raw = json.loads((headline / "skill.json").read_text())
    files = {"skill.json": json.dumps({**raw, "name": "pkgecho", "version": "9.0.0"})}
    resp = install(client, {**files, "prompt.md": (headline / "prompt.md").read_text()})
    assert resp.status_code == 409, resp.json
    assert resp.json["error"]["details"]["installed_format"] == "SKILL.md"
    assert client.get("/v1/skills/pkgecho").json["format"] == "SKILL.md"


def test_a_job_waiting_for_its_upload_fails_when_its_skill_was_deleted(client):
    """Uninstalling a skill fails its runs not started yet (SKILL_NOT_FOUND): a job still
    waiting for its input upload ends with the upload that finds the skill gone, instead of
    staying queued until the upload wait runs out."""
    from tests.helpers import upload_body

    rid = client.post("/v1/jobs", json={"skill_id": "demo-prime-number"}).json["request_id"]
    assert client.get(f"/v1/jobs/{rid}").json["waiting_for_upload"] is True
    assert client.delete("/v1/skills/demo-prime-number").status_code == 200
    upload = client.post(f"/v1/jobs/{rid}/upload", data=upload_body({"input_file.txt": "10\n"}))
    assert upload.status_code == 404, upload.json
    assert upload.json["error"]["code"] == "SKILL_NOT_FOUND"
    job = client.get(f"/v1/jobs/{rid}").json
    assert job["status"] == "failed" and job["error"]["code"] == "SKILL_NOT_FOUND"
    assert job["finished_at"] is not None
    events = client.get(f"/v1/jobs/{rid}/events/history").json["events"]
    assert events[-1]["data"]["to"] == "failed"


def test_a_job_of_an_installed_skill_whose_pattern_backtracks_is_400_not_a_hang(client, queue):
    files = echo_skill()
    slow = {"type": "string", "pattern": "^(?:a|a)+b"}
    files["assets/parameter.schema.json"] = json.dumps(
        {"type": "object", "properties": {"code": slow}}
    )
    assert install(client, files).status_code == 200
    body = {"skill_id": "pkg-echo", "input": {"text": "hi"}, "parameter": {"code": "a" * 40}}
    resp = client.post("/v1/jobs", json=body)
    assert resp.status_code == 400, resp.json
    error = resp.json["error"]
    assert error["code"] == "SCHEMA_VALIDATION_FAILED"
    (found,) = error["details"]["errors"]
    assert found["path"] == "code" and "took longer than 0.1 s to match" in found["message"]
    assert queue.sent == []
