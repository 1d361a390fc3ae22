"""Noop throughput: the orchestration floor, with a script skill that does almost nothing.

`bench-noop` runs `printf '{"ok": true}'`. Sequential POST -> succeeded latency and sustained
throughput with 2 worker processes, vs a bare Celery task spawning the same command
(bench/bare_celery.py) with its own 2-process worker on the SAME broker. The runner's own time
split comes from the run rows (`timings`, created/queued/started/finished), and the database
writes per run from Postgres' row counters in a separate small pass on Postgres.

A run creates about 20 files and folders (the run directory's layout) and the bare task none,
so the throughput also depends on what creating a file costs at that moment, which on some
disks swings widely (bench/RESULTS.md, "What moves the numbers"). A second
service whose whole data directory is on tmpfs (/dev/shm) shows how much: its batches
alternate with the first's (same code, same moment), and its rows are printed beside the main
ones. Where the service boxes its runs by default (bwrap), a third service with
SKILL_RUNNER_SANDBOX=off takes its turn in the same loops: its rows show what of the overhead
is the box's.
"""

from __future__ import annotations

import contextlib
import statistics
import tempfile
from pathlib import Path

import psutil

from bench.bare_celery import BareWorker
from bench.box_mode import OFF, boxed_by_default
from bench.context import Context
from bench.cpu import cpu_per_run, cpu_row, service_groups
from bench.disk import creation_cost, tmpfs_dir
from bench.noop_jobs import bare_once, bare_throughput, runner_once, runner_throughput
from bench.run_costs import db_writes, time_split
from bench.stack import Stack, StackOptions
from bench.stats import Row, ratio, summarize

FIGURE = "noop-throughput"


def probe_row(probe: dict[str, list[float]]) -> Row:
    """What creating a file cost in the service's data directory just before and just after
    the throughput batches (the disk's phase, which moves the throughput: bench/disk.py)."""
    disk, fast = probe["disk"], probe["tmpfs"]
    note = "CPU per one-byte file, 1,000 files; before / after the batches: disk " + " / ".join(
        f"{v * 1e6:.0f} us" for v in disk
    )
    if fast:
        note += "; tmpfs " + " / ".join(f"{v * 1e6:.0f} us" for v in fast)
    return Row(
        FIGURE,
        "file creation beside the data directory, before the batches",
        disk[0] * 1e6,
        "us",
        fast[0] * 1e6 if fast else None,
        "the same on tmpfs" if fast else "",
        ratio(disk[0], fast[0]) if fast else None,
        note=note,
        extra={"disk": disk, "tmpfs": fast},
    )


def unboxed_rows(
    off, bare, off_tput: list[float], bare_tput: list[float], boxed_p50: float
) -> list[Row]:
    """The same figures from the service with SKILL_RUNNER_SANDBOX=off, taken in turn with the
    boxed one: what of the overhead is the box's."""
    to, tb = statistics.median(off_tput), statistics.median(bare_tput)
    pairs = [o / b for o, b in zip(off_tput, bare_tput)]
    return [
        Row(
            FIGURE,
            "noop script: POST -> succeeded, SKILL_RUNNER_SANDBOX=off (same loop)",
            off.median,
            "s",
            bare.median,
            "bare Celery task spawning the same command",
            ratio(off.median, bare.median),
            p99=off.p99,
            baseline_p99=bare.p99,
            note=f"p50 overhead {(off.median - bare.median) * 1000:.1f} ms; the box's share "
            f"{(boxed_p50 - off.median) * 1000:.1f} ms at p50",
        ),
        Row(
            FIGURE,
            "noop script throughput, SKILL_RUNNER_SANDBOX=off (same batches)",
            to,
            "/s",
            tb,
            "bare Celery task, 2 processes",
            ratio(to, tb),
            note=f"per-pair ratios {min(pairs):.3f}-{max(pairs):.3f}",
            extra={"per_batch": off_tput, "pair_ratios": pairs},
        ),
    ]


