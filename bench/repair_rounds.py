"""Repair rounds per 100 runs, per engine, with the engine's native structured output off and
on, on a fake LLM that answers off schema at a fixed rate.

Each run is one engine turn as the worker makes it (the adapter's command, the real CLI, one
shell tool call then the final JSON) followed by the output chain
(runner_core.output.run_output_chain) with the worker's repair function: a resumed turn of
the same session per round, up to `REPAIR_ROUNDS`. The two modes alternate run by run, each
with its own fake LLM server, so both see the same answers off schema (every
1/OFF_SCHEMA_RATE-th final answer, fake_llm.schema.OffSchemaDraws). No service is started:
what differs between the modes is the engine's command and the chain, not the queue.
"""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench.context import Context
from bench.stats import Row, ratio

FIGURE = "repair-rounds"
# engine -> runs per mode (full, --quick): qwen starts slowly (~6 s a turn, more on a loaded
# machine), so it gets fewer
ENGINES = {"codex": (20, 4), "claude": (20, 4), "qwen": (10, 4)}
OFF_SCHEMA_RATE = 0.3
REPAIR_ROUNDS = 3
SCHEMA = {
    "type": "object",
    "properties": {"text": {"type": "string"}, "length": {"type": "integer", "minimum": 0}},
    "required": ["text", "length"],
    "additionalProperties": False,
}
ANSWER = {"text": "hello", "length": 5}
PROMPT = "Run `echo hello`, then answer with the JSON object the output schema describes."
REPAIR_PROMPT = "Your last answer does not match the required JSON Schema:\n{errors}\nAnswer again."


@dataclass
class Tally:
    """One engine and mode over its runs."""

    runs: int = 0
    repair_rounds: int = 0
    failed: int = 0  # no valid output after every round, or the engine failed
    seconds: float = 0.0


def run(ctx: Context) -> list[Row]:
    from fake_llm import FakeLLM, Script
    from runner_core.engines import get_adapter
    from runner_core.engines.invocation import resolve_binary

    root = ctx.scratch(FIGURE)
    script = Script(
        command="echo hello", final_text=json.dumps(ANSWER), off_schema_rate=OFF_SCHEMA_RATE
    )
    schema_path = root / "output.schema.json"
    schema_path.write_text(json.dumps(SCHEMA))
    rows: list[Row] = []
    try:
        for engine, counts in ENGINES.items():
            n = ctx.count(*counts)
            adapter = get_adapter(engine)
            if resolve_binary(adapter.binary) is None:
                ctx.log(f"{FIGURE}: {engine} is not installed, skipped")
                continue
            tallies = {True: Tally(), False: Tally()}
            with FakeLLM(script) as native_llm, FakeLLM(script) as chain_llm:
                for i in range(n):
                    for native, llm in ((False, chain_llm), (True, native_llm)):
                        run_dir = root / f"{engine}-{'on' if native else 'off'}-{i}"
                        one_run(adapter, llm.base_url, native, run_dir, schema_path, tallies)
                    llm_requests_trim(native_llm, chain_llm)
            rows.append(_row(engine, tallies[True], tallies[False], n))
            ctx.log(f"{FIGURE}: {engine} done: {rows[-1].value:g} vs {rows[-1].baseline:g}, "
                    f"{rows[-1].note}")  # fmt: skip
    finally:
        ctx.cleanup(root)
    return rows


def llm_requests_trim(*servers: Any) -> None:
    """The servers keep every request; the bench reads none."""
    for server in servers:
        server.requests.clear()


def one_run(
    adapter: Any,
    base_url: str,
    native: bool,
    run_dir: Path,
    schema_path: Path,
    tallies: dict[bool, Tally],
) -> None:
    """One engine turn and its output chain; adds to `tallies[native]`."""
    from runner_core.engines.base import EngineContext
    from runner_core.output import RepairReply, RepairRequest, run_output_chain

    run_dir.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(run_dir)], check=True, stdin=subprocess.DEVNULL)
    url = base_url if adapter.name == "claude" else f"{base_url}/v1"
    config = {"base_url": url, "api_key": "fake-key", "model": "fake-model"}
    ctx = EngineContext(
        run_dir=run_dir,
        skill_id="bench-repair",
        prompt=PROMPT,
        config={**config, "native_schema": native},
        model="fake-model",
        output_schema_path=schema_path,
    )
    tally = tallies[native]
    started = time.perf_counter()
    output = adapter.parse_output(run_spec(adapter.build_command(ctx), run_dir / "logs", "turn"))

    def repair(request: RepairRequest) -> RepairReply:
        tally.repair_rounds += 1
        errors = "\n".join(f"- {e.get('path')}: {e.get('message')}" for e in request.errors)
        session = request.session_id or output.session_id
        spec = adapter.build_command(
            replace(ctx, prompt=REPAIR_PROMPT.format(errors=errors), session_id=session)
        )
        reply = adapter.parse_output(run_spec(spec, run_dir / "logs", f"repair_{request.round}"))
        if reply.error is not None:
            return RepairReply(None, session, reply.tokens, reply.error.message)
        return RepairReply(reply.final_text, reply.session_id or session, reply.tokens)

    ok = output.error is None
    if ok:
        outcome = run_output_chain(
            run_dir,
            SCHEMA,
            engine_text=output.final_text,
            repair=repair,
            repair_rounds=REPAIR_ROUNDS,
            result_file=None,
        )
        ok = outcome.ok
    tally.runs += 1
    tally.failed += 0 if ok else 1
    tally.seconds += time.perf_counter() - started


def run_spec(spec: Any, logs: Path, name: str, timeout: float = 180.0) -> Any:
    """Run a CommandSpec as the worker's supervisor does (files first, own session, stdin
    closed or the prompt); its ProcessResult."""
    from runner_core.engines.base import ProcessResult

    for rel, content in spec.files.items():
        target = Path(spec.cwd) / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
    logs.mkdir(parents=True, exist_ok=True)
    out_path, err_path = logs / f"{name}_stdout.txt", logs / f"{name}_stderr.txt"
    started = time.time()
    with out_path.open("wb") as out, err_path.open("wb") as err:
        proc = subprocess.Popen(
            spec.argv,
            cwd=spec.cwd,
            env=spec.env,
            stdout=out,
            stderr=err,
            stdin=subprocess.PIPE if spec.stdin is not None else subprocess.DEVNULL,
            start_new_session=True,
        )
        proc.communicate(spec.stdin.encode() if spec.stdin is not None else None, timeout=timeout)
    return ProcessResult(proc.returncode, out_path, err_path, started, time.time(), cwd=spec.cwd)


def _row(engine: str, on: Tally, off: Tally, n: int) -> Row:
    per_100 = 100.0 / n
    return Row(
        figure=FIGURE,
        name=f"{engine}: repair rounds per 100 runs, native structured output on",
        value=on.repair_rounds * per_100,
        unit="rounds",
        baseline=off.repair_rounds * per_100,
        baseline_name="native off (output chain only)",
        ratio=ratio(on.repair_rounds, off.repair_rounds),
        note=(
            f"N={n} runs each, {OFF_SCHEMA_RATE:.0%} of final answers off schema; failed "
            f"{on.failed} on / {off.failed} off; {on.seconds / n:.1f} s / "
            f"{off.seconds / n:.1f} s per run"
        ),
        extra={"on": vars(on), "off": vars(off)},
    )
