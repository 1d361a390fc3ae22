"""An install upgraded while stopped, then started: its runs in every status, written by the
code of three older versions (revisions 0001, 0008 and 0017), are migrated to the head and a
real worker starts on them. No run is left running or queued, none that had finished runs again
or changes, and the waiting ones keep waiting when they can be resumed."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import MetaData, create_engine, select

from runner_core.store.db import normalize_url
from runner_core.store.migrate import upgrade
from tests.databases import create_postgres_db
from tests.helpers import copy_skills, make_settings, wait_for
from tests.integration.services import STACK_ENV, api_stack, redis_database
from tests.migration_rows import TERMINAL, Filler

pytestmark = pytest.mark.integration

OLD_VERSIONS = ("0001", "0008", "0017")  # an install used across three versions


@pytest.fixture
def old_install(tmp_path, backend):
    """Settings on a database nobody migrated yet, with the test skills and a broker."""
    copy_skills(tmp_path / "skills")
    with redis_database() as broker_url:
        env = {"CELERY_BROKER_URL": broker_url, **STACK_ENV}
        drop = None
        if backend == "postgres":
            env["DATABASE_URL"], drop = create_postgres_db(migrated=False)
        else:
            env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'runs.db'}"
        settings = make_settings(tmp_path, **env)
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        try:
            yield settings
        finally:
            if drop:
                drop()


def runs_by_id(engine) -> dict[str, Any]:
    runs = MetaData()
    runs.reflect(engine, only=["runs"])
    table = runs.tables["runs"]
    with engine.connect() as conn:
        return {row.id: row for row in conn.execute(select(table))}


def test_runs_of_an_old_install_are_recovered_once_after_the_upgrade(old_install, backend):
    settings = old_install
    engine = create_engine(normalize_url(settings.database_url))
    filler = Filler(engine)
    for revision in OLD_VERSIONS:
        upgrade(settings.database_url, revision)
        filler.fill(revision)
    before = runs_by_id(engine)
    for run in before.values():  # the input zip the old API extracted for each job
        uploads = settings.requests_dir / run.request_id / "uploads"
        uploads.mkdir(parents=True)
        (uploads / "input_file.txt").write_text("30\n")
    upgrade(settings.database_url)  # `skill-runner migrate`, the service stopped

    with api_stack(settings, backend) as stack:
        stack.start_worker()  # its startup recovery, then the runs it is sent

        def settled() -> dict[str, Any] | None:
            now = runs_by_id(engine)
            moving = [r for r in now.values() if r.status in ("queued", "running")]
            return None if moving else now

        after = wait_for(settled, timeout=60, what="no run left queued or running")
    engine.dispose()

    for run_id, old in before.items():
        new, where = after[run_id], f"a {old.status} run written at {old.created_at}"
        if old.status in TERMINAL:  # untouched
            assert (new.status, new.error, new.attempt) == (old.status, old.error, old.attempt)
            assert new.finished_at == old.finished_at, where
        elif old.status == "running":  # its worker is gone: failed, not run again
            assert new.status == "failed", where
            assert new.error_code == "ORCHESTRATOR_RESTART_INTERRUPTED", where
            assert new.recovery_state == "failed_reconciled" and new.attempt == 1, where
        elif old.status == "queued":  # sent again and run once, on its upload
            assert new.status == "succeeded" and new.attempt == 1, (where, new.error)
        elif old.pending_interaction_id is not None:  # waiting with a question: keeps waiting
            assert new.status == "waiting_user", (where, new.error)
            assert new.recovery_state == "recovered_waiting", where
        else:  # waiting on nothing it could resume
            assert new.status == "failed", where
            assert new.error_code == "SESSION_RESUME_FAILED", where
