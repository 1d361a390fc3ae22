"""Replies made of files (POST .../interaction/reply/files, Skill-Runner's
skillrunner.interaction-files.v1): stored in the run, named in the answer, once."""

from __future__ import annotations

import io
import json

from api.jobs import interaction as interaction_module
from api.jobs import reply_files
from runner_core.store import interactions
from runner_core.store.models import Run
from tests.api.test_interaction_routes import waiting_job
from tests.api.test_management import run_dir


def _files_reply(client, rid, meta, files, prefix="/v1/jobs"):
    data = {"metadata": json.dumps(meta), "files": [(io.BytesIO(b), n) for n, b in files]}
    return client.post(
        f"{prefix}/{rid}/interaction/reply/files", data=data, content_type="multipart/form-data"
    )


def test_a_reply_with_files_lands_them_in_the_run_once(client, app, queue):
    rid, run_id, iid = waiting_job(client, app, queue)  # even a choose_one: files pass as is
    meta = {
        "interaction_id": iid,
        "message": "here",
        "bindings": [{"slot": "paper", "file_index": 0}],
    }
    files = [("../../evil name.pdf", b"%PDF-1"), ("notes.txt", b"n")]
    first = _files_reply(client, rid, meta, files)
    assert first.status_code == 200, first.json
    assert first.json["status"] == "queued" and first.json["accepted"] is True
    again = _files_reply(client, rid, meta, files)  # the same upload resent: nothing new
    assert again.status_code == 200 and len(queue.sent) == 1
    with app.extensions["db"]() as session:
        (asked,) = interactions.history(session, run_id)
    described = asked.response["files"]
    assert [(f["slot"], f["name"]) for f in described] == [
        ("paper", "evil name.pdf"),
        ("file", "notes.txt"),
    ]
    assert described[0]["path"] == f"uploads/interaction-{iid}/paper/evil name.pdf"
    assert (run_dir(app, rid) / described[0]["path"]).read_bytes() == b"%PDF-1"
    assert asked.response["message"] == "here"
    history = client.get(f"/v1/jobs/{rid}/events/history").json["events"]
    accepted = [e for e in history if e["type"] == "interaction.reply.accepted"]
    assert accepted[0]["data"]["response"]["files"] == described


def test_a_files_reply_key_sent_again_with_other_files_is_409(client, app, queue):
    rid, run_id, iid = waiting_job(client, app, queue, kind="open_text")
    meta = {"interaction_id": iid, "idempotency_key": "f1"}
    first = _files_reply(client, rid, meta, [("a.txt", b"one")])
    assert first.status_code == 200 and first.json["status"] == "queued"
    with app.extensions["db"]() as session:
        session.get(Run, run_id).status = "running"
        session.commit()
    again = _files_reply(client, rid, meta, [("a.txt", b"one")])
    assert again.status_code == 200 and again.json == first.json
    other = _files_reply(client, rid, meta, [("a.txt", b"two")])
    assert other.status_code == 409 and other.json["error"]["code"] == "IDEMPOTENCY_KEY_REUSED"
    assert (run_dir(app, rid) / f"uploads/interaction-{iid}/file/a.txt").read_bytes() == b"one"
    assert len(queue.sent) == 1


