"""How an engine CLI is started: binary lookup, node flags, where the prompt goes and how a
command ends."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runner_core.engines import invocation
from runner_core.engines.base import EngineContext
from runner_core.engines.invocation import (
    MAX_ARGV_PROMPT_BYTES,
    command_spec,
    program_argv,
    prompt_args,
    resolve_binary,
)


def test_resolve_binary_uses_bin_dir_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tool = tmp_path / "fake-engine-cli-for-test"
    tool.write_text("#!/bin/sh\n", encoding="utf-8")
    tool.chmod(0o755)
    monkeypatch.setenv("SKILL_RUNNER_ENGINE_BIN_DIR", str(tmp_path))
    monkeypatch.setenv("PATH", os.defpath)
    assert resolve_binary("fake-engine-cli-for-test") == tool
    assert resolve_binary("fake-engine-cli-missing") is None


def cli(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    tool = folder / name
    tool.write_text("#!/bin/sh\n", encoding="utf-8")
    tool.chmod(0o755)
    return tool


def test_an_explicit_choice_wins_over_the_checkouts_engines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An operator picks another installed version: the bin dir, then one CLI's own file, each
    wins over the checkout's .engines (which a test cannot remove: it stands in with PATH)."""
    monkeypatch.setattr(invocation, "REPO_BIN_DIR", tmp_path / "repo-engines")
    default = cli(tmp_path / "repo-engines", "fake-cli")
    assert resolve_binary("fake-cli") == default
    other_dir = cli(tmp_path / "other", "fake-cli")
    monkeypatch.setenv("SKILL_RUNNER_ENGINE_BIN_DIR", str(other_dir.parent))
    assert resolve_binary("fake-cli") == other_dir
    pinned = cli(tmp_path / "v0.133.0", "fake-cli")
    monkeypatch.setenv("SKILL_RUNNER_FAKE_CLI_BIN", str(pinned))
    assert resolve_binary("fake-cli") == pinned
    monkeypatch.setenv("SKILL_RUNNER_FAKE_CLI_BIN", str(tmp_path / "missing"))
    assert resolve_binary("fake-cli") is None  # a wrong choice is not silently replaced


def script(path: Path, first_line: bytes) -> Path:
    path.write_bytes(first_line + b"\nconsole.log(1)\n")
    path.chmod(0o755)
    return path


def test_node_flags_run_a_node_script_through_node(tmp_path: Path) -> None:
    cli = script(tmp_path / "cli.js", b"#!/usr/bin/env node")
    link = tmp_path / "cli"
    link.symlink_to(cli)
    node = tmp_path / "bin" / "node"
    node.parent.mkdir()
    script(node, b"#!/bin/sh")
    env = {"PATH": str(node.parent)}
    config = {"node_flags": ["--liftoff-only"]}
    assert program_argv("cli", link, config, env) == [str(node), "--liftoff-only", str(cli)]
    assert program_argv("cli", link, {}, env) == [str(link)]
    assert program_argv("cli", None, config, env) == ["cli"]
    assert program_argv("cli", link, config, {"PATH": str(tmp_path / "nowhere")}) == [str(link)]
    native = script(tmp_path / "native", b"\x7fELF\x02\x01")
    assert program_argv("native", native, config, env) == [str(native)]


def test_a_relaunching_launcher_is_skipped_for_the_script_it_starts(tmp_path: Path) -> None:
    package = tmp_path / "qwen-code"
    package.mkdir()
    launcher = script(package / "cli-entry.js", b"#!/usr/bin/env node")
    cli = script(package / "cli.js", b"#!/usr/bin/env node")
    link = tmp_path / "qwen"
    link.symlink_to(launcher)
    node = tmp_path / "bin" / "node"
    node.parent.mkdir()
    script(node, b"#!/bin/sh")
    env = {"PATH": str(node.parent)}
    # one process: the launcher's own flag, then the configured ones
    assert program_argv("qwen", link, {}, env) == [str(node), "--expose-gc", str(cli)]
    config = {"node_flags": ["--liftoff-only"]}
    assert program_argv("qwen", link, config, env) == [
        str(node),
        "--expose-gc",
        "--liftoff-only",
        str(cli),
    ]
    cli.unlink()  # an older package: the launcher is the CLI
    assert program_argv("qwen", link, {}, env) == [str(link)]


def test_a_prompt_that_fits_goes_after_a_double_dash_or_as_flag_value() -> None:
    assert prompt_args("-starts with a dash") == (["--", "-starts with a dash"], None)
    assert prompt_args("-x", flag="--prompt") == (["--prompt=-x"], None)


def test_a_prompt_too_long_for_argv_goes_on_stdin() -> None:
    prompt = "é" * (MAX_ARGV_PROMPT_BYTES // 2 + 1)  # fits in characters, not in bytes
    assert prompt_args(prompt, flag="--prompt") == ([], prompt)
    assert prompt_args(prompt, stdin_args=["-"]) == (["-"], prompt)


def test_the_argv_limit_is_inclusive() -> None:
    prompt = "x" * MAX_ARGV_PROMPT_BYTES
    assert prompt_args(prompt) == (["--", prompt], None)


def test_a_command_ends_with_the_session_to_resume_then_the_prompt(tmp_path: Path) -> None:
    ctx = EngineContext(run_dir=tmp_path, skill_id="s", prompt="hi", config={}, session_id="s-1")
    spec = command_spec(ctx, ["cli", "-x"], {"A": "1"}, resume="resume")
    assert spec.argv == ["cli", "-x", "resume", "s-1", "--", "hi"]
    assert (spec.cwd, spec.env, spec.stdin, spec.files) == (tmp_path, {"A": "1"}, None, {})
