"""Run any engine adapter for real against the fake LLM server.

One scenario for every engine: make a run dir (a git repo, so no skill leaks in from its
ancestors), install the probe skill into each of the adapter's `skill_dirs`, build the command
with the adapter, run it like the supervisor does (own session, stdin /dev/null, a timeout, logs
opened for append so a resumed turn lands in the same stdout log, read from where it starts) and hand back the adapter's
`EngineOutput` plus the fake server's request log.

Adding an engine means adding its entry to `FAKE_CONFIG` (how it reaches the fake server), a
row in test_every_engine.ENGINES and, for what only it does, a test module of its own.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import pytest

from fake_llm import FakeLLM, RecordedRequest, Script
from runner_core.engines.base import (
    CommandSpec,
    EngineAdapter,
    EngineContext,
    EngineOutput,
    ProcessResult,
)
from runner_core.engines.invocation import resolve_binary
from runner_core.processes import stop_process_group
from runner_core.settings import REPO_ROOT

PROBE_SKILL_DIR = Path(__file__).resolve().parent / "probe-skill"
PROBE_SKILL = "probe-skill"
PROBE_TOKEN = "ZQXPROBE42"  # in the skill's description: proves the skill was advertised
PROBE_BODY_TOKEN = "ZQXBODY77"  # in the skill's body: proves it was activated/read
MARKER_FILE = "made-by-agent.txt"
PROBE_COMMAND = f"printf probe > {MARKER_FILE}"
PROBE_PROMPT = "Use the probe-skill skill, then answer with its JSON result."
FAKE_KEY = "fake-key"
FAKE_MODEL = "fake-model"


def _openai_style(llm: FakeLLM) -> dict[str, Any]:
    return {"base_url": f"{llm.base_url}/v1", "api_key": FAKE_KEY, "model": FAKE_MODEL}


def _root_style(llm: FakeLLM) -> dict[str, Any]:
    return {"base_url": llm.base_url, "api_key": FAKE_KEY, "model": FAKE_MODEL}


# Engine -> the config that points its adapter at the fake server (the base URL forms are in
# each adapter's module docstring).
FAKE_CONFIG: dict[str, Callable[[FakeLLM], dict[str, Any]]] = {
    "codex": _openai_style,  # Responses API under /v1
    "claude": _root_style,  # ANTHROPIC_BASE_URL without /v1
    "gemini": _root_style,  # GOOGLE_GEMINI_BASE_URL without /v1beta
    "opencode": _openai_style,  # Chat Completions under /v1
    "kilo": _openai_style,  # Chat Completions under /v1 (an opencode fork)
    "qwen": _openai_style,  # OPENAI_BASE_URL under /v1
    "iflow": _openai_style,
}


def fake_engine_config(folder: Path, llm: FakeLLM, engines: Iterable[str] = ("codex",)) -> Path:
    """A copy of the shipped engine configuration at `folder` (SKILL_RUNNER_ENGINE_CONFIG_DIR)
    where each of `engines` is pointed at `llm` by its enforced.json."""
    shutil.copytree(REPO_ROOT / "deploy" / "engine-config", folder)
    for engine in engines:
        (folder / engine).mkdir(exist_ok=True)
        (folder / engine / "enforced.json").write_text(json.dumps(FAKE_CONFIG[engine](llm)))
    return folder


# How long one run may take; kilo (a 170 MB single-file binary) needs ~25 s of CPU per run, so
# on a busy machine it needs more than the others' default.
RUN_SECONDS = {"kilo": 300.0}


@dataclass
class ScenarioResult:
    """What one real run produced."""

    output: EngineOutput
    requests: list[RecordedRequest]
    request_text: str
    run_dir: Path
    spec: CommandSpec
    process: ProcessResult
    seconds: float
    stdout: str = ""
    stderr: str = ""
    usage: dict[str, int] = field(default_factory=dict)  # the fake LLM's answers' counts, added
    extra: dict[str, Any] = field(default_factory=dict)


def require_binary(adapter: EngineAdapter) -> Path:
    """The adapter's binary; a missing one fails the test under CI and skips it otherwise."""
    path = resolve_binary(adapter.binary)
    if path is None:
        reason = (
            f"{adapter.binary} CLI not installed: run deploy/install-engines.sh "
            f"(or set SKILL_RUNNER_ENGINE_BIN_DIR)"
        )
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return path


