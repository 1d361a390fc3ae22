"""A real engine CLI (codex unless named) against the fake LLM: an engine config dir for the
service, and bare invocations built exactly the way the worker builds them
(worker/execution/engine.py)."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.stack import REPO_ROOT

SKILL_ID = "bench-codex-echo"  # a prompt skill of every engine a figure runs (codex, kilo)
TEXT = "hello"
RESULT = {"text": TEXT, "length": len(TEXT)}
ROOT_URL_ENGINES = frozenset({"claude", "gemini"})  # base URL without /v1 (their adapters)


@dataclass
class CodexSetup:
    """What the service and the bare runs need to reach the fake LLM."""

    base_url: str
    config_dir: Path

    def worker_env(self) -> dict[str, str]:
        return {"SKILL_RUNNER_ENGINE_CONFIG_DIR": str(self.config_dir)}


@contextmanager
def codex_setup(root: Path, script: Any = None, engine: str = "codex") -> Iterator[CodexSetup]:
    """Fake LLM (one tool call, then the final JSON; or `script`) + engine config dir
    enforcing it for `engine`."""
    from fake_llm import FakeLLM, Script
    from runner_core.engines import get_adapter
    from runner_core.engines.config import CONFIG_DIR_ENV
    from runner_core.engines.invocation import resolve_binary

    if resolve_binary(get_adapter(engine).binary) is None:
        raise RuntimeError(f"the {engine} CLI is not installed (deploy/install-engines.sh)")
    script = script or Script(command=f"echo {TEXT}", final_text=json.dumps(RESULT))
    with FakeLLM(script) as llm:
        config_dir = root / "engine-config"
        shutil.copytree(REPO_ROOT / "deploy" / "engine-config", config_dir, dirs_exist_ok=True)
        base_url = llm.base_url if engine in ROOT_URL_ENGINES else f"{llm.base_url}/v1"
        (config_dir / engine).mkdir(exist_ok=True)
        (config_dir / engine / "enforced.json").write_text(
            json.dumps({"base_url": base_url, "api_key": "fake-key", "model": "fake-model"})
        )
        previous = os.environ.get(CONFIG_DIR_ENV)
        os.environ[CONFIG_DIR_ENV] = str(config_dir)
        try:
            yield CodexSetup(llm.base_url, config_dir)
        finally:
            if previous is None:
                os.environ.pop(CONFIG_DIR_ENV, None)
            else:
                os.environ[CONFIG_DIR_ENV] = previous
            _trim(llm)


def _trim(llm) -> None:
    """The fake server keeps every request; drop them so long runs stay small."""
    try:
        llm.requests.clear()
    except AttributeError:
        pass


@dataclass
class BareRun:
    """A prepared run directory and the exact command the worker would run in it."""

    run_dir: Path
    argv: list[str]
    env: dict[str, str]
    stdin: str | None
    ctx: Any = None  # the EngineContext the command was built from (a resume starts from it)
    engine: str = "codex"


def prepare_bare(
    runs_dir: Path,
    skills_dir: Path,
    skill_id: str = SKILL_ID,
    mode: str = "auto",
    engine: str = "codex",
) -> BareRun:
    """A fresh run dir with the skill installed as worker/execution/engine.py does, and the
    command from `get_adapter(engine).build_command(EngineContext(...))`; `mode` is the run's
    execution_mode (its prompt and SKILL.md tell the agent the interactive protocol)."""
    from runner_core.engines import get_adapter
    from runner_core.engines.base import EngineContext
    from runner_core.engines.config import load_engine_config
    from runner_core.inputs import resolve_inputs
    from runner_core.prompts import PromptContext, patch_skill_md, render_prompt
    from runner_core.skills import load_skill
    from runner_core.workspace import (
        create_run_dir,
        install_skill_copy,
        snapshot_skill,
        write_git_marker,
        write_json,
    )

    paths = create_run_dir(runs_dir, str(uuid.uuid4()))
    adapter = get_adapter(engine)
    pkg = load_skill(snapshot_skill(skills_dir / skill_id, paths, skill_id, adapter.skill_dirs[0]))
    resolved = resolve_inputs(
        pkg.input_schema, pkg.parameter_schema, paths.uploads, {"text": TEXT}, {}
    )
    write_json(paths.resolved_input, {"input": resolved.input, "parameter": resolved.parameter})
    options = {} if mode == "auto" else {"execution_mode": mode}
    config = load_engine_config(
        engine, skill_dir=pkg.root, user={"model": None, "runtime_options": options}
    )
    prompt_ctx = PromptContext(resolved.input, resolved.parameter, paths.root, engine, mode)
    prompt = render_prompt(pkg, prompt_ctx)
    (paths.logs / "prompt.txt").write_text(prompt, encoding="utf-8")
    patch_skill_md(pkg.root, pkg, prompt_ctx)
    install_skill_copy(pkg.root, paths, adapter.skill_dirs)
    write_git_marker(paths.root)
    ctx = EngineContext(
        run_dir=paths.root,
        skill_id=pkg.id,
        prompt=prompt,
        config=config,
        model=config.get("model"),
        output_schema_path=pkg.root / pkg.manifest.schemas["output"],
        execution_mode=mode,
    )
    return bare_command(paths.root, ctx, engine)


def bare_command(run_dir: Path, ctx: Any, engine: str = "codex") -> BareRun:
    """The `engine` command of `ctx` (an EngineContext) with its files written, as the
    worker's supervisor does before it starts the command."""
    from runner_core.engines import get_adapter

    spec = get_adapter(engine).build_command(ctx)
    for rel, content in spec.files.items():
        target = spec.cwd / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
    return BareRun(run_dir, spec.argv, spec.env, spec.stdin, ctx, engine)


