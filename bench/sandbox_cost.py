"""What the run box (runner_core/sandbox.py) costs.

Two services side by side: one with the box (SKILL_RUNNER_SANDBOX=auto: bwrap, the limits, a
pids cgroup), one with SKILL_RUNNER_SANDBOX=off. First the `bench-noop` script skill (one
process, `printf`), runs alternating between them (boxed then unboxed, then the other way
round, by turns), so drift on a shared machine hits both alike: the box's own cost per process,
with no engine around it (target: <= 5 ms at p50). Then the same codex prompt skill (one tool
call + final JSON from the fake LLM), alternating the same way; each run is observed as a
client does (POST, then one long poll of the result). Boxed, codex runs its tool calls without
its own sandbox (the box is the fence); unboxed, with its `workspace-write` sandbox: each side
as the service runs it.

Where the checkout's bwrap is built from Debian's source (deploy/install-sandbox.sh) and
Debian's binary package can be fetched, a third service boxes with that binary, its noop runs
taking their turn in the same loop: what the build saves per process.
"""

from __future__ import annotations

import contextlib
import subprocess
from pathlib import Path

from bench.codex_overhead import submit_and_wait
from bench.context import Context
from bench.engine import codex_setup
from bench.noop_jobs import runner_once
from bench.stack import Stack, StackOptions
from bench.stats import Row, median_ratio_interval, ratio, summarize
from runner_core.sandbox import LOCAL_BWRAP, find_bwrap

FIGURE = "sandbox-cost"
TARGET = 1.05
NOOP_TARGET_SEC = 0.005


def run(ctx: Context) -> list[Row]:
    if find_bwrap() is None:
        raise RuntimeError("sandbox-cost needs a working bwrap: deploy/install-sandbox.sh")
    n, n_noop = ctx.count(100, 6), ctx.count(200, 40)
    root = ctx.scratch(FIGURE)
    try:
        debian = debian_bwrap(root / "debian", ctx)
        with codex_setup(root) as codex, contextlib.ExitStack() as stacks:
            env = {**codex.worker_env(), "SKILL_RUNNER_SANDBOX": "auto"}
            off_env = {**env, "SKILL_RUNNER_SANDBOX": "off"}
            boxed = stacks.enter_context(Stack(root / "boxed", StackOptions(extra_env=env)))
            unboxed = stacks.enter_context(Stack(root / "unboxed", StackOptions(extra_env=off_env)))
            clients = [boxed.client(), unboxed.client()]
            if debian is not None:
                deb_env = {**env, "SKILL_RUNNER_BWRAP": str(debian)}
                other = stacks.enter_context(Stack(root / "deb", StackOptions(extra_env=deb_env)))
                clients.append(other.client())
            for _ in range(2):  # warm-up, not counted
                for client in clients:
                    submit_and_wait(client)
                    runner_once(client)
            noop = _alternate(clients, n_noop, lambda client: runner_once(client)[0])
            ctx.log(f"{FIGURE}: {n_noop} noop rounds")
            codex_in, codex_out = _alternate(
                clients[:2], n, lambda client: submit_and_wait(client).elapsed
            )
    finally:
        ctx.cleanup(root)
    rows = [_noop_row(noop[0], noop[1], n_noop)]
    if debian is not None:
        rows.append(_debian_row(noop[0], noop[2], n_noop))
    rows.append(_row("codex run in the box (client time)", codex_in, codex_out, n, TARGET))
    return rows


def debian_bwrap(folder: Path, ctx: Context) -> Path | None:
    """Debian's binary bwrap unpacked in `folder`, when the checkout's is built from source
    (None when it is not, or the package cannot be fetched)."""
    origin = LOCAL_BWRAP.parent.parent.parent / "origin"
    if not origin.is_file() or not origin.read_text().startswith("source "):
        return None
    folder.mkdir(parents=True)
    try:
        fetch = ["apt-get", "download", "bubblewrap"]
        subprocess.run(fetch, cwd=folder, capture_output=True, check=True, timeout=120)
        package = next(folder.glob("bubblewrap_*.deb"))
        subprocess.run(["dpkg-deb", "-x", str(package), str(folder)], check=True, timeout=60)
    except (OSError, subprocess.SubprocessError, StopIteration) as exc:
        ctx.log(f"{FIGURE}: Debian's bwrap package not fetched ({exc}): no row for it")
        return None
    return folder / "usr" / "bin" / "bwrap"


def _alternate(clients, n: int, once) -> list[list[float]]:
    """n runs on each side, by rounds; each round starts one side further along, so drift
    hits every side alike."""
    times: list[list[float]] = [[] for _ in clients]
    for i in range(n):
        for k in range(len(clients)):
            side = (i + k) % len(clients)
            times[side].append(once(clients[side]))
    return times


def _debian_row(built: list[float], debian: list[float], n: int) -> Row:
    """The boxed noop run with the checkout's bwrap against the same box with Debian's binary."""
    row = _row("bench-noop script run in the box, bwrap built from source", built, debian, n, None)
    row.baseline_name = "the same box with Debian's binary bwrap (same loop)"
    return row


def _noop_row(inside: list[float], outside: list[float], n: int) -> Row:
    """The box's own cost per script process: the p50 difference, boxed minus unboxed."""
    row = _row("bench-noop script run in the box (client time)", inside, outside, n, None)
    cost = row.value - (row.baseline or 0.0)
    row.target = f"box's own cost <= {NOOP_TARGET_SEC * 1000:.0f} ms at p50"
    row.met = cost <= NOOP_TARGET_SEC
    row.extra = {"cost_p50_sec": cost}
    return row


def _row(name: str, inside: list[float], outside: list[float], n: int, target: float | None) -> Row:
    a, b = summarize(inside), summarize(outside)
    lo, hi = median_ratio_interval(inside, outside)
    r = ratio(a.median, b.median)
    return Row(
        FIGURE,
        name,
        a.median,
        "s",
        b.median,
        "the same run with SKILL_RUNNER_SANDBOX=off",
        r,
        f"<= {target} at median" if target else "",
        (r is not None and r <= target) if target else None,
        p99=a.p99,
        baseline_p99=b.p99,
        note=f"n={n} pairs; p50 difference {1000 * (a.median - b.median):.1f} ms; "
        f"ratio's 95% interval {lo:.3f}-{hi:.3f}",
    )
