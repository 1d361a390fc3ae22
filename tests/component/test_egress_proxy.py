"""runner_core.egress: the run's egress proxy on its unix socket (real sockets, no box): what it
lets through, what it refuses and reports, and how a run's allowed endpoints are found."""

from __future__ import annotations

import http.server
import socket
import threading

import pytest

from runner_core.egress import (
    EgressPlan,
    EgressProxy,
    Endpoint,
    parse_endpoint,
    provider_endpoints,
    proxy_env,
)


@pytest.fixture
def web():
    """An HTTP server on the loopback answering every GET with its path."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (the standard library's name)
            body = f"path={self.path}".encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def ask(proxy: EgressProxy, request: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(5)
        sock.connect(str(proxy.socket_path))
        sock.sendall(request)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
        return data


def test_connect_to_an_allowed_endpoint_is_relayed_and_any_other_refused_and_reported(web):
    refused: list[Endpoint] = []
    plan = EgressPlan(frozenset({Endpoint("127.0.0.1", web)}), refused.append)
    with EgressProxy(plan) as proxy:
        tunnel = ask(
            proxy,
            f"CONNECT 127.0.0.1:{web} HTTP/1.1\r\nHost: x\r\n\r\n".encode()
            + b"GET /through HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        )
        assert tunnel.startswith(b"HTTP/1.1 200 Connection established")
        assert tunnel.endswith(b"path=/through")
        other = ask(proxy, b"CONNECT 127.0.0.1:6379 HTTP/1.1\r\nHost: x\r\n\r\n")
        assert other.startswith(b"HTTP/1.1 403") and b"127.0.0.1:6379 is not allowed" in other
        assert refused == [Endpoint("127.0.0.1", 6379)]
        bad = ask(proxy, b"nonsense\r\n\r\n")
        assert bad.startswith(b"HTTP/1.1 400")
    assert not proxy.socket_path.exists()  # its folder goes with it


def test_plain_http_is_sent_to_the_origin_one_request_per_connection(web):
    plan = EgressPlan(frozenset({Endpoint("127.0.0.1", web)}))
    with EgressProxy(plan) as proxy:
        answer = ask(
            proxy,
            f"GET http://127.0.0.1:{web}/v1/x?q=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            "Proxy-Connection: keep-alive\r\n\r\n".encode(),
        )
        assert answer.startswith(b"HTTP/1.") and answer.endswith(b"path=/v1/x?q=1")
        https_form = ask(proxy, b"GET https://127.0.0.1:443/ HTTP/1.1\r\nHost: x\r\n\r\n")
        assert https_form.startswith(b"HTTP/1.1 400")  # TLS goes by CONNECT


def test_endpoints_are_read_from_the_engine_configuration_only():
    assert parse_endpoint("http://127.0.0.1:8080/v1") == Endpoint("127.0.0.1", 8080)
    # a bracketed v6 address with its port (it was read as the host '::1]:23119', port 443)
    assert parse_endpoint("[::1]:23119") == Endpoint("::1", 23119)
    assert parse_endpoint("[::1]") == Endpoint("::1", 443)
    assert parse_endpoint("[::1]x") is None
    assert parse_endpoint("https://API.example.com/v1") == Endpoint("api.example.com", 443)
    assert parse_endpoint("example.com") == Endpoint("example.com", 443)
    assert parse_endpoint("example.com:80") == Endpoint("example.com", 80)
    assert parse_endpoint("example.com:x") is None and parse_endpoint(":80") is None
    config = {
        "base_url": "http://127.0.0.1:9000/v1",
        "env": {"EXTRA_URL": "https://models.internal:8443/x", "FLAG": "1"},
        "settings": {"provider": {"url": "http://10.0.0.5:11434"}},
    }
    assert provider_endpoints("codex", config) == {
        Endpoint("127.0.0.1", 9000),
        Endpoint("models.internal", 8443),
        Endpoint("10.0.0.5", 11434),
    }
    assert Endpoint("api.anthropic.com", 443) in provider_endpoints("claude", {})
    plan = EgressPlan(frozenset({Endpoint("127.0.0.1", 9000), Endpoint("x.org", 443)}))
    assert plan.direct_ports() == [9000]  # a loopback provider is forwarded as it is


def test_the_proxy_environment_points_every_client_at_the_box_s_proxy():
    env = proxy_env()
    assert env["HTTPS_PROXY"] == env["http_proxy"] == "http://127.0.0.1:3128"
    assert env["NO_PROXY"] == env["no_proxy"] == ""


def test_the_forwarder_says_which_command_it_could_not_start(tmp_path):
    """Outside a box its relaying child would outlive it: the test ends the group."""
    import os
    import signal
    import subprocess
    import sys

    from runner_core.egress import FORWARDER

    missing = tmp_path / "missing-cli"
    with (tmp_path / "stderr").open("wb") as err:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-I",
                "-S",
                str(FORWARDER),
                str(tmp_path / "s"),
                "0",
                "--",
                str(missing),
            ],
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
        )
        try:
            assert proc.wait(10) == 127
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
    said = (tmp_path / "stderr").read_text()
    assert said.strip() == f"cannot start {missing}: [Errno 2] No such file or directory"


def test_a_run_trying_many_hosts_writes_a_bounded_number_of_refusal_events(monkeypatch):
    from types import SimpleNamespace

    import runner_core.metrics as metrics
    from runner_core.egress import Endpoint
    from worker.execution.network import REPORTED_REFUSALS, _refusals

    class Events:
        def __init__(self) -> None:
            self.emitted: list[dict] = []

        def emit(self, _kind: str, data: dict) -> None:
            self.emitted.append(data)

    events = Events()
    monkeypatch.setattr(metrics, "_label_values", {})
    refused = _refusals(SimpleNamespace(events=events), "codex")  # type: ignore[arg-type]
    for _ in range(3):
        refused(Endpoint("same.example", 443))
    for n in range(1000):
        refused(Endpoint(f"h{n}.example", 443))
    assert len(events.emitted) == REPORTED_REFUSALS + 1
    assert [e["details"].get("host") for e in events.emitted[:2]] == ["same.example", "h0.example"]
    assert "further ones are not reported" in events.emitted[-1]["message"]


def test_a_metric_label_a_run_chooses_takes_a_bounded_number_of_values(monkeypatch):
    import runner_core.metrics as metrics

    monkeypatch.setattr(metrics, "_label_values", {})
    values = [metrics.bounded_label("host", f"h{n}") for n in range(metrics.LABEL_VALUES_MAX + 50)]
    assert values[: metrics.LABEL_VALUES_MAX] == [f"h{n}" for n in range(metrics.LABEL_VALUES_MAX)]
    assert set(values[metrics.LABEL_VALUES_MAX :]) == {metrics.OTHER}
    assert metrics.bounded_label("host", "h0") == "h0"  # one seen before keeps its series
    assert metrics.bounded_label("skill", "s") == "s"  # each label has its own
