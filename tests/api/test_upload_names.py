"""Zip entry names the file system cannot hold (a name over 255 bytes, a path thousands of
folders deep) are refused as 400 UPLOAD_UNSAFE_PATH before anything is written, wherever a zip
is extracted: a job's or a one-off run's input upload and a skill package."""

from __future__ import annotations

import pytest

from tests.helpers import upload_body, zip_bytes
from tests.packages import echo_skill, package_upload

LONG_NAME = "a" * 300 + ".txt"
DEEP_PATH = "d/" * 2000 + "f"
HOSTILE = pytest.mark.parametrize(
    ("name", "detail"),
    [(LONG_NAME, {"max_name_bytes": 255}), (DEEP_PATH, {"max_depth": 64})],
    ids=["long-name", "deep-path"],
)


def tree(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@HOSTILE
def test_a_job_upload_with_an_impossible_name_is_400_and_can_be_sent_again(
    client, settings, queue, name, detail
):
    rid = client.post("/v1/jobs", json={"skill_id": "demo-prime-number"}).json["request_id"]
    resp = client.post(
        f"/v1/jobs/{rid}/upload", data=zip_bytes({name: "x"}), content_type="application/zip"
    )
    assert resp.status_code == 400, resp.json
    error = resp.json["error"]
    assert error["code"] == "UPLOAD_UNSAFE_PATH" and error["request_id"] == rid
    assert detail.items() <= error["details"].items()
    assert len(error["details"]["entry"]) <= 203  # shortened, not thousands of characters
    assert tree(settings.requests_dir / rid) == [".upload.lock", "uploads"]
    assert queue.sent == []
    good = client.post(f"/v1/jobs/{rid}/upload", data=upload_body({"input_file.txt": "30"}))
    assert good.status_code == 200, good.json
    assert len(queue.sent) == 1


@HOSTILE
def test_a_temp_run_upload_with_an_impossible_name_is_400(client, settings, name, detail):
    data = package_upload(echo_skill(file_input=True))
    rid = client.post("/v1/temp-skill-runs", data=data).json["request_id"]
    resp = client.post(f"/v1/temp-skill-runs/{rid}/upload", data=upload_body({name: "x"}))
    assert resp.status_code == 400 and resp.json["error"]["code"] == "UPLOAD_UNSAFE_PATH"
    assert not any((settings.requests_dir / rid / "uploads").iterdir())


@HOSTILE
def test_a_skill_package_with_an_impossible_name_is_400_and_leaves_nothing(
    client, settings, name, detail
):
    files = {**echo_skill(), f"assets/{name}": "x"}
    resp = client.post("/v1/skill-packages", data=package_upload(files))
    assert resp.status_code == 400, resp.json
    assert resp.json["error"]["code"] == "UPLOAD_UNSAFE_PATH"
    assert detail.items() <= resp.json["error"]["details"].items()
    assert not (settings.skills_dir / "pkg-echo").exists()
    assert not list((settings.skills_dir / ".staging").iterdir())
    one_off = client.post("/v1/temp-skill-runs", data=package_upload(files))
    assert one_off.status_code == 400 and one_off.json["error"]["code"] == "UPLOAD_UNSAFE_PATH"
    assert not settings.requests_dir.exists() or not any(settings.requests_dir.iterdir())


def test_an_entry_name_that_is_not_utf8_is_400_not_500(client):
    rid = client.post("/v1/jobs", json={"skill_id": "demo-prime-number"}).json["request_id"]
    # the entry says its name is UTF-8 (flag 0x800) but the bytes are not
    raw = zip_bytes({"input_file_\u00e9.txt": "30"}).replace("\u00e9".encode(), b"\xff\xfe")
    resp = client.post(f"/v1/jobs/{rid}/upload", data=raw, content_type="application/zip")
    assert resp.status_code == 400 and resp.json["error"]["code"] == "UPLOAD_NOT_ZIP"


NFD, NFC = "re\u0301sume\u0301.txt", "r\u00e9sum\u00e9.txt"  # macOS spells the accent apart


def test_a_zip_made_on_macos_matches_the_path_input_names_in_nfc(client, settings, queue):
    named = f"inputs/input_file/{NFC}"
    body = {"skill_id": "demo-prime-number", "input": {"input_file": named}}
    rid = client.post("/v1/jobs", json=body).json["request_id"]
    up = client.post(f"/v1/jobs/{rid}/upload", data=upload_body({f"inputs/input_file/{NFD}": "30"}))
    assert up.status_code == 200, up.json
    assert up.json["extracted_files"] == [named]
    assert (settings.requests_dir / rid / "uploads" / named).read_text() == "30"
    assert len(queue.sent) == 1


def test_two_entries_one_name_once_normalised_are_400_and_can_be_sent_again(
    client, settings, queue
):
    rid = client.post("/v1/jobs", json={"skill_id": "demo-prime-number"}).json["request_id"]
    resp = client.post(f"/v1/jobs/{rid}/upload", data=upload_body({NFC: "1", NFD: "2"}))
    assert resp.status_code == 400, resp.json
    error = resp.json["error"]
    assert error["code"] == "UPLOAD_DUPLICATE_ENTRY" and error["request_id"] == rid
    assert error["details"]["entries"] == [NFC, NFD] and "NFC" in error["message"]
    assert tree(settings.requests_dir / rid) == [".upload.lock", "uploads"]
    assert queue.sent == []
    good = client.post(f"/v1/jobs/{rid}/upload", data=upload_body({"input_file.txt": "30"}))
    assert good.status_code == 200, good.json