def test_file_replies_refuse_bad_metadata_empty_files_and_oversize(client, app, queue, monkeypatch):
    rid, _run_id, iid = waiting_job(client, app, queue, kind="open_text")
    for meta in (
        {"interaction_id": "x"},
        {"interaction_id": iid, "extra": 1},
        {"interaction_id": iid, "bindings": [{"slot": "a", "file_index": 3}]},
        {"interaction_id": iid, "bindings": [{"slot": "a", "file_index": 0}] * 2},
        {"interaction_id": True},  # a JSON boolean, not the number 1
        {"interaction_id": iid, "bindings": [{"slot": "a", "file_index": False}]},
        {"interaction_id": iid, "bindings": 5},  # not a list: was a 500 (TypeError)
        {"interaction_id": iid, "bindings": True},
        {"interaction_id": iid, "idempotency_key": ["k"]},  # was a 500 (the column's type)
        {"interaction_id": iid, "idempotency_key": 5},
        {"interaction_id": iid, "idempotency_key": ""},
        {"interaction_id": iid, "idempotency_key": "k" * 129},
        {"interaction_id": iid, "message": {"text": "hi"}},
    ):
        bad = _files_reply(client, rid, meta, [("a.txt", b"a")])
        assert bad.status_code == 400, meta
        assert bad.json["error"]["code"] == "INTERACTION_REPLY_INVALID"
        assert bad.json["error"]["request_id"] == rid
    assert _files_reply(client, rid, {"interaction_id": iid}, [("a.txt", b"")]).status_code == 400
    assert _files_reply(client, rid, {"interaction_id": iid}, []).status_code == 400
    monkeypatch.setattr(reply_files, "MAX_FILE_BYTES", 4)
    big = _files_reply(client, rid, {"interaction_id": iid}, [("a.txt", b"12345")])
    assert big.status_code == 413 and big.json["error"]["code"] == "UPLOAD_TOO_LARGE"
    assert big.json["error"]["details"]["max_file_bytes"] == 4
    monkeypatch.setattr(reply_files, "MAX_FILES", 1)
    many = _files_reply(client, rid, {"interaction_id": iid}, [("a", b"a"), ("b", b"b")])
    assert many.status_code == 413
    stale = _files_reply(client, rid, {"interaction_id": iid + 1}, [("a.txt", b"a")])
    assert stale.status_code == 409 and stale.json["error"]["code"] == "INTERACTION_STALE"
    assert queue.sent == []
    assert not (run_dir(app, rid) / "uploads" / f"interaction-{iid + 1}").exists()


def test_the_protocol_entry_reports_the_limits_enforced():
    assert reply_files.interaction_files_protocol() == {
        "supported": True,
        "max_files": 8,
        "max_file_bytes": 32 * 1024 * 1024,
        "max_total_bytes": 64 * 1024 * 1024,
    }


def test_an_unknown_run_is_404(client):
    unknown = "00000000-0000-0000-0000-000000000000"
    answer = _files_reply(client, unknown, {"interaction_id": 1}, [("a", b"a")])
    assert answer.status_code == 404
    answer = _files_reply(
        client, unknown, {"interaction_id": 1}, [("a", b"a")], "/v1/temp-skill-runs"
    )
    assert answer.status_code == 404


def test_the_handshake_reports_interaction_files_with_its_limits_only_when_asked(client):
    name = "skillrunner.interaction-files.v1"
    asked = client.post("/v1/system/handshake", json={"requested_protocols": [name]}).json
    assert asked["protocols"] == {name: reply_files.interaction_files_protocol()}
    unasked = client.post("/v1/system/handshake", json={}).json["protocols"]
    assert name not in unasked and unasked["skillrunner.job.v1"] == {"supported": True}


def test_a_file_or_slot_name_too_long_for_the_file_system_is_cut_not_a_500(client, app, queue):
    rid, run_id, iid = waiting_job(client, app, queue, kind="open_text")
    long_name = "\u6587" * 200 + ".txt"  # 200 characters of 3 bytes each
    meta = {"interaction_id": iid, "bindings": [{"slot": "\u69fd" * 200, "file_index": 0}]}
    resp = _files_reply(client, rid, meta, [(long_name, b"a")])
    assert resp.status_code == 200, resp.json
    with app.extensions["db"]() as session:
        (asked,) = interactions.history(session, run_id)
    (described,) = asked.response["files"]
    assert all(0 < len(part.encode()) <= 200 for part in described["path"].split("/"))
    assert described["name"] == "\u6587" * 66 and described["slot"] == "\u69fd" * 66
    assert (run_dir(app, rid) / described["path"]).read_bytes() == b"a"


