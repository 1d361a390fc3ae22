"""Jobs seen through the API: waiting until a batch is terminal, and their timestamps (API
strings and row datetimes) as epoch seconds."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from bench.client import Client
from runner_core.statuses import TERMINAL_STATUSES as TERMINAL


def parse_time(value: str | None) -> float | None:
    """An API timestamp (ISO 8601, Z) as epoch seconds."""
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def as_epoch(value: datetime | None) -> float | None:
    """A row's datetime (naive UTC on SQLite) as epoch seconds."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.timestamp()


def wait_terminal(
    client: Client, request_ids: list[str], wait_sec: float = 30.0, timeout: float = 600.0
) -> dict[str, dict]:
    """Wait until every job is terminal; their status documents.

    Jobs finish roughly in submission order, so only the newest pending one is waited for, with
    the long poll a client would use (`GET /v1/jobs/{id}?wait_sec=`); once it is terminal the
    others are swept once and whatever is still pending is waited for the same way. A batch
    thus costs about one status read per job (plus one per `wait_sec` of waiting), and it is
    measured from the rows' finished_at, not from when the client saw it."""
    pending, done = list(request_ids), {}
    end = time.monotonic() + timeout
    while pending:
        if time.monotonic() > end:
            raise TimeoutError(f"{len(pending)} jobs still not terminal")
        resp = client.get(f"/v1/jobs/{pending[-1]}?wait_sec={wait_sec:g}")
        body = resp.body
        if body.get("status") not in TERMINAL:
            if resp.seconds < wait_sec / 2:  # the wait ended early: the job needs the client
                time.sleep(0.2)
            continue
        done[pending.pop()] = body
        still = []
        for rid in pending:
            body = client.get(f"/v1/jobs/{rid}").body
            if body.get("status") in TERMINAL:
                done[rid] = body
            else:
                still.append(rid)
        pending = still
    return {rid: done[rid] for rid in request_ids}