def make_run_dir(base: Path, adapter: EngineAdapter, skill_src: Path = PROBE_SKILL_DIR) -> Path:
    """A fresh run dir: a git repo holding the skill in each of the adapter's skill dirs."""
    run_dir = base / f"run-{adapter.name}"
    run_dir.mkdir(parents=True)
    for rel in adapter.skill_dirs:
        shutil.copytree(skill_src, run_dir / rel / skill_src.name)
    subprocess.run(["git", "init", "-q", str(run_dir)], check=True, stdin=subprocess.DEVNULL)
    return run_dir


@dataclass
class EngineBox:
    """A real CLI's adapter, a run directory under `data/runs` and the box a worker gives it."""

    adapter: EngineAdapter
    data: Path
    run_dir: Path
    box: Any  # runner_core.sandbox.Box

    def run(self, spec: CommandSpec, egress: Any = None) -> ProcessResult:
        """`spec` to its end in the engine's box (`egress`: its network box's EgressPlan)."""
        from worker.execution.supervisor import Watch, run_command

        logs = self.run_dir / "logs"
        logs.mkdir()
        watch = Watch(box=self.box.for_engine(), egress=egress)
        return run_command(spec, logs / "stdout.txt", logs / "stderr.txt", watch)


def engine_box(tmp_path: Path, engine: str) -> EngineBox:
    """The box tests' setup: bubblewrap must work here and the CLI be installed."""
    from runner_core.engines import get_adapter
    from runner_core.sandbox import Limits, find_bwrap, plan_box
    from runner_core.skills.model import Automation

    if find_bwrap() is None:
        pytest.fail("bubblewrap must work here: deploy/install-sandbox.sh installs it")
    adapter = get_adapter(engine)
    require_binary(adapter)
    data = tmp_path / "data"
    run_dir = make_run_dir(data / "runs", adapter)
    box = plan_box("auto", Limits(4 * 1024**3, 1024, 4096), run_dir, Automation(), (data,))
    assert box is not None and box.bwrap is not None
    return EngineBox(adapter, data, run_dir, box)


def run_spec(
    spec: CommandSpec, log_dir: Path, timeout: float, stop_when: Callable[[], bool] | None = None
) -> ProcessResult:
    """Run a CommandSpec like the supervisor: files first, own session, kill group on timeout;
    with `stop_when`, also stop it (as a cancel) a second after that first holds."""
    for rel, content in spec.files.items():
        target = Path(spec.cwd) / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
    log_dir.mkdir(parents=True, exist_ok=True)
    stdout_path, stderr_path = log_dir / "stdout.txt", log_dir / "stderr.txt"
    # where this process's output starts: a resumed turn appends to the same logs
    offsets = {
        "stdout_from": stdout_path.stat().st_size if stdout_path.exists() else 0,
        "stderr_from": stderr_path.stat().st_size if stderr_path.exists() else 0,
    }
    started = time.time()
    timed_out, exit_code = False, None
    with stdout_path.open("ab") as out, stderr_path.open("ab") as err:  # like the supervisor
        try:
            proc = subprocess.Popen(
                spec.argv,
                cwd=spec.cwd,
                env=spec.env,
                stdout=out,
                stderr=err,
                stdin=subprocess.PIPE if spec.stdin is not None else subprocess.DEVNULL,
                start_new_session=True,
            )
        except FileNotFoundError as exc:
            err.write(f"cannot start {spec.argv[0]}: {exc}\n".encode())
            return ProcessResult(127, stdout_path, stderr_path, started, time.time(), **offsets)
        if stop_when is not None:
            canceled = _stopped_when(proc, spec.stdin, timeout, stop_when)
            exit_code = None if canceled else proc.returncode
            return ProcessResult(
                exit_code,
                stdout_path,
                stderr_path,
                started,
                time.time(),
                canceled=canceled,
                cwd=spec.cwd,
                **offsets,
            )
        try:
            proc.communicate(
                spec.stdin.encode() if spec.stdin is not None else None, timeout=timeout
            )
            exit_code = proc.returncode
        except subprocess.TimeoutExpired:
            timed_out = True
            stop_process_group(proc, 0)
    return ProcessResult(
        exit_code,
        stdout_path,
        stderr_path,
        started,
        time.time(),
        timed_out=timed_out,
        cwd=spec.cwd,
        **offsets,
    )


