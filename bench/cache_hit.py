"""A cache hit, with no worker running.

One noop request runs once (worker up), then the worker is stopped and the same request is
POSTed again and again: each binds to the succeeded run (`cache_hit: true`) and its result is
read at once. Server time comes from gunicorn's access log (%(D)s); the baseline is GET
/healthz (one `SELECT 1`) served by the same processes in the same run.
"""

from __future__ import annotations

from bench.context import Context
from bench.jobs import wait_terminal
from bench.stack import Stack, StackOptions
from bench.stats import Row, ratio, summarize

FIGURE = "cache-hit"
BODY = {"skill_id": "bench-noop", "input": {"n": -1}}


def run(ctx: Context) -> list[Row]:
    n = ctx.count(1000, 50)
    root = ctx.scratch(FIGURE)
    try:
        with Stack(root / "stack", StackOptions(access_log=True)) as stack:
            client = stack.client()
            first = client.post("/v1/jobs", BODY).body["request_id"]
            if wait_terminal(client, [first])[first]["status"] != "succeeded":
                raise RuntimeError("the first noop run did not succeed")
            stack.stop_worker()
            for _ in range(20):  # warm both gunicorn workers
                client.post("/v1/jobs", BODY)
                client.get("/healthz")
            offset = stack.access_log_offset()
            client_post, client_total = [], []
            for _ in range(n):
                resp = client.post("/v1/jobs", BODY)
                if not resp.body.get("cache_hit"):
                    raise RuntimeError(f"expected a cache hit: {resp.body}")
                result = client.get(f"/v1/jobs/{resp.body['request_id']}/result")
                if result.body["result"]["data"] != {"ok": True}:
                    raise RuntimeError(f"cached result unreadable: {result.body}")
                client_post.append(resp.seconds)
                client_total.append(resp.seconds + result.seconds)
                client.get("/healthz")
            server_post = stack.server_times("POST", "/v1/jobs", offset)
            server_result = stack.server_times("GET", "/v1/jobs/", offset)
            server_health = stack.server_times("GET", "/healthz", offset)
    finally:
        ctx.cleanup(root)
    sp, sh, sr = summarize(server_post), summarize(server_health), summarize(server_result)
    ct = summarize(client_total)
    return [
        Row(
            FIGURE,
            "cache hit: POST /v1/jobs server time (no worker)",
            sp.median,
            "s",
            sh.median,
            "GET /healthz server time",
            ratio(sp.median, sh.median),
            "p50 <= 5 ms",
            sp.median <= 0.005,
            p99=sp.p99,
            baseline_p99=sh.p99,
            note=f"n={n}",
        ),
        Row(
            FIGURE,
            "cache hit: POST + GET result, client time",
            ct.median,
            "s",
            sh.median,
            "GET /healthz server time",
            ratio(ct.median, sh.median),
            p99=ct.p99,
            note=f"GET result server p50 {sr.median * 1000:.1f} ms",
        ),
    ]
