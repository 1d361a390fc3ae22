"""The event stream as clients get it: real gunicorn (gevent workers) + a real worker + Redis +
codex against the fake LLM. Live delivery while the run goes, a replay after it ended, and an
API restart in the middle of a stream with the client resuming by Last-Event-ID."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from fake_llm import FakeLLM, Script
from runner_core.engines import get_adapter
from runner_core.settings import REPO_ROOT
from tests.engines.harness import FAKE_CONFIG, require_binary
from tests.helpers import wait_for
from tests.integration.services import WorkerProcess, broker_settings, service_env
from tests.integration.test_serve import call, free_port, health

SLOW = Script(  # a run of a few seconds whose output comes in pieces
    command="echo step-1; sleep 1; echo step-2; sleep 1; echo step-3",
    final_text='{"title": "T", "text": "hello"}',
)


class Api:
    """gunicorn serving the API on a port of its own, restartable."""

    def __init__(self, env: dict[str, str], port: int) -> None:
        self.env, self.port, self.proc = env, port, None
        self.base = f"http://127.0.0.1:{port}"

    def start(self) -> None:
        argv = [
            os.path.join(os.path.dirname(sys.executable), "gunicorn"),
            "-c",
            str(REPO_ROOT / "deploy" / "gunicorn.conf.py"),
            "api.wsgi:app",
        ]
        self.proc = subprocess.Popen(argv, env=self.env, cwd=REPO_ROOT)
        wait_for(lambda: health(self.base), 30, 0.1, "the API answers")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(30)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    require_binary(get_adapter("codex"))
    root = tmp_path_factory.mktemp("served-events")
    with FakeLLM(SLOW) as llm, broker_settings(root) as settings:
        config_dir = root / "engine-config"
        (config_dir / "codex").mkdir(parents=True)
        (config_dir / "codex" / "enforced.json").write_text(json.dumps(FAKE_CONFIG["codex"](llm)))
        extra = {"SKILL_RUNNER_ENGINE_CONFIG_DIR": str(config_dir)}
        worker = WorkerProcess(
            settings, "served", settings.data_dir / "worker.log", extra_env=extra
        )
        env = {**service_env(settings), **extra, "PORT": str(free_port()), "WEB_CONCURRENCY": "1"}
        api = Api(env, int(env["PORT"]))
        api.start()
        try:
            yield api
        finally:
            api.stop()
            worker.stop()


def create(api: Api) -> str:
    body = {
        "skill_id": "pick-title",
        "engine": "codex",
        "input": {"text": "hello"},
        "runtime_options": {"no_cache": True},
    }
    status, created = call(
        "POST", f"{api.base}/v1/jobs", json.dumps(body).encode(), "application/json"
    )
    assert status == 200, created
    return created["request_id"]


def frames(api: Api, rid: str, last_id: int | None = None, stop_after: int | None = None):
    """(event, data, received at) of one stream; `stop_after` chat events: hang up early."""
    headers = {"Accept": "text/event-stream"}
    if last_id is not None:
        headers["Last-Event-ID"] = str(last_id)
    request = urllib.request.Request(f"{api.base}/v1/jobs/{rid}/events", headers=headers)
    got, fields = [], {}
    with urllib.request.urlopen(request, timeout=60) as resp:
        for raw in resp:
            line = raw.decode().rstrip("\n")
            if line:
                key, _, value = line.partition(": ")
                fields[key] = value
                continue
            got.append((fields["event"], json.loads(fields["data"]), time.monotonic()))
            fields = {}
            chats = [f for f in got if f[0] == "chat_event"]
            if stop_after is not None and len(chats) >= stop_after:
                break
    return got


def history(api: Api, rid: str) -> list[dict]:
    return call("GET", f"{api.base}/v1/jobs/{rid}/events/history")[1]["events"]


def test_a_live_stream_delivers_events_as_the_run_goes_and_ends_with_it(served):
    rid = create(served)
    got = frames(served, rid)
    assert got[0][0] == "snapshot"
    chats = [f for f in got if f[0] == "chat_event"]
    events = [data for _e, data, _t in chats]
    assert events == history(served, rid)  # every event once, in order
    assert events[-1]["data"]["terminal"]["status"] == "succeeded"
    # live, not at the end: step-1's chunk arrived well before the terminal event
    first = next(t for _e, d, t in chats if "step-1" in json.dumps(d))
    assert chats[-1][2] - first > 1.0
    # a subscriber after the end gets the whole replay, and the stream closes
    replay = [d for e, d, _t in frames(served, rid) if e == "chat_event"]
    assert replay == events


def test_an_api_restart_mid_stream_loses_and_repeats_nothing(served):
    rid = create(served)
    before = [d for e, d, _t in frames(served, rid, stop_after=3) if e == "chat_event"]
    served.stop()  # the client's connection drops with the API
    served.start()
    after = [d for e, d, _t in frames(served, rid, last_id=before[-1]["seq"]) if e == "chat_event"]
    seqs = [e["seq"] for e in before + after]
    assert seqs == list(range(1, len(seqs) + 1))
    assert before + after == history(served, rid)
    assert after[-1]["data"]["terminal"]["status"] == "succeeded"
