"""The run events' publisher (runner_core/event_bus.py) on a real Redis: every line reaches a
subscriber in order, its connection asks for no replies, and after the connection is killed
the next publishes connect again (quietly) instead of failing the run."""

from __future__ import annotations

import time
import uuid

import redis

from runner_core.event_bus import EventPublisher, channel


def db_of(client: redis.Redis) -> int:
    return int(client.connection_pool.connection_kwargs.get("db", 0))


def received(sub, n: int, timeout: float = 5.0) -> list[str]:
    got: list[str] = []
    end = time.monotonic() + timeout
    while len(got) < n and time.monotonic() < end:
        message = sub.get_message(timeout=0.2)
        if message and message["type"] == "message":
            got.append(message["data"].decode())
    return got


def quiet_clients(monitor, until: float, db: int) -> list[str]:
    """The client addresses that asked for no replies on database `db`, as MONITOR saw them
    (MONITOR sees the whole server: other sessions' services publish on their databases)."""
    seen = []
    while time.monotonic() < until:
        try:
            command = monitor.next_command()
        except (redis.TimeoutError, TimeoutError):
            break
        if command["command"].upper() == "CLIENT REPLY OFF" and int(command["db"]) == db:
            seen.append(f"{command['client_address']}:{command['client_port']}")
    return seen


def test_events_reach_a_subscriber_in_order_from_a_connection_without_replies(redis_url):
    run_id = uuid.uuid4().hex
    reader = redis.Redis.from_url(redis_url, socket_timeout=1)
    sub = reader.pubsub()
    sub.subscribe(channel(run_id))
    assert received(sub, 0) == [] and sub.get_message(timeout=1)["type"] == "subscribe"
    publish = EventPublisher(redis_url)
    with reader.monitor() as monitor:
        publish(run_id, ["1", "2", "3"])
        publish(run_id, ["4"])
        assert received(sub, 4) == ["1", "2", "3", "4"]
        assert len(quiet_clients(monitor, time.monotonic() + 1.5, db_of(reader))) == 1
    many = [str(i) for i in range(2000)]  # no reply piles up unread on either side
    for line in many:
        publish(run_id, [line])
    assert received(sub, 2000) == many


def test_a_killed_connection_is_made_again_and_asks_for_no_replies_again(redis_url):
    run_id = uuid.uuid4().hex
    reader = redis.Redis.from_url(redis_url, socket_timeout=1)
    sub = reader.pubsub()
    sub.subscribe(channel(run_id))
    sub.get_message(timeout=1)
    publish = EventPublisher(redis_url)
    with reader.monitor() as monitor:
        publish(run_id, ["before"])
        assert received(sub, 1) == ["before"]
        (address,) = quiet_clients(monitor, time.monotonic() + 0.5, db_of(reader))
    # only the publisher's connection: other sessions share this Redis
    assert reader.execute_command("CLIENT", "KILL", "ADDR", address) in (b"OK", "OK", True)
    with reader.monitor() as monitor:
        got: list[str] = []
        for attempt in range(10):  # a send into the dead socket may vanish (a hint, not an event)
            publish(run_id, [f"after-{attempt}"])
            got = received(sub, 1, timeout=1.0)
            if got:
                break
        assert got and got[0].startswith("after-")
        assert len(quiet_clients(monitor, time.monotonic() + 1.5, db_of(reader))) == 1
    publish(run_id, ["x", "y"])
    later: list[str] = []  # an earlier attempt's message may come in late on a busy host
    while "y" not in later and len(later) < 12:
        later += received(sub, 1) or ["(none)"]
    assert [line for line in later if not line.startswith("after-")] == ["x", "y"]
