"""SIGTERM (or Celery's soft time limit, SIGUSR1) while a run executes: Terminated (or
SoftTimeLimitExceeded) is raised, but never inside a database call (an interrupted statement or
commit can keep SQLite's write lock, or leave a pooled Postgres connection mid-command, while
the task records its end)."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading

import pytest
from celery.exceptions import SoftTimeLimitExceeded

from runner_core.settings import REPO_ROOT
from tests.databases import create_postgres_db
from worker.hooks import termination


@pytest.fixture
def postgres_url():
    """An empty Postgres database of the test's own (the soft limit's SQLite case is the
    SIGTERM case's: one handler guards both)."""
    url, drop = create_postgres_db(migrated=False)
    yield url
    drop()


def writers(
    tmp_path, trials: int, mode: str, signame: str = "TERM", db: str = "", stop: str = ""
) -> dict:
    """Exit codes of `trials` signalled writers: 0 recorded its end, 3 found the database
    locked (or its connection broken), 1 died of another exception, hung did not end within
    10 s and was killed (tests/sigterm_writer.py; stop "any" ends at the first that is not 0,
    a code at the first with that code)."""
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.sigterm_writer",
            db or str(tmp_path / "runs.db"),
            str(trials),
            mode,
            signame,
            *([stop] if stop else []),
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return dict(pair.split(":") for pair in out.stdout.split())


def test_a_sigterm_during_database_writes_never_leaves_the_database_locked(tmp_path):
    assert writers(tmp_path, 100, "guarded") == {"0": "100"}


def test_the_hazard_is_real_when_sigterm_raises_wherever_it_lands(tmp_path):
    # the control: the same writers without the guard. About one in eight keeps the lock (3);
    # now and then SQLAlchemy's commit, interrupted, fails its own assertion instead (1).
    # Up to 400 writers, stopping at the first that keeps the lock
    outcomes = writers(tmp_path, 400, "unguarded", stop="3")
    assert int(outcomes.get("3", 0)) >= 1, outcomes


def test_a_soft_time_limit_during_postgres_writes_always_lets_the_end_be_recorded(
    tmp_path, postgres_url
):
    assert writers(tmp_path, 60, "guarded", "USR1", postgres_url) == {"0": "60"}


def test_the_soft_limit_hazard_is_real_on_postgres_when_it_raises_wherever_it_lands(
    tmp_path, postgres_url
):
    # the control, as billiard's own handler behaves: now and then the exception lands in
    # psycopg mid-command, and the writer dies of the driver's error instead (1), or waits
    # forever on the connection it left mid-protocol (hung): up to 400 writers, stopping at the
    # first that fails
    outcomes = writers(tmp_path, 400, "unguarded", "USR1", postgres_url, stop="any")
    assert sum(int(n) for code, n in outcomes.items() if code != "0") >= 1, outcomes


def test_a_soft_limit_raises_once_and_billiards_handler_is_restored():
    before = signal.getsignal(signal.SIGUSR1)
    raised = 0
    with pytest.raises(SoftTimeLimitExceeded):
        with termination.terminable("run-4"):
            try:
                signal.raise_signal(signal.SIGUSR1)
            except SoftTimeLimitExceeded:
                raised += 1
                signal.raise_signal(signal.SIGUSR1)  # a second one does not interrupt cleanup
                raise
    assert raised == 1
    assert signal.getsignal(signal.SIGUSR1) is before


def test_a_sigterm_raises_terminated_once_and_the_handler_is_restored():
    before = signal.getsignal(signal.SIGTERM)
    raised = 0
    with pytest.raises(termination.Terminated):
        with termination.terminable("run-1"):
            try:
                signal.raise_signal(signal.SIGTERM)
            except termination.Terminated:
                raised += 1
                assert termination.terminating()
                signal.raise_signal(signal.SIGTERM)  # a second one does not interrupt cleanup
                raise
    assert raised == 1
    assert signal.getsignal(signal.SIGTERM) is before
    assert not termination.terminating()


def test_a_sigterm_inside_a_database_call_is_sent_again_and_lands_after_it(monkeypatch):
    landed = threading.Event()
    monkeypatch.setattr(termination, "RESEND_SEC", 0.01)
    with pytest.raises(termination.Terminated):
        with termination.terminable("run-2"):
            termination._on_sigterm(signal.SIGTERM, sys._getframe())  # a frame of ours: raises
    with termination.terminable("run-3"):
        frame = _frame_in("sqlalchemy.engine.base")
        termination._on_sigterm(signal.SIGTERM, frame)  # deferred: no exception here
        assert not termination.terminating()
        try:
            landed.wait(5)  # the resent signal interrupts this wait
        except termination.Terminated:
            landed.set()
    assert landed.is_set()


def _frame_in(module: str):
    """A frame whose code runs in `module` (as the handler sees a signal landing there)."""
    scope = {"__name__": module, "sys": sys}
    exec("def here():\n    return sys._getframe()\n", scope)
    return scope["here"]()
