"""Each real CLI in the run's network box (runner_core.egress through the worker's supervisor):
the fake model asks its shell tool to run a probe that connects (1) to Redis on the host's
loopback, (2) to a host port the skill's allowlist names, (3) to a port nobody named, directly
and through the box's proxy. (1) and (3) are refused, (3)'s proxy attempt is reported, (2) is
reached, and the run still ends with the model's answer: the CLI's own traffic to its provider
goes through."""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path

import pytest

from fake_llm import FakeLLM, Script
from runner_core.egress import EgressPlan, Endpoint, provider_endpoints
from runner_core.engines.base import EngineContext
from runner_core.engines.config import deep_merge, load_engine_config
from tests.engines.harness import (
    FAKE_CONFIG,
    PROBE_PROMPT,
    PROBE_SKILL,
    engine_box,
)
from tests.engines.test_every_engine import ENGINES

REDIS_PORT = 6379
PROBE = """\
import json, os, socket, sys
def direct(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=3) as s:
            s.settimeout(3)
            return "reached:" + s.recv(16).decode(errors="replace")
    except OSError as exc:
        return "refused:" + type(exc).__name__
def proxied(port):
    proxy = os.environ.get("HTTPS_PROXY", "")
    if not proxy:
        return "no proxy"
    host, _, proxy_port = proxy.rpartition("/")[2].rpartition(":")
    with socket.create_connection((host, int(proxy_port)), timeout=3) as s:
        s.sendall(f"CONNECT 127.0.0.1:{port} HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n".encode())
        return s.recv(64).decode(errors="replace").split("\\r\\n")[0]
redis, allowed, unnamed = map(int, sys.argv[1:4])
found = {"redis": direct(redis), "allowed": direct(allowed), "unnamed": direct(unnamed),
         "unnamed_by_proxy": proxied(unnamed)}
open("network-probe.json", "w").write(json.dumps(found))
"""


class Listener:
    """A service on the host's loopback that greets whoever connects."""

    def __init__(self, greeting: bytes) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.greeting = greeting
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.sendall(self.greeting)

    def close(self) -> None:
        self.sock.close()


@pytest.mark.parametrize("engine", ENGINES, ids=lambda engine: engine.name)
def test_the_box_lets_out_the_provider_and_the_allowlist_only(tmp_path: Path, engine) -> None:
    boxed = engine_box(tmp_path, engine.name)
    adapter, run_dir = boxed.adapter, boxed.run_dir
    (run_dir / "probe_net.py").write_text(PROBE)
    allowed, unnamed = Listener(b"allowed"), Listener(b"unnamed")
    command = f"python3 probe_net.py {REDIS_PORT} {allowed.port} {unnamed.port}"
    final = json.dumps({"status": "ok", "engine": engine.name})
    refused: list[Endpoint] = []
    try:
        with FakeLLM(Script(command=command, final_text=final)) as llm:
            config = {**FAKE_CONFIG[adapter.name](llm), **engine.config}
            ctx = EngineContext(
                run_dir, PROBE_SKILL, PROBE_PROMPT, config, model=config["model"], boxed=True
            )
            provider = provider_endpoints(engine.name, config)
            llm_port = int(llm.base_url.rsplit(":", 1)[1].split("/")[0])
            assert Endpoint("127.0.0.1", llm_port) in provider, provider
            plan = EgressPlan(
                frozenset({*provider, Endpoint("127.0.0.1", allowed.port)}), refused.append
            )
            process = boxed.run(adapter.build_command(ctx), plan)
    finally:
        allowed.close()
        unnamed.close()
    output = adapter.parse_output(process)
    stderr = process.stderr_path.read_text(errors="replace")[-2000:]
    assert output.error is None, stderr
    assert output.parsed_json == json.loads(final)
    found = json.loads((run_dir / "network-probe.json").read_text())
    assert found["redis"].startswith("refused:"), found
    assert found["allowed"] == "reached:allowed", found
    assert found["unnamed"].startswith("refused:"), found
    assert found["unnamed_by_proxy"].startswith("HTTP/1.1 403"), found
    assert Endpoint("127.0.0.1", unnamed.port) in refused


# An address of the host that is no loopback port the box forwards (127.0.0.0/8 is all local
# to each namespace): a CLI reaches a provider there only through the box's proxy.
ELSEWHERE = "127.0.1.1"


@pytest.mark.parametrize("engine", ENGINES, ids=lambda engine: engine.name)
def test_a_provider_the_box_does_not_forward_is_reached_through_its_proxy(
    tmp_path: Path, engine
) -> None:
    """As with a provider on the internet: the CLI must honour HTTP(S)_PROXY. One that did
    not would fail with a connection error, never go around the box."""
    boxed = engine_box(tmp_path, engine.name)
    adapter, run_dir = boxed.adapter, boxed.run_dir
    final = json.dumps({"status": "ok", "engine": engine.name})
    with FakeLLM(Script(tool=False, final_text=final), host=ELSEWHERE) as llm:
        config = {**FAKE_CONFIG[adapter.name](llm), **engine.config}
        ctx = EngineContext(
            run_dir, PROBE_SKILL, PROBE_PROMPT, config, model=config["model"], boxed=True
        )
        plan = EgressPlan(frozenset(provider_endpoints(engine.name, config)))
        assert plan.direct_ports() == []  # nothing forwarded: the proxy is the only way
        process = boxed.run(adapter.build_command(ctx), plan)
        asked = len(llm.requests)
    output = adapter.parse_output(process)
    stderr = process.stderr_path.read_text(errors="replace")[-2000:]
    assert output.error is None, stderr
    assert output.parsed_json == json.loads(final) and asked >= 1


@pytest.mark.parametrize("engine", ENGINES, ids=lambda engine: engine.name)
def test_a_plain_run_asks_the_box_for_nothing_but_its_provider(tmp_path: Path, engine) -> None:
    """A CLI's own background traffic (update checks, telemetry, plugin catalogues) is turned
    off by its adapter or the service's engine config (deploy/engine-config): each such
    connection would be refused, reported on every run as a NETWORK_REFUSED warning, and cost
    the run its time."""
    boxed = engine_box(tmp_path, engine.name)
    adapter, run_dir = boxed.adapter, boxed.run_dir
    final = json.dumps({"status": "ok", "engine": engine.name})
    refused: list[Endpoint] = []
    with FakeLLM(Script(tool=False, final_text=final)) as llm:
        service = load_engine_config(adapter.name, skill_dir=None, user=None)
        config = deep_merge(service, {**FAKE_CONFIG[adapter.name](llm), **engine.config})
        ctx = EngineContext(
            run_dir, PROBE_SKILL, PROBE_PROMPT, config, model=config["model"], boxed=True
        )
        plan = EgressPlan(frozenset(provider_endpoints(engine.name, config)), refused.append)
        process = boxed.run(adapter.build_command(ctx), plan)
    output = adapter.parse_output(process)
    assert output.error is None, process.stderr_path.read_text(errors="replace")[-2000:]
    assert output.parsed_json == json.loads(final)
    assert [f"{e.host}:{e.port}" for e in refused] == []