def run(ctx: Context) -> list[Row]:
    n_seq, n_tput, n_pairs, warm = ctx.count(200, 20), ctx.count(300, 40), ctx.count(6, 1), 5
    root = ctx.scratch(FIGURE)
    shm = tmpfs_dir()
    shm_root = Path(tempfile.mkdtemp(prefix=f"{FIGURE}-tmpfs-", dir=shm)) if shm else None
    try:
        with contextlib.ExitStack() as stacks:
            stack = stacks.enter_context(Stack(root / "stack"))
            bare = stacks.enter_context(BareWorker(root / "bare", stack.broker_url))
            fast = stacks.enter_context(Stack(shm_root / "stack")) if shm_root else None
            unboxed = None
            if boxed_by_default():
                options = StackOptions(extra_env=OFF)
                unboxed = stacks.enter_context(Stack(root / "unboxed", options))
            client, cwd = stack.client(), root
            off_client = unboxed.client() if unboxed is not None else None
            for _ in range(warm):
                runner_once(client)
                if off_client is not None:
                    runner_once(off_client)
                bare_once(bare, cwd)
            runner, rows_latency, bare_lat, off_lat = [], [], [], []
            for _ in range(n_seq):
                elapsed, row_s = runner_once(client)
                runner.append(elapsed)
                rows_latency.append(row_s)
                if off_client is not None:
                    off_lat.append(runner_once(off_client)[0])
                bare_lat.append(bare_once(bare, cwd))
            ctx.log(f"{FIGURE}: {n_seq} sequential pairs done")
            split = time_split(stack, warm)
            me = [psutil.Process()]
            broker = [psutil.Process(stack.broker.proc.pid)] if stack.broker.proc else []
            tput: dict[str, list[float]] = {"bare": [], "disk": [], "tmpfs": [], "unboxed": []}
            cpu: dict[str, list[dict[str, float]]] = {k: [] for k in tput}
            sides = {"disk": stack, **({"tmpfs": fast} if fast is not None else {})}
            if unboxed is not None:
                sides["unboxed"] = unboxed
            clients = {name: side.client() for name, side in sides.items()}
            for name in ("tmpfs", "unboxed"):  # warm: the run pool, the skill copy
                if name in sides:
                    runner_throughput(sides[name], clients[name], 50)
            probe = {
                "disk": [creation_cost(stack.root)],
                "tmpfs": [creation_cost(fast.root)] if fast is not None else [],
            }
            for pair in range(n_pairs):  # batches alternate: a drift hits every side alike
                took, used = cpu_per_run(
                    {"celery": bare.processes(), "bench client": me, "broker": broker},
                    lambda: bare_throughput(bare, cwd, n_tput),
                    n_tput,
                )
                tput["bare"].append(n_tput / took)
                cpu["bare"].append(used)
                order = list(sides) if pair % 2 == 0 else list(reversed(sides))
                for name in order:
                    side = sides[name]
                    side_broker = [psutil.Process(side.broker.proc.pid)] if side.broker.proc else []
                    took, used = cpu_per_run(
                        service_groups(side, me, side_broker),
                        lambda side=side, name=name: runner_throughput(side, clients[name], n_tput),
                        n_tput,
                    )
                    tput[name].append(n_tput / took)
                    cpu[name].append(used)
            for name, side in sides.items():
                if name in probe:
                    probe[name].append(creation_cost(side.root))
            ctx.log(
                f"{FIGURE}: throughput {[round(t) for t in tput['disk']]} (tmpfs "
                f"{[round(t) for t in tput['tmpfs']]}) vs bare {[round(t) for t in tput['bare']]}"
            )
    finally:
        ctx.cleanup(root)
        if shm_root:
            ctx.cleanup(shm_root)
    writes = db_writes(ctx, ctx.count(30, 5), FIGURE)
    r, rl, b = summarize(runner), summarize(rows_latency), summarize(bare_lat)
    overhead = r.median - b.median
    tr, tb = statistics.median(tput["disk"]), statistics.median(tput["bare"])
    pairs = [r / b for r, b in zip(tput["disk"], tput["bare"])]
    rows = [
        Row(
            FIGURE,
            "noop script: POST -> succeeded (client, sequential)",
            r.median,
            "s",
            b.median,
            "bare Celery task spawning the same command",
            ratio(r.median, b.median),
            "p50 overhead <= 15 ms",
            overhead <= 0.015,
            p99=r.p99,
            baseline_p99=b.p99,
            note=f"n={n_seq}; p50 overhead {overhead * 1000:.1f} ms (p99 "
            f"{(r.p99 - b.p99) * 1000:.1f} ms); status long-polled (?wait_sec)",
        ),
        Row(
            FIGURE,
            "noop script: POST -> run finished_at (row)",
            rl.median,
            "s",
            b.median,
            "bare Celery task",
            ratio(rl.median, b.median),
            "p50 overhead <= 15 ms",
            rl.median - b.median <= 0.015,
            p99=rl.p99,
            baseline_p99=b.p99,
            note=f"p50 overhead {(rl.median - b.median) * 1000:.1f} ms",
        ),
        Row(
            FIGURE,
            f"noop script throughput, {n_tput} at once, 2 worker processes",
            tr,
            "/s",
            tb,
            "bare Celery task, 2 processes",
            ratio(tr, tb),
            ">= 0.5x",
            ratio(tr, tb) >= 0.5,
            note=f"runs/s until the last finished_at; median of {len(pairs)} alternating batch pairs; "
            f"per-pair ratios {min(pairs):.3f}-{max(pairs):.3f} "
            f"(median {statistics.median(pairs):.3f})",
            extra={
                "runner_per_batch": tput["disk"],
                "bare_per_batch": tput["bare"],
                "pair_ratios": pairs,
            },
        ),
        cpu_row(FIGURE, cpu["disk"], cpu["bare"]),
        probe_row(probe),
    ]
    if tput["tmpfs"]:
        tf = statistics.median(tput["tmpfs"])
        fast_pairs = [f / b for f, b in zip(tput["tmpfs"], tput["bare"])]
        rows.append(
            Row(
                FIGURE,
                "noop script throughput, the data directory on tmpfs (same batches)",
                tf,
                "/s",
                tb,
                "bare Celery task, 2 processes",
                ratio(tf, tb),
                note=f"a second service, its data directory (runs, SQLite) on /dev/shm, its batches "
                f"alternating with the first's; per-pair ratios {min(fast_pairs):.3f}-"
                f"{max(fast_pairs):.3f}; CPU ms per run (medians): "
                + ", ".join(
                    f"{k} {v * 1000:.2f}"
                    for k, v in cpu_row(FIGURE, cpu["tmpfs"], cpu["bare"]).extra["runner"].items()
                ),
                extra={"per_batch": tput["tmpfs"], "pair_ratios": fast_pairs},
            )
        )
    if off_lat:
        rows += unboxed_rows(summarize(off_lat), b, tput["unboxed"], tput["bare"], r.median)
    rows += [
        Row(
            FIGURE,
            "runner time split (median per run)",
            sum(v for k, v in split.items() if k.startswith("total")),
            "s",
            note="; ".join(
                f"{k} {v * 1000:.1f} ms" for k, v in split.items() if not k.startswith("total")
            ),
            extra=split,
        ),
        Row(
            FIGURE,
            "DB row writes per run (Postgres counters)",
            sum(writes.values()),
            "rows",
            note="; ".join(f"{k} {v:.1f}" for k, v in writes.items()),
            extra=writes,
        ),
    ]
    return rows
