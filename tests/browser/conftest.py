"""Browser tier: headless Chromium (the system's package, driven by Playwright) against a real
gunicorn + Celery worker + Redis, with codex talking to the fake LLM. Screenshots of every page
go to .test-artifacts/ui/ (kept after the run, to look at)."""

from __future__ import annotations

import json
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path

import pytest

from fake_llm import FakeLLM
from runner_core.engines import get_adapter
from tests.engines.harness import fake_engine_config, require_binary
from tests.engines.test_event_stream_served import Api
from tests.engines.test_interactive_jobs import ASKS_THEN_FINISHES
from tests.helpers import TOKENS, write_tokens_file
from tests.integration.services import WorkerProcess, broker_settings, service_env
from tests.integration.test_serve import free_port

CHROMIUM = ("/usr/bin/chromium", "/usr/bin/chromium-browser")


def chromium_path() -> str:
    """The system Chromium (tests/run.sh installs it); fails, never skips, when missing."""
    for path in CHROMIUM:
        if Path(path).exists():
            return path
    pytest.fail("the browser tests need Chromium (apt-get install chromium; tests/run.sh does)")


# closed when the browser tier ends, not at the end of the whole session after every other tier
@pytest.fixture(scope="package")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(
            executable_path=chromium_path(), headless=True, args=["--no-sandbox"]
        )
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1024, "height": 900})
    tab = context.new_page()
    yield tab
    context.close()


@contextmanager
def _serve(root: Path, api_env: dict[str, str]):
    """The API (gunicorn, with `api_env`) and a worker; codex asks one question, then finishes."""
    require_binary(get_adapter("codex"))
    script_file = root / "llm-script.json"
    script_file.write_text(json.dumps(asdict(ASKS_THEN_FINISHES)))
    with FakeLLM(script_file) as llm, broker_settings(root) as settings:
        config_dir = fake_engine_config(root / "engine-config", llm)
        extra = {"SKILL_RUNNER_ENGINE_CONFIG_DIR": str(config_dir)}
        worker = WorkerProcess(
            settings, "browser", settings.data_dir / "worker.log", extra_env=extra
        )
        env = {
            **service_env(settings),
            **extra,
            **api_env,
            "PORT": str(free_port()),
            "WEB_CONCURRENCY": "1",
        }
        api = Api(env, int(env["PORT"]))
        api.start()
        try:
            yield api
        finally:
            api.stop()
            worker.stop()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The UI with no tokens configured (open)."""
    with _serve(tmp_path_factory.mktemp("browser"), {}) as api:
        yield api


@pytest.fixture(scope="module")
def served_with_tokens(tmp_path_factory):
    """The UI with the tokens of tests.helpers.TOKENS: its pages ask for a login."""
    root = tmp_path_factory.mktemp("browser-tokens")
    tokens = write_tokens_file(root / "tokens.jsonl", TOKENS)
    with _serve(root, {"SKILL_RUNNER_TOKENS_FILE": str(tokens)}) as api:
        yield api
