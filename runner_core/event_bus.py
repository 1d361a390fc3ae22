"""Live delivery of run events across processes: Redis pub/sub on the broker's Redis (the
embedded one on the default). A message is a hint that a new line is in events.jsonl; readers
fill any gap from the file, so a lost message costs latency, never an event."""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from runner_core.finish_events import redis_url
from runner_core.per_process import PerProcess

log = logging.getLogger(__name__)
CHANNEL_PREFIX = "skill-runner:events:"
# Messages a stream may have waiting: one that does not read (a stalled client) drops what
# comes after, and fills the gap from the file once it reads again, instead of holding every
# event of a long run in memory.
INBOX_MAX = 1000


def channel(run_id: str) -> str:
    return CHANNEL_PREFIX + run_id


class EventPublisher:
    """Publishes event lines; one connection per process (connections do not cross a fork)."""

    def __init__(self, broker_url: str) -> None:
        self.url = redis_url(broker_url)
        self._conn = PerProcess(self._connect)

    def __call__(self, run_id: str, lines: list[str]) -> None:
        if self.url is None or not lines:
            return
        try:
            self._conn.get().send([("PUBLISH", channel(run_id), line) for line in lines])
        except Exception as exc:  # readers fill the gap from the file
            log.debug("event of run %s not published: %s", run_id, exc)

    def _connect(self) -> QuietConnection:
        assert self.url is not None
        return QuietConnection(self.url)


class QuietConnection:
    """A Redis connection that asks for no replies (CLIENT REPLY OFF): a publish is a hint,
    its reply (how many readers got it) is of no use, and not waiting for it saves a round
    trip per event. Shared by a process's threads; a failed send drops the connection and
    the next one connects again."""

    def __init__(self, url: str) -> None:
        import redis

        pool = redis.ConnectionPool.from_url(url, socket_timeout=2, socket_connect_timeout=2)
        self._conn = pool.make_connection()
        self._lock = threading.Lock()
        self._quiet = False

    def send(self, commands: list[tuple[str, ...]]) -> None:
        with self._lock:
            try:
                if not self._quiet:
                    self._conn.connect()
                    self._conn.send_command("CLIENT", "REPLY", "OFF")
                    self._quiet = True
                packed = self._conn.pack_commands(commands)
                self._conn.send_packed_command(packed, check_health=False)
            except BaseException:
                self._quiet = False
                self._conn.disconnect()
                raise


class EventHub:
    """One pattern subscription per process, fanned out to the streams that follow a run: a
    published event is received and parsed once however many subscribers it has."""

    def __init__(self, broker_url: str) -> None:
        self.url = redis_url(broker_url)
        self._queues: dict[str, list[queue.Queue]] = {}
        self._lock = threading.Lock()
        self._listener = PerProcess(self._start_listener)
        self.subscribed = threading.Event()
        self.subscribers = 0  # streams following a run right now (for /metrics)

    @contextmanager
    def follow(self, run_id: str) -> Iterator[queue.Queue]:
        """A queue receiving (seq, line) for each event of `run_id` published from now on
        (at most INBOX_MAX waiting: later ones are dropped while it is full)."""
        if self.url is not None and not self._listener.made():
            self._listener.get()
            self.subscribed.wait(0.5)  # the first stream should not miss an early event
        inbox: queue.Queue = queue.Queue(INBOX_MAX)
        with self._lock:
            self._queues.setdefault(run_id, []).append(inbox)
            self.subscribers += 1
        try:
            yield inbox
        finally:
            with self._lock:
                inboxes = self._queues.get(run_id, [])
                if inbox in inboxes:
                    inboxes.remove(inbox)
                if not inboxes:
                    self._queues.pop(run_id, None)
                self.subscribers -= 1

    def _start_listener(self) -> threading.Thread:
        thread = threading.Thread(target=self._listen, name="event-hub", daemon=True)
        thread.start()
        return thread

    def _listen(self) -> None:
        import redis

        assert self.url is not None  # started only with a Redis broker
        while True:
            try:
                client = redis.Redis.from_url(
                    self.url, socket_connect_timeout=2, health_check_interval=30
                )
                pubsub = client.pubsub(ignore_subscribe_messages=True)
                pubsub.psubscribe(CHANNEL_PREFIX + "*")
                self.subscribed.set()
                for message in pubsub.listen():
                    if message.get("type") == "pmessage":
                        self._deliver(message["channel"], message["data"])
            except Exception as exc:  # streams fill the gap from the file meanwhile
                self.subscribed.clear()
                log.debug("event hub reconnecting: %s", exc)
                time.sleep(1.0)

    def _deliver(self, channel_name: bytes, data: bytes) -> None:
        run_id = channel_name.decode()[len(CHANNEL_PREFIX) :]
        with self._lock:
            inboxes = list(self._queues.get(run_id, ()))
        if not inboxes:
            return
        line = data.decode("utf-8", "replace")
        seq = _seq_of(line)
        for inbox in inboxes:
            try:
                inbox.put_nowait((seq, line))
            except queue.Full:  # its reader finds the event in the file
                pass


def _seq_of(line: str) -> int:
    """The seq of an event line, read without parsing the whole event."""
    at = line.find('"seq":')
    if at < 0:
        return 0
    digits = line[at + 6 : at + 26].split(",", 1)[0].strip()
    return int(digits) if digits.isdigit() else 0
