"""A request id in a URL is looked up, never used as a path: an id no request can have (too long
for a file name, `..`) is the 404 of an unknown request on every route, never a 500, and
touches nothing in the data directory."""

from __future__ import annotations

import pytest

from tests.helpers import upload_body

ODD_IDS = ["x" * 5000, "..", "."]


def tree(root):
    """The data directory's files but the database's own."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if "runs.db" not in p.name)


@pytest.mark.parametrize("rid", ODD_IDS, ids=["too-long", "dot-dot", "dot"])
@pytest.mark.parametrize(
    ("method", "route"),
    [
        ("POST", "/v1/jobs/{}/upload"),
        ("POST", "/v1/temp-skill-runs/{}/upload"),
        ("POST", "/v1/jobs/{}/cancel"),
        ("POST", "/v1/temp-skill-runs/{}/cancel"),
        ("GET", "/v1/jobs/{}"),
        ("GET", "/v1/temp-skill-runs/{}"),
    ],
)
def test_an_impossible_request_id_is_404(client, settings, method, route, rid):
    before = tree(settings.data_dir)
    upload = upload_body({"a.txt": b"a"}) if route.endswith("upload") else None
    resp = client.open(route.format(rid), method=method, data=upload)
    assert resp.status_code == 404, resp.get_data()[:300]
    assert resp.json["error"]["code"] == "REQUEST_NOT_FOUND"
    assert tree(settings.data_dir) == before
