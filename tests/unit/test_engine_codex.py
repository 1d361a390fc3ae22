"""Codex adapter: command building and parsing of transcripts recorded from codex 0.169.0
run against the fake LLM server (tests/engines/transcripts/codex_*)."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest

from runner_core.engines import codex
from tests.helpers import TRANSCRIPTS, engine_context, recorded

CONFIG = {"base_url": "http://127.0.0.1:9/v1", "api_key": "k", "model": "m1"}

context = partial(engine_context, config=CONFIG)


def overrides(argv: list[str]) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv) if a == "-c"]


def test_command_is_headless_exec_with_workspace_write_sandbox(tmp_path: Path) -> None:
    argv = codex.ADAPTER.build_command(context(tmp_path)).argv
    assert argv[1:6] == ["exec", "--json", "--skip-git-repo-check", "--sandbox", "workspace-write"]
    assert argv[-2:] == ["--", "do it"]
    assert "-p" not in argv and "--profile" not in argv
    assert "analytics.enabled=false" in overrides(argv)
    assert "features.plugins=false" in overrides(argv)  # no catalogue fetched per run


def test_codex_home_is_created_inside_the_run_dir(tmp_path: Path) -> None:
    spec = codex.ADAPTER.build_command(context(tmp_path))
    assert spec.env["CODEX_HOME"] == str(tmp_path / ".codex-home")
    assert (tmp_path / ".codex-home").is_dir()
    assert spec.stdin is None and spec.cwd == tmp_path


def test_base_url_defines_a_responses_provider_keyed_by_env(tmp_path: Path) -> None:
    spec = codex.ADAPTER.build_command(context(tmp_path))
    found = overrides(spec.argv)
    assert 'model_provider="skillrunner"' in found
    assert 'model_providers.skillrunner.base_url="http://127.0.0.1:9/v1"' in found
    assert 'model_providers.skillrunner.wire_api="responses"' in found
    assert 'model_providers.skillrunner.env_key="SKILL_RUNNER_API_KEY"' in found
    assert spec.env["SKILL_RUNNER_API_KEY"] == "k"
    assert "k" not in spec.argv


def test_api_key_env_names_the_provider_env_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_KEY", "secret")
    config = {"base_url": "http://x/v1", "api_key_env": "MY_KEY"}
    spec = codex.ADAPTER.build_command(context(tmp_path, config=config))
    assert 'model_providers.skillrunner.env_key="MY_KEY"' in overrides(spec.argv)
    assert spec.env["MY_KEY"] == "secret"


def test_without_base_url_the_key_goes_to_codex_api_key(tmp_path: Path) -> None:
    spec = codex.ADAPTER.build_command(context(tmp_path, config={"api_key": "k"}))
    assert spec.env["CODEX_API_KEY"] == "k"
    assert not any(o.startswith("model_provider") for o in overrides(spec.argv))


def test_settings_become_dotted_overrides_after_the_defaults(tmp_path: Path) -> None:
    config = {
        "settings": {
            "model_reasoning_effort": "low",
            "sandbox_workspace_write": {"network_access": True},
            "model_providers": {"skillrunner": {"stream_max_retries": 0}},
        }
    }
    found = overrides(codex.ADAPTER.build_command(context(tmp_path, config=config)).argv)
    assert 'model_reasoning_effort="low"' in found
    assert "sandbox_workspace_write.network_access=true" in found
    assert found[-1] == "model_providers.skillrunner.stream_max_retries=0"


def test_toml_values_cover_lists_tables_and_odd_keys() -> None:
    assert codex.toml_value(["a", 1, False]) == '["a", 1, false]'
    assert codex.toml_value({"a b": 'x"y'}) == '{"a b" = "x\\"y"}'
    assert codex.config_overrides({"mcp_servers": {"my.srv": {"command": "x"}}}) == [
        'mcp_servers."my.srv".command="x"'
    ]


def test_model_from_context_beats_config(tmp_path: Path) -> None:
    argv = codex.ADAPTER.build_command(context(tmp_path, model="m2")).argv
    assert argv[argv.index("-m") + 1] == "m2"


def test_output_schema_only_for_object_schemas(tmp_path: Path) -> None:
    obj, arr = tmp_path / "obj.json", tmp_path / "arr.json"
    obj.write_text(json.dumps({"type": "object", "properties": {"a": {"type": "string"}},
                               "required": ["a"]}))  # fmt: skip
    arr.write_text(json.dumps({"type": "array"}))
    with_obj = codex.ADAPTER.build_command(context(tmp_path, output_schema_path=obj)).argv
    with_arr = codex.ADAPTER.build_command(context(tmp_path, output_schema_path=arr)).argv
    assert with_obj[with_obj.index("--output-schema") + 1] == str(
        tmp_path / ".codex-home" / "output-schema.json"
    )
    assert "--output-schema" not in with_arr


def test_skills_are_discovered_in_agents_skills() -> None:
    assert codex.ADAPTER.skill_dirs == (".agents/skills",)


def test_parse_tool_call_and_final_json() -> None:
    out = codex.ADAPTER.parse_output(recorded("codex_tool_json", 0))
    assert out.error is None
    assert out.session_id and out.session_id.count("-") == 4
    assert out.parsed_json == {"status": "ok", "engine": "fake-model"}
    assert [c["type"] for c in out.tool_calls] == ["command_execution"]
    assert "made-by-agent.txt" in out.tool_calls[0]["command"]
    assert out.usage["input_tokens"] > 0 and out.usage["output_tokens"] > 0


def test_parse_appended_resume_log_reads_the_last_invocation() -> None:
    out = codex.ADAPTER.parse_output(recorded("codex_resume", 0))
    first = json.loads((TRANSCRIPTS / "codex_resume.stdout").read_text().splitlines()[0])
    assert out.session_id == first["thread_id"]
    assert len(out.tool_calls) == 1
    assert out.error is None


@pytest.mark.parametrize(("name", "status"), [("codex_http400", 400), ("codex_http401", 401)])
def test_parse_turn_failed_is_model_api_error_with_status(name: str, status: int) -> None:
    out = codex.ADAPTER.parse_output(recorded(name, 1))
    assert out.error is not None and out.error.code == "MODEL_API_ERROR"
    assert out.error.details["status"] == status
    assert out.final_text is None


def test_parse_killed_while_retrying_is_model_api_error() -> None:
    out = codex.ADAPTER.parse_output(recorded("codex_http401_killed", None, timed_out=True))
    assert out.error is not None and out.error.code == "MODEL_API_ERROR"
    assert out.error.details == {"timed_out": True, "status": 401}


def test_parse_missing_key_is_auth_missing() -> None:
    out = codex.ADAPTER.parse_output(recorded("codex_auth_missing", 1))
    assert out.error is not None and out.error.code == "AUTH_MISSING"


def test_model_with_reasoning_effort_is_split_into_flags(tmp_path: Path) -> None:
    spec = codex.ADAPTER.build_command(context(tmp_path, config={}, model="gpt-5.2-codex@high"))
    assert spec.argv[spec.argv.index("-m") + 1] == "gpt-5.2-codex"
    assert 'model_reasoning_effort="high"' in spec.argv


def npm_layout(root: Path, vendor: str) -> Path:
    """An npm install of codex: bin/codex.js in @openai/codex, a native binary where `vendor`
    says ("sibling": the platform package next to it, "nested": inside it, "own": the codex
    package's vendor dir), and node_modules/.bin/codex linking the script. Returns the link."""
    modules = root / "node_modules"
    script = modules / "@openai" / "codex" / "bin" / "codex.js"
    script.parent.mkdir(parents=True)
    script.write_text("#!/usr/bin/env node\n")
    script.chmod(0o755)
    vendor_dir = {
        "sibling": modules / "@openai" / "codex-linux-x64" / "vendor",
        "nested": script.parents[1] / "node_modules" / "@openai" / "codex-linux-x64" / "vendor",
        "own": script.parents[1] / "vendor",
    }[vendor]
    binary = vendor_dir / "x86_64-unknown-linux-musl" / "bin" / "codex"
    binary.parent.mkdir(parents=True)
    binary.write_bytes(b"\x7fELF")
    binary.chmod(0o755)
    link = modules / ".bin" / "codex"
    link.parent.mkdir()
    link.symlink_to(Path("..") / "@openai" / "codex" / "bin" / "codex.js")
    return link


@pytest.fixture
def linux_x64(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(codex.platform, "system", lambda: "Linux")
    monkeypatch.setattr(codex.platform, "machine", lambda: "x86_64")


@pytest.mark.parametrize("vendor", ["sibling", "nested", "own"])
def test_native_binary_is_found_where_the_npm_launcher_looks(
    tmp_path: Path, linux_x64: None, vendor: str
) -> None:
    link = npm_layout(tmp_path, vendor)
    binary, root = codex.native_binary(link)
    assert binary.name == "codex" and binary.parent.name == "bin"
    assert "x86_64-unknown-linux-musl" in binary.parts
    assert root == (tmp_path / "node_modules" / "@openai" / "codex").resolve()


def test_native_binary_is_none_without_the_platform_package(
    tmp_path: Path, linux_x64: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    link = npm_layout(tmp_path, "sibling")
    (
        tmp_path
        / "node_modules"
        / "@openai"
        / "codex-linux-x64"
        / "vendor"
        / "x86_64-unknown-linux-musl"
        / "bin"
        / "codex"
    ).unlink()
    assert codex.native_binary(link) is None
    assert codex.native_binary(None) is None
    assert codex.native_binary(tmp_path / "missing") is None
    elf = tmp_path / "codex"  # a binary on PATH that is not the launcher script
    elf.write_bytes(b"\x7fELF")
    assert codex.native_binary(elf) is None
    monkeypatch.setattr(codex.platform, "machine", lambda: "riscv64")
    assert codex.native_binary(npm_layout(tmp_path / "again", "sibling")) is None


def test_command_runs_the_native_binary_with_the_launchers_variables(
    tmp_path: Path, linux_x64: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    link = npm_layout(tmp_path / "install", "sibling")
    monkeypatch.setenv("SKILL_RUNNER_CODEX_BIN", str(link))
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    spec = codex.ADAPTER.build_command(context(run_dir))
    assert spec.argv[0] == str(codex.native_binary(link)[0])
    assert spec.env["CODEX_MANAGED_BY_NPM"] == "1"
    assert spec.env["CODEX_MANAGED_PACKAGE_ROOT"] == str(codex.native_binary(link)[1])
    assert spec.env["PATH"].split(":")[0] == str(link.parent)  # the engines' bin dir stays first


def test_command_falls_back_to_the_launcher(
    tmp_path: Path, linux_x64: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    link = tmp_path / "bin" / "codex"
    link.parent.mkdir()
    link.write_text("#!/bin/sh\n")
    link.chmod(0o755)
    monkeypatch.setenv("SKILL_RUNNER_CODEX_BIN", str(link))
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    spec = codex.ADAPTER.build_command(context(run_dir))
    assert spec.argv[0] == str(link)
    assert "CODEX_MANAGED_PACKAGE_ROOT" not in spec.env
