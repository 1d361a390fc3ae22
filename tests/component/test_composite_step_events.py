"""A child's `step.ended` is written once on its parent's events: the child's own `advance`
and the parent's end (which announces every ended child not yet on the log) may both write it,
in either order (worker.composite.end)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from runner_core.events import EventLog, RunRef, read_events
from runner_core.statuses import RunStatus
from runner_core.store.models import Run
from worker.composite import end


@pytest.fixture
def parent(tmp_path, monkeypatch):
    run = Run(id="parent-1", request_id="req-parent", engine=None, attempt=1)
    (tmp_path / run.id).mkdir()
    monkeypatch.setattr(end.context, "settings", lambda: SimpleNamespace(runs_dir=tmp_path))
    log = EventLog(tmp_path / run.id, RunRef(run.id, run.request_id, None, 1))
    monkeypatch.setattr(end, "events_of", lambda _run: log)
    return run


def child(n: int) -> Run:
    started = datetime(2026, 1, 1, tzinfo=UTC)
    return Run(
        id=f"child-{n}",
        request_id=f"req-child-{n}",
        step_name=f"fetch[{n}]",
        status=RunStatus.SUCCEEDED,
        started_at=started,
        finished_at=started + timedelta(seconds=1),
    )


def ended(tmp_path, parent_id: str) -> list[str]:
    events = read_events(tmp_path / parent_id)
    return [e["data"]["request_id"] for e in events if e["type"] == "step.ended"]


def test_the_childs_advance_writing_after_the_parents_end_announced_it_writes_none(
    tmp_path, parent
):
    kids = [child(n) for n in range(3)]
    end.announce_ended(parent, kids)  # the parent ends while child 1's advance is under way
    end.step_ended(parent, kids[1])  # that advance, a moment late
    assert ended(tmp_path, parent.id) == ["req-child-0", "req-child-1", "req-child-2"]


def test_the_parents_end_announcing_after_the_childs_advance_wrote_writes_none(tmp_path, parent):
    kids = [child(n) for n in range(2)]
    end.step_ended(parent, kids[0])
    end.step_ended(parent, kids[0], whole_log=True)  # announce_ended's write, past its read
    end.announce_ended(parent, kids)
    assert ended(tmp_path, parent.id) == ["req-child-0", "req-child-1"]