def _stopped_when(
    proc: subprocess.Popen, stdin: str | None, timeout: float, stop_when: Callable[[], bool]
) -> bool:
    """Wait for `proc`; stop its group a second after `stop_when()` first holds (True), or
    fail the test at `timeout`."""
    if proc.stdin is not None:
        proc.stdin.write((stdin or "").encode())
        proc.stdin.close()
    deadline, stop_at = time.monotonic() + timeout, None
    while proc.poll() is None:
        now = time.monotonic()
        if stop_at is None and stop_when():
            stop_at = now + 1.0  # as a timeout or cancel would: a moment after, not at once
        if stop_at is not None and now >= stop_at:
            stop_process_group(proc, 3)
            return True
        if now >= deadline:
            stop_process_group(proc, 0)
            pytest.fail(f"{proc.args[0]} did not reach the point to stop it in {timeout} s")
        time.sleep(0.05)
    return False


def run_scenario(
    adapter: EngineAdapter,
    base: Path,
    script: Script,
    *,
    prompt: str = PROBE_PROMPT,
    config: Mapping[str, Any] | None = None,
    session_id: str | None = None,
    run_dir: Path | None = None,
    timeout: float | None = None,
    log_name: str = "logs",
    stop_when: Callable[[FakeLLM], bool] | None = None,
    output_schema_path: Path | None = None,
) -> ScenarioResult:
    """Run `adapter` once against a fresh fake LLM server following `script`.

    `config` is merged over the engine's FAKE_CONFIG entry; pass `run_dir` (and `session_id`)
    of an earlier result to resume in the same run dir; `stop_when(llm)`: the CLI is stopped
    (a cancel) a second after it first holds; `output_schema_path`: the skill's output schema.
    """
    require_binary(adapter)
    run_dir = run_dir or make_run_dir(base, adapter)
    with FakeLLM(script) as llm:
        merged = {**FAKE_CONFIG[adapter.name](llm), **(config or {})}
        ctx = EngineContext(
            run_dir=run_dir,
            skill_id=PROBE_SKILL,
            prompt=prompt,
            config=merged,
            model=merged.get("model"),
            session_id=session_id,
            output_schema_path=output_schema_path,
        )
        spec = adapter.build_command(ctx)
        started = time.monotonic()
        stop = (lambda: stop_when(llm)) if stop_when is not None else None
        limit = timeout or RUN_SECONDS.get(adapter.name, 120.0)
        process = run_spec(spec, run_dir / log_name, limit, stop)
        seconds = time.monotonic() - started
        requests = list(llm.requests)
        request_text = llm.request_text()
        usage = llm.usage_total()
    return ScenarioResult(
        output=adapter.parse_output(process),
        requests=requests,
        request_text=request_text,
        run_dir=run_dir,
        spec=spec,
        process=process,
        seconds=seconds,
        stdout=process.stdout_path.read_text(errors="replace"),
        stderr=process.stderr_path.read_text(errors="replace"),
        usage=usage,
    )


@contextmanager
def node_counts(folder: Path, every: float = 0.05) -> Iterator[list[int]]:
    """While the block runs, sample every `every` s the node processes whose working directory
    is inside `folder` (a CLI's run dir); after the block the yielded list holds one count per
    sample. A process seen in one sample only is left out: a Node CLI's child between its fork
    and its exec of a tool (a shell, git) is briefly a `node` too; a relaunched CLI lives on."""
    counts: list[int] = []
    samples: list[set[int]] = []
    done = threading.Event()
    root = str(Path(folder).resolve())

    def sample() -> None:
        while not done.is_set():
            found = set()
            for proc in psutil.process_iter(["name", "cwd"]):
                cwd = proc.info.get("cwd") or ""
                if proc.info.get("name") == "node" and (
                    cwd == root or cwd.startswith(root + os.sep)
                ):
                    found.add(proc.pid)
            samples.append(found)
            done.wait(every)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield counts
    finally:
        done.set()
        thread.join()
        for i, pids in enumerate(samples):
            around = set().union(*samples[max(0, i - 1) : i], *samples[i + 1 : i + 2])
            counts.append(len(pids & around))


def counted_as_sent(tokens: Mapping[str, Any] | None, sent: Mapping[str, int]) -> bool:
    """Whether an adapter's token counts are the fake LLM's for every count the CLI passed on
    (input and output always; cached and reasoning where it reports them; its cost aside)."""
    counts = {k: v for k, v in (tokens or {}).items() if k != "cost_usd"}
    return {"input_tokens", "output_tokens"} <= counts.keys() and counts == {
        k: sent.get(k) for k in counts
    }
