"""An `advance` that fails ends its composite rather than leave it running: every later
advance (the sweep sends one each pass) would fail the same way (worker.composite.workflow)."""

from __future__ import annotations

import pytest
from sqlalchemy.exc import OperationalError

from worker.composite import workflow


def test_an_unexpected_failure_fails_the_composite_instead_of_the_task(monkeypatch):
    failed = []

    def broken(parent_id, ended_child):
        raise RuntimeError("no such skill")

    monkeypatch.setattr(workflow, "_advance", broken)
    monkeypatch.setattr(workflow, "_fail", lambda pid, exc: failed.append((pid, exc)) or "failed")
    assert workflow.advance("p1", "c1") == "failed"
    ((parent_id, exc),) = failed
    assert parent_id == "p1" and "no such skill" in str(exc)


def test_the_database_away_leaves_it_to_the_next_advance(monkeypatch):
    def away(parent_id, ended_child):
        raise OperationalError("SELECT", {}, Exception("connection refused"))

    monkeypatch.setattr(workflow, "_advance", away)
    monkeypatch.setattr(workflow, "_fail", lambda pid, exc: pytest.fail("failed the composite"))
    with pytest.raises(OperationalError):
        workflow.advance("p1")
