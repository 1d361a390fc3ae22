"""Event stream subscribers on the embedded default (one API with its default gevent workers).

`bench-ticker` waits 3 s (the subscribers connect), then prints a line every 0.2 s; each line
becomes a raw.stdout event the worker writes and publishes. N subscribers follow the run's
`GET /v1/jobs/{id}/events`; for every event each receives, latency = receipt time - the event's
`ts` (written by the worker; same host clock). At the same time one client asks
`GET /v1/jobs/{id}` in a loop: its p99 is compared with the same loop with no subscriber.
RSS per subscriber: the API processes' RSS with the subscribers connected minus before, / N.
"""

from __future__ import annotations

import json
import selectors
import socket
import threading
import time
from datetime import datetime

from bench.context import Context
from bench.stack import Stack, StackOptions
from bench.stats import Row, ratio, summarize

FIGURE = "sse-subscribers"


def _follow_all(
    port: int, rid: str, n: int, latencies: list[float], ready: threading.Event
) -> None:
    """`n` subscribers read by one thread (selectors): receipt times are not skewed by a
    client thread per stream waiting for the GIL. HTTP/1.0, so the body is the raw stream."""
    sel = selectors.DefaultSelector()
    request = f"GET /v1/jobs/{rid}/events HTTP/1.0\r\nAccept: text/event-stream\r\n\r\n".encode()
    for _ in range(n):
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(request)
        sock.setblocking(False)
        sel.register(sock, selectors.EVENT_READ, {"buf": b"", "head": False})
    ready.set()
    open_count = n
    while open_count:
        for key, _mask in sel.select(timeout=60):
            data = key.fileobj.recv(65536)
            received = time.time()
            state = key.data
            if not data:
                sel.unregister(key.fileobj)
                key.fileobj.close()
                open_count -= 1
                continue
            state["buf"] += data
            if not state["head"]:
                if b"\r\n\r\n" not in state["buf"]:
                    continue
                state["buf"] = state["buf"].split(b"\r\n\r\n", 1)[1]
                state["head"] = True
            *frames, state["buf"] = state["buf"].split(b"\n\n")
            for frame in frames:
                _measure(frame.decode(), received, latencies)


def _measure(frame: str, received: float, latencies: list[float]) -> None:
    fields = dict(line.split(": ", 1) for line in frame.splitlines() if ": " in line)
    if fields.get("event") != "chat_event":
        return
    event = json.loads(fields["data"])
    if event["type"] == "raw.stdout":
        written = datetime.fromisoformat(event["ts"].replace("Z", "+00:00")).timestamp()
        latencies.append(received - written)


def _status_times(stack: Stack, rid: str, n: int) -> list[float]:
    client = stack.client()
    return [client.get(f"/v1/jobs/{rid}").seconds for _ in range(n)]


def _rss(stack: Stack) -> int:
    return sum(p.memory_info().rss for p in stack.web_processes())


def run(ctx: Context) -> list[Row]:
    subscribers = ctx.count(200, 20)
    polls = ctx.count(300, 50)
    root = ctx.scratch(FIGURE)
    try:
        with Stack(root / "stack", StackOptions()) as stack:
            client = stack.client()
            ticks = {"ticks": 50, "tick_sec": 0.2, "wait_sec": 4}
            rid = client.post("/v1/jobs", {"skill_id": "bench-ticker", "parameter": ticks}).body[
                "request_id"
            ]
            baseline = _status_times(stack, rid, polls)
            rss_before = _rss(stack)
            latencies: list[float] = []
            ready = threading.Event()
            reader = threading.Thread(
                target=_follow_all, args=(stack.port, rid, subscribers, latencies, ready)
            )
            reader.start()
            ready.wait(timeout=60)
            time.sleep(1.0)  # every stream has its snapshot: they all wait on the run
            rss_with = _rss(stack)
            loaded = _status_times(stack, rid, polls)
            reader.join(timeout=180)
    finally:
        ctx.cleanup(root)
    lat, base, busy = summarize(latencies), summarize(baseline), summarize(loaded)
    per_sub = (rss_with - rss_before) / subscribers / 1024
    return [
        Row(
            FIGURE,
            f"event write -> receipt, {subscribers} SSE subscribers",
            lat.median,
            "s",
            None,
            "",
            None,
            "p99 <= 100 ms",
            lat.p99 <= 0.1,
            p99=lat.p99,
            note=f"{len(latencies)} receipts; API RSS +{per_sub:.0f} KiB per subscriber",
        ),
        Row(
            FIGURE,
            f"GET /v1/jobs/{{id}} with {subscribers} subscribers (client time)",
            busy.p99,
            "s",
            base.p99,
            "the same GET with no subscriber (p99)",
            ratio(busy.p99, base.p99),
            "p99 <= 2x",
            busy.p99 <= 2 * base.p99,
            note=f"p50 {busy.median * 1000:.1f} ms vs {base.median * 1000:.1f} ms; n={polls}",
        ),
    ]
