"""`skill-runner serve --layout processes`: the production layout on one host, as separate
processes (gunicorn's master and workers, a prefork Celery worker with its beat) watched by
this one, as a supervisor would: the embedded broker is restarted when it exits, gunicorn or the
worker too (a crash, an OOM kill) unless they stop too often; the demo LLM's exit stops all."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import cast

from launcher.demo_llm import DemoLLM
from launcher.embedded_broker import EmbeddedBroker
from runner_core.processes import terminate_group
from runner_core.settings import REPO_ROOT, Settings, hold_service_secrets

WATCH_SEC = 2.0  # how often the children are looked at
MAX_RESTARTS, RESTART_WINDOW_SEC = 5, 60.0  # a child's exits tolerated in a window
STOP_GRACE_SEC = 20.0  # a stopping child's time before SIGKILL


def serve_processes(
    settings: Settings,
    concurrency: int,
    broker: EmbeddedBroker | None,
    demo: DemoLLM | None,
    banner: str,
) -> int:
    """Start the processes and watch them until a signal or one exits; returns the exit code."""
    extra = [demo.start()] if demo is not None else []
    env = dict(
        os.environ,
        SKILL_RUNNER_DATA_DIR=str(settings.data_dir),
        SKILL_RUNNER_SKILLS_DIR=str(settings.skills_dir),
        **(demo.env() if demo else {}),
    )
    if broker is not None:
        try:
            broker.start()
        except BaseException:
            for proc in extra:
                proc.kill()
            raise
        env["CELERY_BROKER_URL"] = settings.broker_url
    # what each child is started with; None: not restarted (the demo LLM's exit stops all)
    commands: list[list[str] | None] = [*_commands(settings, concurrency), *[None] * len(extra)]
    procs = [_popen(argv, env) for argv in commands if argv is not None] + extra
    # the children have their copy of the environment: this process (the parent of the worker
    # the skill scripts run under) keeps no secret readable in /proc/<pid>/environ
    hold_service_secrets(settings)
    if demo is not None:
        print(demo.banner(), file=sys.stderr, flush=True)
    print(banner, flush=True)
    stopping = []
    # Set explicitly: a shell that starts us in the background leaves SIGINT ignored.
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: stopping.append(1))
    try:
        return _watch(procs, commands, env, broker, stopping)
    finally:
        _stop(procs)
        if broker:
            broker.stop()


def _commands(settings: Settings, concurrency: int) -> list[list[str]]:
    bin_dir = os.path.dirname(sys.executable)
    gunicorn = [
        os.path.join(bin_dir, "gunicorn"),
        "-c",
        str(REPO_ROOT / "deploy" / "gunicorn.conf.py"),
        "api.wsgi:app",
    ]
    worker = [
        os.path.join(bin_dir, "celery"),
        "-A",
        "worker.celery_app",
        "worker",
        "-B",
        "--loglevel",
        settings.log_level.lower(),
        "--concurrency",
        str(concurrency),
        "--schedule",
        str(settings.data_dir / "celerybeat-schedule"),
        "-n",
        "worker@%h",
    ]
    return [gunicorn, worker]


def _popen(argv: list[str], env: dict) -> subprocess.Popen:
    # a group of its own: what it leaves behind (a crashed worker's pool processes, holding our
    # output open) is ended with it
    return subprocess.Popen(argv, env=env, cwd=REPO_ROOT, process_group=0)


def _watch(
    procs: list[subprocess.Popen],
    commands: list[list[str] | None],
    env: dict,
    broker: EmbeddedBroker | None,
    stopping: list,
) -> int:
    restarts: list[float] = []
    while not stopping:
        # the broker first: a worker that exited because it went away needs it back
        if broker and broker.proc is not None and broker.proc.poll() is not None:
            # Memory only: the messages it held are re-sent from SQL by the sweeper.
            _say("the embedded broker exited; restarting it")
            try:
                broker.start()
            except RuntimeError as exc:
                _say(f"{exc}; stopping the service")
                return 1
        for i, proc in enumerate(procs):
            if proc.poll() is None:
                continue
            name = os.path.basename(cast(list[str], proc.args)[0])
            code = proc.returncode
            how = f"was stopped by signal {-code}" if code < 0 else f"exited with code {code}"
            now = time.monotonic()
            restarts = [t for t in restarts if now - t < RESTART_WINDOW_SEC] + [now]
            argv = commands[i]
            if argv is None or len(restarts) > MAX_RESTARTS:
                # exit non-zero so whatever supervises us restarts the whole service
                _say(f"{name} {how}; stopping the service")
                return 1
            _say(f"{name} {how}; starting it again")
            terminate_group(proc.pid, STOP_GRACE_SEC)
            procs[i] = _popen(argv, env)
        # a signal cuts the sleep short (PEP 475 resumes it: the loop then ends within it)
        time.sleep(WATCH_SEC)
    return 0


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _stop(procs: list[subprocess.Popen]) -> None:
    """SIGTERM every child's group at once, wait for them, then SIGKILL what is left."""
    for p in procs:
        _signal(p, signal.SIGTERM)
    end = time.monotonic() + STOP_GRACE_SEC
    for p in procs:
        try:
            p.wait(max(0.0, end - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    for p in procs:
        _signal(p, signal.SIGKILL)
        p.wait()


def _signal(proc: subprocess.Popen, sig: int) -> None:
    """Signal the child's group, or the child alone where it has none (the demo LLM)."""
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        if proc.poll() is None:
            proc.send_signal(sig)
