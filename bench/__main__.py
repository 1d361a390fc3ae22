"""`python -m bench [figure ...] [--quick] [--json PATH]`: run the figures, print each with its
baseline from the same run and the ratio, then a summary table. Figures are named by what they
measure (`codex-overhead noop-throughput`); the numbers 1-23 are accepted too."""

from __future__ import annotations

import argparse
import importlib
import json
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path

from bench.box_mode import describe
from bench.context import Context, stop_on_signals
from bench.stats import Row, render_row

FIGURES = {
    "codex-overhead": "bench.codex_overhead",
    "codex-throughput": "bench.codex_throughput",
    "runner-cpu": "bench.codex_throughput",  # measured over codex-throughput's batches
    "noop-throughput": "bench.noop_throughput",
    "cache-hit": "bench.cache_hit",
    "many-runs": "bench.many_runs",
    "streaming-memory": "bench.streaming_memory",
    "batch-submit": "bench.batch_submit",
    "client-batch": "bench.client_batch",
    "sse-subscribers": "bench.events",
    "events-cost": "bench.events_cost",
    "worker-slots": "bench.worker_slots",
    "reply-latency": "bench.reply_latency",
    "waiting-runs": "bench.waiting_runs",
    "codex-resume": "bench.codex_resume",
    "run-page": "bench.run_page",
    "chaos": "bench.chaos",
    "composite-fanout": "bench.composite_fanout",
    "composite-chain": "bench.composite_chain",
    "sandbox-cost": "bench.sandbox_cost",
    "broker-view": "bench.broker_view",
    "revoke-watch": "bench.revoke_watch",
    "repair-rounds": "bench.repair_rounds",
    "footprint": "bench.footprint",
    "kilo-overhead": "bench.kilo_overhead",
}
NUMBERS = {str(i): name for i, name in enumerate(FIGURES, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument(
        "figures", nargs="*", help=f"figures to run ({', '.join(FIGURES)}); default: all"
    )
    parser.add_argument("--quick", action="store_true", help="small counts: a smoke run")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    parser.add_argument("--tmp", type=Path, default=None, help="scratch directory parent")
    args = parser.parse_args(argv)
    stop_on_signals()
    wanted = [NUMBERS.get(f, f) for f in args.figures] or list(FIGURES)
    unknown = [f for f in wanted if f not in FIGURES]
    if unknown:
        parser.error(f"unknown figures: {', '.join(unknown)} (choose from {', '.join(FIGURES)})")
    modules = list(dict.fromkeys(FIGURES[f] for f in wanted))
    root = Path(tempfile.mkdtemp(prefix="skill-runner-bench-", dir=args.tmp))
    ctx = Context(quick=args.quick, root=root)
    rows: list[Row] = []
    failed = []
    configuration = describe()
    print(configuration, flush=True)
    try:
        for name in modules:
            ctx.log(f"running {name}")
            started = time.monotonic()
            try:
                new = importlib.import_module(name).run(ctx)
            except Exception:
                traceback.print_exc()
                failed.append(name)
                continue
            for row in new:
                print(render_row(row), flush=True)
            rows.extend(new)
            ctx.log(f"{name} took {time.monotonic() - started:.0f}s")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"\nsummary ({configuration})")
    for row in rows:
        print("  " + render_row(row))
    if args.json:
        args.json.write_text(json.dumps([r.as_dict() for r in rows], indent=2))
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