def as_cli_command(run: BareRun) -> BareRun:
    """The same run as a user types it: the `codex` command on PATH (the npm launcher, which
    finds the native binary and runs it with the same arguments) instead of the native binary
    the worker runs, without the two variables the launcher adds itself."""
    from runner_core.engines import get_adapter
    from runner_core.engines.invocation import resolve_binary

    launcher = resolve_binary(get_adapter("codex").binary)
    env = {
        k: v
        for k, v in run.env.items()
        if k not in ("CODEX_MANAGED_BY_NPM", "CODEX_MANAGED_PACKAGE_ROOT")
    }
    return BareRun(run.run_dir, [str(launcher), *run.argv[1:]], env, run.stdin, run.ctx, "codex")


def run_bare(run: BareRun) -> float:
    """Run the engine's command to completion (new session, stdin closed); its wall seconds.
    Raises when the CLI fails or its final message is not the expected JSON."""
    elapsed, output = run_command_bare(run)
    if json.loads(output.final_text or "null") != RESULT:
        raise RuntimeError(f"bare {run.engine} run answered {output.final_text!r}")
    return elapsed


def run_command_bare(run: BareRun, name: str = "") -> tuple[float, Any]:
    """Run the command to completion: (wall seconds, the adapter's parsed output); its logs
    are `logs/<name>stdout.txt`. Raises when the CLI fails."""
    from runner_core.engines import get_adapter
    from runner_core.engines.base import ProcessResult

    logs = run.run_dir / "logs"
    out_path, err_path = logs / f"{name}stdout.txt", logs / f"{name}stderr.txt"
    with out_path.open("wb") as out, err_path.open("wb") as err:
        started = time.perf_counter()
        proc = subprocess.Popen(
            run.argv,
            cwd=run.run_dir,
            env=run.env,
            stdout=out,
            stderr=err,
            stdin=subprocess.PIPE if run.stdin is not None else subprocess.DEVNULL,
            start_new_session=True,
        )
        if run.stdin is not None:
            proc.communicate(run.stdin.encode())
        code = proc.wait()
        elapsed = time.perf_counter() - started
    output = get_adapter(run.engine).parse_output(ProcessResult(code, out_path, err_path, 0, 0))
    if code != 0 or output.error is not None:
        tail = err_path.read_text()[-1500:]
        raise RuntimeError(f"bare {run.engine} run failed (exit {code}): {tail}")
    return elapsed, output


def children_cpu() -> float:
    """user+system CPU of the bench's waited-for children (the bare engine process trees)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime
