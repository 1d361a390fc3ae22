"""A symlink the run planted among its outputs that points at an engine home's file (inside the
run directory, so it passes the "stays inside" check) is served by no route: not the artifact
download, the artifact manifest, the bundles, nor the run's file tree and preview."""

from __future__ import annotations

import io
import os
import zipfile

import pytest

from runner_core.artifacts import index_artifacts
from tests.api.test_artifact_paths import finished_job
from tests.api.test_management import run_dir

KEY = "sk-engine-home-auth-secret-0123456789"


def plant(app, rid):
    root = run_dir(app, rid)
    home = root / ".codex-home"
    home.mkdir(parents=True, exist_ok=True)
    (home / "auth.json").write_text(f'{{"OPENAI_API_KEY": "{KEY}"}}\n')
    (root / "opencode.json").write_text(f'{{"key": "{KEY}"}}\n')
    arts = root / "artifacts"
    os.symlink("../.codex-home/auth.json", arts / "leak.json")
    os.symlink("../opencode.json", arts / "config.txt")
    os.symlink("../.codex-home", arts / "home")
    (root / "result").mkdir(exist_ok=True)
    os.symlink("../.codex-home/auth.json", root / "result" / "leak.json")
    return root


@pytest.mark.parametrize("path", ["leak.json", "config.txt", "home/auth.json"])
def test_an_artifact_link_into_an_engine_home_is_refused(client, app, path):
    rid = finished_job(client, app)
    plant(app, rid)
    resp = client.get(f"/v1/jobs/{rid}/artifacts/{path}")
    assert resp.status_code == 400, resp.data[:200]
    assert KEY.encode() not in resp.data
    assert resp.json["error"]["code"] == "INVALID_ARTIFACT_PATH"
    assert client.get(f"/v1/jobs/{rid}/artifacts/notes.md").status_code == 200


@pytest.mark.parametrize("route", ["bundle", "bundle/debug"])
def test_the_bundles_leave_out_links_into_engine_homes(client, app, route):
    rid = finished_job(client, app)
    plant(app, rid)
    resp = client.get(f"/v1/jobs/{rid}/{route}")
    assert resp.status_code == 200
    data = resp.get_data()
    assert KEY.encode() not in data
    names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    assert "artifacts/notes.md" in names and "artifacts/leak.json" not in names


def test_the_manifest_skips_links_into_engine_homes(client, app):
    rid = finished_job(client, app)
    root = plant(app, rid)
    manifest = index_artifacts(root, [])
    paths = [a.path for a in manifest.artifacts]
    assert paths == ["artifacts/notes.md"]
    skipped = {w["path"] for w in manifest.warnings}
    assert {"artifacts/leak.json", "artifacts/config.txt"} <= skipped


def test_the_file_views_refuse_links_into_engine_homes(client, app):
    rid = finished_job(client, app)
    plant(app, rid)
    tree = client.get(f"/v1/management/runs/{rid}/files").get_data()
    assert b"leak.json" not in tree and b"config.txt" not in tree
    for path in ("artifacts/leak.json", "artifacts/config.txt", "result/leak.json"):
        resp = client.get(f"/v1/management/runs/{rid}/file", query_string={"path": path})
        assert resp.status_code == 403, (path, resp.data[:200])
        assert KEY.encode() not in resp.data
        assert resp.json["error"]["code"] == "RUN_FILE_REFUSED"
    ok = client.get(f"/v1/management/runs/{rid}/file", query_string={"path": "artifacts/notes.md"})
    assert ok.status_code == 200
