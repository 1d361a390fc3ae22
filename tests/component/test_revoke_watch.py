"""Contract of worker.hooks.revokes.RevokeWatch with the pinned Celery: a worker's `revoke` remote
control command puts the task id in `celery.worker.state.revoked` (Celery's internal worker
state, not public API), where the watch finds it, once. A Celery upgrade that moves or reshapes
that set, or stops the command from filling it, fails here."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

from celery import Celery
from celery.signals import task_received
from celery.worker import control
from celery.worker import state as worker_state

from worker.hooks import revokes

TASK_ID = "contract-revoked-task"


def revoke_as_a_worker_does(task_id: str) -> None:
    """What a worker runs for `celery control revoke <id>` / Flower's revoke: the command its
    pidbox dispatches, with the state it passes."""
    state = SimpleNamespace(app=Celery("contract", set_as_current=False), consumer=None)
    control.Panel.data["revoke"](state, task_id=task_id, terminate=False, signal=None)


def test_a_revoke_command_reaches_the_watch_once(monkeypatch):
    canceled: list[set[str]] = []
    monkeypatch.setattr(revokes, "cancel_revoked", lambda ids: canceled.append(set(ids)) or [])
    watch = revokes.RevokeWatch(SimpleNamespace())
    watch.check()  # what the set already holds is seen first
    canceled.clear()
    try:
        revoke_as_a_worker_does(TASK_ID)
        watch.check()
        watch.check()  # seen: not canceled again
    finally:
        worker_state.revoked.discard(TASK_ID)
    assert canceled == [{TASK_ID}]


def test_switched_off_the_worker_leaves_the_step_out(monkeypatch):
    parent = SimpleNamespace()
    assert revokes.RevokeWatch(parent).include_if(parent) is True  # the default
    off = dataclasses.replace(revokes.context.settings(), revoke_watch=False)
    monkeypatch.setattr(revokes.context, "settings", lambda: off)
    assert revokes.RevokeWatch(parent).include_if(parent) is False


class RecordingTimer:
    """Celery's timer as the watch uses it: call_after(wait, fn) -> an entry with cancel()."""

    def __init__(self) -> None:
        self.waits: list[float] = []
        self.canceled = 0

    def call_after(self, wait, fn, priority=0):
        self.waits.append(wait)
        return SimpleNamespace(cancel=lambda: setattr(self, "canceled", self.canceled + 1))


def test_a_task_received_by_an_idle_worker_brings_the_next_check_forward():
    timer = RecordingTimer()
    watch = revokes.RevokeWatch(SimpleNamespace())
    watch.start(SimpleNamespace(timer=timer))
    try:
        assert timer.waits == [revokes.IDLE_REVOKE_CHECK_SEC]  # nothing held: it sleeps
        task_received.send(sender=None, request=None)
        assert timer.waits[-1] == revokes.REVOKE_CHECK_SEC and timer.canceled == 1
        task_received.send(sender=None, request=None)  # already soon: left alone
        assert len(timer.waits) == 2 and timer.canceled == 1
    finally:
        watch.stop(None)
    assert watch not in revokes._watches
