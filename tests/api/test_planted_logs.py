"""A run's directory is writable from inside its box, logs/ included: a run could replace its
logs/stdout.txt with a symlink to any file the API can read (the UI session key, the tokens
file, another run's files), or with a FIFO that holds an API worker for ever. The log routes
read a regular file reached through no symlink, or nothing."""

from __future__ import annotations

import os
import shutil

import pytest

from tests.api.test_artifact_paths import finished_job
from tests.api.test_management import run_dir

SECRET = "outside-the-run-0123456789"


def plant(app, rid, tmp_path, how):
    logs = run_dir(app, rid) / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    outside = tmp_path / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "stdout.txt").write_text(SECRET)
    (outside / "stderr.txt").write_text(SECRET)
    for name in ("stdout.txt", "stderr.txt"):
        target = logs / name
        if target.exists() or target.is_symlink():
            target.unlink()
        if how == "file-link":
            os.symlink(outside / name, target)
        elif how == "fifo":
            os.mkfifo(target)
    if how == "dir-link":
        for name in os.listdir(logs):
            (logs / name).unlink()
        logs.rmdir()
        os.symlink(outside, logs)


@pytest.mark.timeout(30, method="thread")
@pytest.mark.parametrize("how", ["file-link", "dir-link", "fifo"])
def test_the_logs_never_follow_a_link_nor_wait_on_a_fifo(client, app, tmp_path, how):
    rid = finished_job(client, app)
    plant(app, rid, tmp_path, how)
    for path in (
        f"/v1/jobs/{rid}/logs",
        f"/v1/jobs/{rid}/logs/range?stream=stdout",
        f"/v1/jobs/{rid}/logs/range?stream=stderr",
        f"/v1/management/runs/{rid}/logs/range?stream=stdout",
    ):
        resp = client.get(path)
        assert resp.status_code == 200, (path, resp.data[:200])
        assert SECRET.encode() not in resp.data, path


def test_a_result_folder_replaced_by_a_link_is_not_read_through(client, app, tmp_path):
    rid = finished_job(client, app)
    root = run_dir(app, rid)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "result.json").write_text('{"status": "succeeded", "data": "' + SECRET + '"}')
    if (root / "result").exists():
        shutil.rmtree(root / "result")
    os.symlink(outside, root / "result")
    resp = client.get(f"/v1/jobs/{rid}/result")
    assert resp.status_code == 200 and SECRET.encode() not in resp.data


@pytest.mark.parametrize("route", ["bundle", "bundle/debug"])
@pytest.mark.parametrize("how", ["file-link", "dir-link"])
def test_a_stored_bundle_the_run_planted_as_a_link_is_not_served(client, app, tmp_path, route, how):
    rid = finished_job(client, app)
    root = run_dir(app, rid)
    outside = tmp_path / "keys"
    outside.mkdir()
    for name in ("run_bundle.zip", "run_bundle_debug.zip"):
        (outside / name).write_text(SECRET)
    if how == "dir-link":
        os.symlink(outside, root / "bundle")
    else:
        (root / "bundle").mkdir()
        for name in ("run_bundle.zip", "run_bundle_debug.zip"):
            os.symlink(outside / name, root / "bundle" / name)
    for ranged in ({}, {"Range": "bytes=0-10"}):
        resp = client.get(f"/v1/jobs/{rid}/{route}", headers=ranged)
        assert resp.status_code in (200, 206), resp.data[:200]
        assert SECRET.encode() not in resp.get_data()
    assert (outside / "run_bundle.zip").read_text() == SECRET  # nor written through the link
    assert (outside / "run_bundle_debug.zip").read_text() == SECRET
