"""The per-process heartbeat thread: beats on time without being woken for every run."""

from __future__ import annotations

import threading
import time

from tests.helpers import wait_for
from worker.execution.lease import Heartbeat, _Beater


class Counter:
    def __init__(self) -> None:
        self.beats: list[str] = []
        self.event = threading.Event()

    def connect(self):  # Heartbeat.beat opens a connection and calls run_states.beat
        raise AssertionError("not used")


def make(counter: Counter, run_id: str, interval: float) -> Heartbeat:
    hb = Heartbeat(counter.connect, run_id, interval)

    def beat() -> None:
        counter.beats.append(run_id)
        counter.event.set()

    hb.beat = beat  # type: ignore[method-assign]
    return hb


def test_a_shorter_interval_wakes_an_idle_beater():
    beater, counter = _Beater(), Counter()
    beater.idle_sec = 30.0
    slow = make(counter, "slow", 30.0)
    beater.add(slow)
    beater.remove(slow)
    with beater.cond:  # a spurious wake-up: the thread plans its wait again, now ~30 s long
        beater.cond.notify()
    wait_for(lambda: beater.wake_at - time.monotonic() > 10)
    fast = make(counter, "fast", 0.05)
    started = time.monotonic()
    beater.add(fast)
    assert counter.event.wait(2.0), "the new heartbeat was never beaten"
    assert time.monotonic() - started < 1.0
    beater.remove(fast)
    assert counter.beats[0] == "fast"


def test_removed_heartbeats_stop_and_active_ones_repeat():
    beater, counter = _Beater(), Counter()
    a, b = make(counter, "a", 0.05), make(counter, "b", 0.05)
    beater.add(a)
    beater.add(b)
    beater.remove(b)
    wait_for(lambda: counter.beats.count("a") >= 3)
    beater.remove(a)
    c = make(counter, "c", 0.05)
    beater.add(c)
    # beats run one after another on the thread: once c has beaten, a's last beat is done
    wait_for(lambda: "c" in counter.beats)
    seen = counter.beats.count("a")
    wait_for(lambda: counter.beats.count("c") >= 4)  # three more rounds at a's interval
    assert counter.beats.count("a") == seen
    assert "b" not in counter.beats
    beater.remove(c)