def test_a_files_reply_that_loses_the_race_leaves_the_winners_files(
    client, app, queue, monkeypatch
):
    """The route reads the run as waiting before the body has arrived: another reply may be
    recorded meanwhile. The loser's files, written straight in place, replaced the winner's."""
    rid, _run_id, iid = waiting_job(client, app, queue, kind="open_text")
    winner = run_dir(app, rid) / f"uploads/interaction-{iid}/file/a.txt"
    winner.parent.mkdir(parents=True)
    winner.write_bytes(b"the winner's")

    def another_reply_won(session, run_id, interaction_id, given):
        return interactions.NOT_WAITING

    monkeypatch.setattr(interaction_module.interactions, "answer", another_reply_won)
    lost = _files_reply(client, rid, {"interaction_id": iid}, [("a.txt", b"the loser's")])
    assert lost.status_code == 409, lost.json
    assert winner.read_bytes() == b"the winner's"
    assert sorted(p.name for p in winner.parent.parent.parent.iterdir()) == [
        f"interaction-{iid}"
    ]  # nothing left aside
    assert queue.sent == []


def test_files_over_the_json_bodies_limit_but_within_the_files_limits_are_taken(client, app, queue):
    """A reply of files is bound by its own limits (32 MiB a file), not by
    SKILL_RUNNER_MAX_REQUEST_BYTES (16 MiB): it was 413 PAYLOAD_TOO_LARGE past 16 MiB."""
    rid, _run_id, iid = waiting_job(client, app, queue, kind="open_text")
    size = app.config["MAX_CONTENT_LENGTH"] + 1024
    resp = _files_reply(client, rid, {"interaction_id": iid}, [("big.bin", b"x" * size)])
    assert resp.status_code == 200, resp.json
    stored = run_dir(app, rid) / f"uploads/interaction-{iid}/file/big.bin"
    assert stored.stat().st_size == size


def test_a_files_reply_over_the_total_is_413_upload_too_large(client, app, queue, monkeypatch):
    rid, _run_id, iid = waiting_job(client, app, queue, kind="open_text")
    monkeypatch.setattr(reply_files, "_BODY_BYTES", 64 * 1024)
    resp = _files_reply(client, rid, {"interaction_id": iid}, [("big.bin", b"x" * 128 * 1024)])
    assert resp.status_code == 413
    assert resp.json["error"]["code"] == "UPLOAD_TOO_LARGE"
    assert resp.json["error"]["details"]["max_total_bytes"] == reply_files.MAX_TOTAL_BYTES


NFD, NFC = "re\u0301sume\u0301.pdf", "r\u00e9sum\u00e9.pdf"  # macOS spells the accent apart


def test_a_file_named_in_nfd_is_stored_under_its_nfc_name_not_mangled(client, app, queue):
    rid, run_id, iid = waiting_job(client, app, queue, kind="open_text")
    resp = _files_reply(client, rid, {"interaction_id": iid}, [(NFD, b"cv")])
    assert resp.status_code == 200, resp.json
    with app.extensions["db"]() as session:
        (asked,) = interactions.history(session, run_id)
    (described,) = asked.response["files"]
    assert described["name"] == NFC
    assert (run_dir(app, rid) / f"uploads/interaction-{iid}/file/{NFC}").read_bytes() == b"cv"


def test_two_files_stored_under_one_name_are_400_not_one_replacing_the_other(client, app, queue):
    rid, _run_id, iid = waiting_job(client, app, queue, kind="open_text")
    for names in ([NFC, NFD], ["a.txt", "a.txt"]):
        files = [(names[0], b"one"), ("b.txt", b"b"), (names[1], b"two")]
        resp = _files_reply(client, rid, {"interaction_id": iid}, files)
        assert resp.status_code == 400, resp.json
        error = resp.json["error"]
        assert error["code"] == "INTERACTION_REPLY_INVALID" and error["request_id"] == rid
        assert "files 0 and 2" in error["message"]
    assert queue.sent == []
    assert not (run_dir(app, rid) / "uploads" / f"interaction-{iid}").exists()
