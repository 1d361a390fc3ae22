"""`skill-runner serve --demo-llm`: agent runs without a provider account.

Starts the fake LLM (`python -m fake_llm`) on loopback with the example skills' scripted
sessions (`fake_llm.demo`) and points every engine CLI at it through an engine-config folder of
its own: a copy of the operator's, each `enforced.json` given the demo endpoint, key and model.
Refused when a provider key is configured, so it cannot quietly replace a real provider.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from fake_llm.demo import MODEL, demo_script
from runner_core.engines import SUPPORTED_ENGINES
from runner_core.engines.config import CONFIG_DIR_ENV, config_dir_from_env
from runner_core.secret_values import public_env
from runner_core.settings import DEMO_LLM_ENV, DEMO_LLM_WARNING, REPO_ROOT

# Variables the adapters or the CLIs themselves take a provider key from; each engine config's
# `api_key_env` is checked too.
KEY_VARIABLES = (
    "OPENAI_API_KEY",
    "CODEX_API_KEY",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "IFLOW_API_KEY",
    "DASHSCOPE_API_KEY",
    "SKILL_RUNNER_API_KEY",
    "SKILL_RUNNER_OPENCODE_API_KEY",
    "SKILL_RUNNER_KILO_API_KEY",
)
# engine -> what its CLI expects after the server root (see tests/engines/harness.py)
URL_SUFFIX = {"codex": "/v1", "opencode": "/v1", "kilo": "/v1", "qwen": "/v1", "iflow": "/v1"}
DEMO_KEY = "demo-llm"


class DemoRefused(RuntimeError):
    """The demo LLM cannot start: a provider key is configured, or the server did not come up."""


def _layer(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def configured_keys(config_dir: Path, environ: Mapping[str, str]) -> list[str]:
    """Every provider key in force: set key variables, and `api_key` in a config layer."""
    names = set(KEY_VARIABLES)
    found = []
    for engine in SUPPORTED_ENGINES:
        for layer in ("default.json", "enforced.json"):
            data = _layer(config_dir / engine / layer)
            if isinstance(data.get("api_key_env"), str):
                names.add(data["api_key_env"])
            if data.get("api_key"):
                found.append(f"api_key in {engine}/{layer}")
    return sorted(n for n in names if environ.get(n, "").strip()) + found


def write_engine_config(source: Path, dest: Path, base_url: str) -> Path:
    """`dest`: a copy of the config folder `source` whose enforced layers point at the demo."""
    shutil.rmtree(dest, ignore_errors=True)
    if source.is_dir():
        shutil.copytree(source, dest)
    for engine in SUPPORTED_ENGINES:
        path = dest / engine / "enforced.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        layer = {k: v for k, v in _layer(path).items() if k != "api_key_env"}
        # the one model the demo answers as, offered as well as enforced (`model_ids`)
        layer.update(
            base_url=base_url + URL_SUFFIX.get(engine, ""),
            api_key=DEMO_KEY,
            model=MODEL,
            models=[MODEL],
        )
        path.write_text(json.dumps(layer, indent=2) + "\n", encoding="utf-8")
    return dest


class DemoLLM:
    """The fake LLM process and the engine config that points the CLIs at it."""

    def __init__(self, data_dir: Path, script_file: Path | None = None) -> None:
        """`script_file`: a script of one's own (`skill-runner test`), read again at each model
        call so that it can change between runs; default: the example skills' sessions."""
        self.folder = data_dir / "demo-llm"
        self.script_file = script_file
        self.url = ""
        self.proc: subprocess.Popen[bytes] | None = None

    def refuse_when_keyed(self, environ: Mapping[str, str] = os.environ) -> None:
        """Raise DemoRefused when a provider key is configured."""
        keys = configured_keys(config_dir_from_env(), environ)
        if keys:
            raise DemoRefused(
                "--demo-llm refused: a provider key is configured ("
                + ", ".join(keys)
                + "); unset it to try the demo, or run without --demo-llm"
            )

    def start(self) -> subprocess.Popen[bytes]:
        """Start the server (its port read from its first line) and write the engine config."""
        source = config_dir_from_env()
        self.folder.mkdir(parents=True, exist_ok=True)
        script = self.script_file or self.folder / "script.json"
        if self.script_file is None:
            script.write_text(json.dumps(demo_script(), indent=2), encoding="utf-8")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "fake_llm", "--port", "0", "--script", str(script)]
            + ["--log", str(self.folder / "requests.jsonl")],
            stdout=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            cwd=REPO_ROOT,
            env=public_env(),  # any process of the user can read a process's environment
        )
        assert self.proc.stdout is not None
        port = self.proc.stdout.readline().decode().strip()  # the server prints its port first
        if not port.isdigit():
            self.proc.kill()
            raise DemoRefused(f"the demo LLM did not start (exit code {self.proc.wait()})")
        self.url = f"http://127.0.0.1:{port}"
        write_engine_config(source, self.folder / "engine-config", self.url)
        return self.proc

    def env(self) -> dict[str, str]:
        """What the web and worker processes need: the config folder and the demo marker."""
        return {CONFIG_DIR_ENV: str(self.folder / "engine-config"), DEMO_LLM_ENV: self.url}

    def banner(self) -> str:
        return DEMO_LLM_WARNING % self.url
