"""`python -m bench.ab OTHER [--pairs N] [--runs N] [--env-this K=V] [--env-other K=V]`: is
this checkout's noop throughput (the noop-throughput figure) better or worse than OTHER's
(another checkout, e.g. `git worktree add ../base HEAD~1`, or `.` with `--env-*` to compare
settings of one checkout, e.g. `--env-other GUNICORN_CMD_ARGS="--threads 8"`)?

A shared machine's speed can move a lot within minutes, so two bench runs one after the other
compare its phases, not the code. Here both services are up at once (each its own broker, SQLite
and processes, idle while the other works) and their batches alternate, the order
flipping every pair; each pair's ratio (this / OTHER) is printed, then the medians.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from bench.context import stop_on_signals
from bench.cpu import cpu_seconds
from bench.noop_jobs import SKILL_ID, runner_throughput
from bench.stack import REPO_ROOT, Stack, StackOptions


def batch(stack: Stack, client, runs: int) -> tuple[float, float]:
    """(runs/s, CPU ms per run of the Celery pool processes) of one batch."""
    pool = stack.worker_processes()[1:]
    before = sum(cpu_seconds(pool).values())
    seconds = runner_throughput(stack, client, runs)
    after = sum(cpu_seconds(pool).values())
    return runs / seconds, (after - before) * 1000 / runs


def env_pairs(items: list[str], parser: argparse.ArgumentParser) -> dict[str, str]:
    """KEY=VALUE options as a dict (an error names the bad one)."""
    env = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            parser.error(f"expected KEY=VALUE, not {item!r}")
        env[key] = value
    return env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.ab",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("other", type=Path, help="the other checkout (its own working tree)")
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--runs", type=int, default=300, help="noop jobs per batch")
    parser.add_argument(
        "--env-this",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra environment of this checkout's service (repeatable)",
    )
    parser.add_argument(
        "--env-other",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra environment of OTHER's service (repeatable)",
    )
    args = parser.parse_args(argv)
    stop_on_signals()
    envs = {"this": env_pairs(args.env_this, parser), "other": env_pairs(args.env_other, parser)}
    other = args.other.resolve()
    if not (other / "worker" / "tasks.py").is_file():
        parser.error(f"{other} is not a checkout of this project")
    root = Path(tempfile.mkdtemp(prefix="skill-runner-ab-"))
    names = {"this": REPO_ROOT, "other": other}
    stacks: dict[str, Stack] = {}
    try:
        for name, code in names.items():
            stacks[name] = Stack(
                root / name, StackOptions(code=code, extra_env=envs[name])
            ).__enter__()
        clients = {name: stack.client() for name, stack in stacks.items()}
        for name, stack in stacks.items():  # warm: the run pool, imports, the skill copy
            runner_throughput(stack, clients[name], 50)
        results: dict[str, list[tuple[float, float]]] = {"this": [], "other": []}
        for pair in range(args.pairs):
            order = ("this", "other") if pair % 2 == 0 else ("other", "this")
            for name in order:
                results[name].append(batch(stacks[name], clients[name], args.runs))
            this, that = results["this"][-1], results["other"][-1]
            print(
                f"pair {pair + 1}: this {this[0]:.0f}/s (pool {this[1]:.2f} ms/run), other "
                f"{that[0]:.0f}/s (pool {that[1]:.2f} ms/run): ratio {this[0] / that[0]:.3f}",
                flush=True,
            )
        ratios = [a[0] / b[0] for a, b in zip(results["this"], results["other"])]
        for name in names:
            rates = [r[0] for r in results[name]]
            pool = [r[1] for r in results[name]]
            extra = "".join(f" {k}={v}" for k, v in envs[name].items())
            print(
                f"{name} ({names[name]}{extra}): median {statistics.median(rates):.1f} runs/s, pool "
                f"CPU {statistics.median(pool):.2f} ms/run"
            )
        print(
            f"this / other throughput: median {statistics.median(ratios):.3f} "
            f"(pairs {min(ratios):.3f}-{max(ratios):.3f}; skill {SKILL_ID}, {args.runs} runs a "
            f"batch)"
        )
    finally:
        for stack in stacks.values():
            stack.stop()
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
