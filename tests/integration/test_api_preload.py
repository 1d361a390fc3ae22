"""The production API (deploy/gunicorn.conf.py) loads the app once in gunicorn's master and forks
its workers from it, so they share the loaded pages; each worker still opens its own database
connections (Postgres: a connection shared across a fork breaks both ends' protocol state)."""

from __future__ import annotations

import json
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.integration.served import served_stack
from tests.integration.services import broker_settings

APP_ONLY = "sqlalchemy/engine/_row_cy"  # an extension the app loads and gunicorn itself does not


def loaded_in(pid: int) -> bool:
    return APP_ONLY in Path(f"/proc/{pid}/maps").read_text()


@pytest.mark.parametrize("preload", ["1", "0"], ids=["preload", "WEB_PRELOAD=0"])
def test_the_app_is_loaded_before_the_workers_fork_and_each_has_its_connections(
    tmp_path: Path, preload: str
):
    with (
        broker_settings(tmp_path, backend="postgres") as settings,
        served_stack(settings, worker=False, WEB_CONCURRENCY="2", WEB_PRELOAD=preload) as served,
    ):
        assert loaded_in(served.web.pid) == (preload == "1")

        def runs(_: int) -> int:
            url = served.base_url + "/v1/management/runs?limit=5"
            with urllib.request.urlopen(url, timeout=30) as resp:
                json.load(resp)
                return resp.status

        with ThreadPoolExecutor(16) as pool:  # both workers read the database at once
            assert set(pool.map(runs, range(200))) == {200}
