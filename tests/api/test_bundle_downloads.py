"""GET .../bundle and .../bundle/debug: a first download asking for a Range (the bundle not
built yet) is answered from the stored zip as later ones are (206, 416); a plain one streams."""

from __future__ import annotations

import io
import json
import os
import zipfile

import pytest

from tests.api.test_management import run_dir
from tests.api.test_ownership import JOB, finish

ROUTES = pytest.mark.parametrize("route", ["bundle", "bundle/debug"])


def finished_job(client, app) -> str:
    """A succeeded job whose run left a result and an incompressible artifact."""
    rid = client.post("/v1/jobs", json=JOB).json["request_id"]
    finish(app, rid)
    root = run_dir(app, rid)
    (root / "result").mkdir(parents=True, exist_ok=True)
    (root / "result" / "result.json").write_text(json.dumps({"status": "succeeded", "data": {}}))
    (root / "artifacts").mkdir(exist_ok=True)
    (root / "artifacts" / "noise.bin").write_bytes(os.urandom(200_000))
    return rid


@ROUTES
def test_a_range_outside_the_bundle_is_416_on_the_first_download(client, app, route):
    rid = finished_job(client, app)
    first = client.get(f"/v1/jobs/{rid}/{route}", headers={"Range": "bytes=99999999-"})
    assert first.status_code == 416
    assert first.json["error"]["code"] == "REQUESTED_RANGE_NOT_SATISFIABLE"
    later = client.get(f"/v1/jobs/{rid}/{route}", headers={"Range": "bytes=99999999-"})
    assert later.status_code == 416 and later.json["error"]["code"] == first.json["error"]["code"]
    size = len(client.get(f"/v1/jobs/{rid}/{route}").data)
    assert size < 99999999
    assert first.headers["Content-Range"] == later.headers["Content-Range"] == f"bytes */{size}"


@ROUTES
def test_the_first_download_answers_a_range_with_206(client, app, route):
    rid = finished_job(client, app)
    part = client.get(f"/v1/jobs/{rid}/{route}", headers={"Range": "bytes=100-1099"})
    assert part.status_code == 206
    whole = client.get(f"/v1/jobs/{rid}/{route}")
    assert whole.status_code == 200
    assert part.headers["Content-Range"] == f"bytes 100-1099/{len(whole.data)}"
    assert part.data == whole.data[100:1100]  # a slice of the very zip later downloads send
    assert part.headers["ETag"] == whole.headers["ETag"]


@ROUTES
def test_a_plain_first_download_is_streamed_and_later_ones_are_the_stored_file(client, app, route):
    rid = finished_job(client, app)
    first = client.get(f"/v1/jobs/{rid}/{route}")
    assert first.status_code == 200 and "Content-Length" not in first.headers  # streamed
    assert first.data  # read to its end: stored on the way
    second = client.get(f"/v1/jobs/{rid}/{route}")
    assert second.status_code == 200 and second.data == first.data
    assert second.headers["Content-Length"] == str(len(first.data))
    with zipfile.ZipFile(io.BytesIO(first.data)) as zf:
        assert zf.testzip() is None and "artifacts/noise.bin" in zf.namelist()
    again = client.get(f"/v1/jobs/{rid}/{route}", headers={"If-None-Match": second.headers["ETag"]})
    assert again.status_code == 304


def test_a_bundle_that_cannot_be_stored_is_streamed_whole_and_leaves_nothing(
    client, app, monkeypatch
):
    import builtins

    from runner_core import bundles

    def full_disk(path, mode="r", *args, **kwargs):  # every write under bundle/: ENOSPC
        if "w" in mode:
            return builtins.open("/dev/full", "wb", buffering=0)
        return builtins.open(path, mode, *args, **kwargs)

    rid = finished_job(client, app)
    monkeypatch.setattr(bundles, "open", full_disk, raising=False)
    resp = client.get(f"/v1/jobs/{rid}/bundle", headers={"Range": "bytes=0-9"})
    assert resp.status_code == 200 and "Content-Length" not in resp.headers
    with zipfile.ZipFile(io.BytesIO(resp.data)) as zf:
        assert zf.testzip() is None and "artifacts/noise.bin" in zf.namelist()
    assert list((run_dir(app, rid) / "bundle").iterdir()) == []
    monkeypatch.undo()  # space again: the next download stores it and answers the Range
    assert client.get(f"/v1/jobs/{rid}/bundle", headers={"Range": "bytes=0-9"}).status_code == 206
