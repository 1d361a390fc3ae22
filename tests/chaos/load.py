"""The chaos test's load: clients that keep a number of jobs in flight through every fault.

A client sends each job with an Idempotency-Key and sends it again, same key, until it is
answered 200: a request whose answer was lost (API killed, database away) is then the same job,
never a second one. A job counts as accepted once a 200 names its request id.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg

RETRY_SEC = 0.5
GIVE_UP_SEC = 120.0  # a job not accepted in this long is counted as refused


def call(base_url: str, method: str, path: str, body: Any = None,
         headers: dict[str, str] | None = None, timeout: float = 30.0) -> tuple[int, Any]:  # fmt: skip
    """One HTTP request on a fresh connection: (status, parsed JSON or None). OSError when
    there is no answer."""
    url = urlsplit(base_url)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=timeout)
    try:
        data = json.dumps(body).encode() if body is not None else None
        hdrs = {"content-type": "application/json", **(headers or {})}
        conn.request(method, path, body=data, headers=hdrs)
        resp = conn.getresponse()
        raw = resp.read()
        try:
            return resp.status, json.loads(raw) if raw else None
        except ValueError:
            return resp.status, None
    except http.client.HTTPException as exc:
        raise OSError(str(exc)) from exc
    finally:
        conn.close()


@dataclass
class Job:
    key: str
    body: dict
    expect: dict  # the result's data that the inputs call for
    sent_at: float = 0.0
    request_id: str | None = None
    attempts: int = 0  # POSTs it took


@dataclass
class Load:
    """Submitters keeping `in_flight` jobs queued or running; `make(i)` builds job i."""

    base_url: str
    database_url: str
    make: Any
    in_flight: int = 300
    submitters: int = 3
    jobs: list[Job] = field(default_factory=list)
    refused: list[tuple[Job, Any]] = field(default_factory=list)
    post_errors: dict[str, int] = field(default_factory=dict)
    active: int = 0  # queued + running, as last counted
    stop_event: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._next = 0
        self._threads = [threading.Thread(target=self._count_loop, daemon=True)]
        self._threads += [
            threading.Thread(target=self._submit_loop, daemon=True) for _ in range(self.submitters)
        ]
        self._pending = 0  # accepted since the last count

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self.stop_event.set()
        for thread in self._threads:
            thread.join(GIVE_UP_SEC + 30)

    def accepted(self) -> list[Job]:
        with self._lock:
            return [j for j in self.jobs if j.request_id]

    def _count_loop(self) -> None:
        while not self.stop_event.is_set():
            try:
                with psycopg.connect(self.database_url, connect_timeout=2) as conn:
                    row = conn.execute(
                        "SELECT count(*) FROM runs WHERE status IN ('queued', 'running')"
                    ).fetchone()
                with self._lock:
                    self.active, self._pending = row[0] if row else 0, 0
            except psycopg.Error:
                pass  # the database is away: the count stays, the POSTs fail meanwhile
            self.stop_event.wait(0.5)

    def _submit_loop(self) -> None:
        while not self.stop_event.is_set():
            with self._lock:
                room = self.active + self._pending < self.in_flight
                if room:
                    job = self.make(self._next)
                    self._next += 1
                    self.jobs.append(job)
                    self._pending += 1
            if not room:
                self.stop_event.wait(0.05)
                continue
            self.submit(job)

    def submit(self, job: Job) -> None:
        """POST until answered 200 (same key each time), refused, or GIVE_UP_SEC passed."""
        job.sent_at = time.time()
        headers = {"Idempotency-Key": job.key}
        while time.time() - job.sent_at < GIVE_UP_SEC:
            job.attempts += 1
            try:
                status, body = call(self.base_url, "POST", "/v1/jobs", job.body, headers, 15)
            except OSError as exc:
                self._error(type(exc).__name__)
                time.sleep(RETRY_SEC)
                continue
            if status == 200:
                job.request_id = body["request_id"]
                return
            code = (body or {}).get("error", {}).get("code", "?")
            self._error(f"{status} {code}")
            if status < 500 and status != 429:
                break
            time.sleep(RETRY_SEC)
        with self._lock:
            self.refused.append((job, job.attempts))

    def _error(self, what: str) -> None:
        with self._lock:
            self.post_errors[what] = self.post_errors.get(what, 0) + 1


def ledger_counts(ledger: Path) -> dict[str, int]:
    """request id -> executions recorded by the chaos-ledger skill (one line each)."""
    return {p.name: len(p.read_text().splitlines()) for p in ledger.iterdir()}
