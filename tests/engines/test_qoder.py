"""Qoder's CLI (qodercli) is not an engine: why, pinned against the real CLI.

qodercli can be given a custom model provider (settings `providers.<id>` with `baseUrl`,
`apiKey`, `model`, `protocol`), but it only uses one for a signed-in Qoder account whose
account status, fetched live from Qoder's service, allows it. With no Qoder login (and Qoder's
hosts unreachable: a dead proxy stands in for "offline") it sends nothing to the provider, so it
cannot run against the fake LLM server. The whole account is in docs/engine-matrix.md
("qoder: not supported"). When a version does reach the provider, this test fails: then write
the adapter.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from fake_llm import FakeLLM, Script
from runner_core.engines.invocation import resolve_binary
from runner_core.processes import stop_process_group

FAKE_MODEL = "fake/fake-model"  # <provider id>/<model id>, as qodercli names custom models
NOT_LOGGED_IN = "Not logged in"
PROVIDER_UNAVAILABLE = "The selected Custom Provider is not available"


def _qodercli() -> Path:
    path = resolve_binary("qodercli")
    if path is None:
        reason = "qodercli not installed: run deploy/install-engines.sh"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return path


def _closed_port() -> int:
    """A loopback port nothing listens on: Qoder's own hosts, reached through it, fail at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _settings(llm: FakeLLM, **extra: Any) -> dict[str, Any]:
    provider = {"baseUrl": f"{llm.base_url}/v1", "apiKey": "fake-key", "model": "fake-model"}
    return {"providers": {"fake": {**provider, "protocol": "openai"}}, "model": FAKE_MODEL, **extra}


def _start(base: Path, settings: Mapping[str, Any], args: list[str]) -> subprocess.Popen:
    """qodercli -p in a fresh git dir with its own HOME holding `settings`."""
    home, work = base / "home", base / "work"
    (home / ".qoder").mkdir(parents=True)
    (home / ".qoder" / "settings.json").write_text(json.dumps(settings))
    subprocess.run(["git", "init", "-q", str(work)], check=True, stdin=subprocess.DEVNULL)
    proxy = f"http://127.0.0.1:{_closed_port()}"
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "NO_BROWSER": "1",
        "HTTPS_PROXY": proxy,
        "HTTP_PROXY": proxy,
        "NO_PROXY": "127.0.0.1,localhost",  # the custom provider stays reachable
    }
    argv = [str(_qodercli()), "-p", "Reply with OK.", "--output-format", "json", *args]
    return subprocess.Popen(
        argv,
        cwd=work,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def _finish(proc: subprocess.Popen, home: Path) -> tuple[int, dict[str, Any], str]:
    """(exit code, the JSON result on stdout, the CLI's own run log)."""
    try:
        out, err = proc.communicate(timeout=180)
    finally:
        stop_process_group(proc, 0)
    assert out.strip(), err.decode()[-2000:]
    log = "\n".join(p.read_text() for p in (home / ".qoder" / "logs").rglob("qodercli.log"))
    return proc.returncode, json.loads(out.decode().strip().splitlines()[-1]), log


def test_qoder_sends_nothing_to_a_custom_provider_without_a_qoder_login(tmp_path: Path) -> None:
    """As shipped, the headless run stops at the login check; with the login check skipped
    (`security.auth.useExternal`), the turn starts on the custom model and fails there because
    Qoder's service never confirmed the account may use it. Both runs go at once (each waits
    ~45 s on Qoder's unreachable hosts)."""
    with FakeLLM(Script(tool=False, final_text="OK")) as llm:
        shipped = _start(tmp_path / "shipped", _settings(llm), ["-m", FAKE_MODEL])
        external = _start(
            tmp_path / "external", _settings(llm, security={"auth": {"useExternal": True}}), []
        )
        code, result, _ = _finish(shipped, tmp_path / "shipped" / "home")
        ext_code, ext_result, ext_log = _finish(external, tmp_path / "external" / "home")
        assert llm.requests == []
    assert code == 1 and result["is_error"] is True, result
    assert result["result"].startswith(NOT_LOGGED_IN), result
    assert ext_code == 1 and ext_result["is_error"] is True, ext_result
    assert f'turn.started model="{FAKE_MODEL}"' in ext_log  # the provider config was accepted
    assert PROVIDER_UNAVAILABLE in ext_log
