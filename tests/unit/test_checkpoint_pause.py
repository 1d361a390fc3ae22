"""The SQLite checkpointer's pace: quick while written to, slower and slower when idle."""

from __future__ import annotations

from runner_core.store.checkpoint import EVERY_SEC, IDLE_MAX_SEC, next_pause


def test_a_write_brings_the_pause_back_to_every_sec():
    assert next_pause(IDLE_MAX_SEC, written=True) == EVERY_SEC


def test_with_nothing_written_the_pause_doubles_up_to_the_idle_max():
    pauses = [EVERY_SEC]
    for _ in range(8):
        pauses.append(next_pause(pauses[-1], written=False))
    assert pauses[1] == 2 * EVERY_SEC
    assert max(pauses) == pauses[-1] == IDLE_MAX_SEC
