"""A run's network box: its process sees only its own loopback, and the one way out is this
egress proxy, owned by the worker outside the box and reached through a unix socket bound into
it (runner_core.egress_forward relays to it from inside).

The proxy speaks HTTP/1.1 proxying (`CONNECT host:port` for TLS and any stream, absolute-form
`GET http://host:port/...` for plain HTTP) and lets through only the run's allowed endpoints:
its engine's provider (each URL the engine's configuration gives its CLI, else the engine's
public API hosts) and what the skill's `automation.allowlist` names. Every refusal is answered
`403` and reported (`on_refused`: the run's event and the metrics counter).
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

log = logging.getLogger(__name__)
FORWARDER = Path(__file__).with_name("egress_forward.py")
PROXY_PORT = 3128  # inside the box: the CLI's HTTP(S)_PROXY
CHUNK = 65536
MAX_HEAD = 64 * 1024
CONNECT_TIMEOUT_SEC = 10.0
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
_URL = re.compile(r"https?://[^\s\"'<>]+")
# An engine's provider when its configuration names no base URL: its public API hosts.
PUBLIC_PROVIDERS: dict[str, tuple[str, ...]] = {
    "codex": ("api.openai.com:443", "chatgpt.com:443", "auth.openai.com:443"),
    "claude": ("api.anthropic.com:443",),
    "gemini": (
        "generativelanguage.googleapis.com:443",
        "cloudcode-pa.googleapis.com:443",
        "oauth2.googleapis.com:443",
    ),
    "qwen": ("dashscope.aliyuncs.com:443", "dashscope-intl.aliyuncs.com:443", "chat.qwen.ai:443"),
    "opencode": ("api.openai.com:443", "api.anthropic.com:443", "openrouter.ai:443"),
    "kilo": ("api.kilo.ai:443", "openrouter.ai:443"),
}


@dataclass(frozen=True)
class Endpoint:
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


def parse_endpoint(text: str, default_port: int = 443) -> Endpoint | None:
    """`host`, `host:port` or a URL as an Endpoint (None when it names no host)."""
    text = text.strip()
    try:
        if "://" in text:
            parts = urlsplit(text)
            if not parts.hostname:
                return None
            return Endpoint(
                parts.hostname.lower(), parts.port or (443 if parts.scheme == "https" else 80)
            )
        if text.startswith("["):  # [v6 address] or [v6 address]:port
            host, _, rest = text[1:].partition("]")
            if rest and not rest.startswith(":"):
                return None
            number = rest[1:]
        else:
            host, _, number = text.rpartition(":") if text.count(":") == 1 else (text, "", "")
        if not host:
            return None
        return Endpoint(host.lower().strip("[]"), int(number) if number else default_port)
    except ValueError:  # a port that is no number, or out of range
        return None


def provider_endpoints(engine: str, config: Mapping[str, Any]) -> set[Endpoint]:
    """The engine's provider as its configuration names it (`base_url`, and any URL among the
    variables and settings it gives the CLI); the engine's public API hosts when it names none.
    Never the prompt or the input: what a run reaches is the operator's and skill's choice."""
    texts = [str(config.get("base_url") or "")]
    texts += [str(v) for v in (config.get("env") or {}).values()]
    texts.append(json.dumps(config.get("settings") or {}))
    found = set()
    for text in texts:
        for url in _URL.findall(text):
            endpoint = parse_endpoint(url.rstrip(".,);]"))
            if endpoint is not None:
                found.add(endpoint)
    if not found:
        found = {e for e in map(parse_endpoint, PUBLIC_PROVIDERS.get(engine, ())) if e}
    return found


@dataclass
class EgressPlan:
    """What one run's box may reach, and who hears of a refusal."""

    allowed: frozenset[Endpoint]
    on_refused: Callable[[Endpoint], None] = field(default=lambda _e: None, repr=False)

    def allows(self, endpoint: Endpoint) -> bool:
        return endpoint in self.allowed

    def direct_ports(self) -> list[int]:
        """Ports of allowed endpoints on the host's loopback: the box forwards them as they
        are, for a client that reaches a local provider without a proxy."""
        return sorted({e.port for e in self.allowed if e.host in LOOPBACK} - {PROXY_PORT})


class EgressProxy:
    """The proxy of one run: a unix socket in a short private folder, served by threads."""

    def __init__(self, plan: EgressPlan) -> None:
        self.plan = plan
        # a short path (a unix socket's is < 108 bytes) outside the folders the box hides
        self.dir = Path(tempfile.mkdtemp(prefix="sr-egress-", dir=_short_tmp()))
        self.socket_path = self.dir / "s"
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(self.socket_path))
        self.listener.listen(64)
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> EgressProxy:
        self.thread.start()
        return self

    def __exit__(self, *_exc) -> None:
        try:  # wakes the accept at once (a poll interval would delay the run's end)
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.listener.close()
        self.thread.join(timeout=5)
        shutil.rmtree(self.dir, ignore_errors=True)

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:  # closed: the run ended
                return
            threading.Thread(target=self._handle_closing, args=(client,), daemon=True).start()

    def _handle_closing(self, client: socket.socket) -> None:
        try:
            self._handle(client)
        except OSError:
            pass
        finally:
            client.close()

    def _handle(self, client: socket.socket) -> None:
        head = _read_head(client)
        if head is None:
            return
        request_line, _, rest = head.partition(b"\r\n")
        try:
            method, target, _version = request_line.decode("latin-1").split(" ", 2)
        except ValueError:
            client.sendall(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n")
            return
        connect = method.upper() == "CONNECT"
        endpoint = parse_endpoint(target if connect else _http_origin(target) or "", 443)
        if endpoint is None:
            client.sendall(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n")
            return
        if not self.plan.allows(endpoint):
            message = f"{endpoint} is not allowed for this run (the run's network box)\n"
            client.sendall(
                b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                + f"Content-Length: {len(message)}\r\n\r\n{message}".encode()
            )
            try:
                self.plan.on_refused(endpoint)
            except Exception:  # a report that fails never takes the proxy down
                log.exception("egress: reporting a refusal failed")
            return
        try:
            upstream = socket.create_connection(
                (endpoint.host, endpoint.port), timeout=CONNECT_TIMEOUT_SEC
            )
        except OSError as exc:
            client.sendall(f"HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\n\r\n{exc}\n".encode())
            return
        upstream.settimeout(None)
        with upstream:
            if connect:
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                leftover = rest.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in rest else b""
            else:  # origin-form to the server; one request per connection
                path = _origin_path(target)
                leftover = f"{method} {path} HTTP/1.1\r\n".encode() + _closing(rest)
            if leftover:
                upstream.sendall(leftover)
            back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
            back.start()
            _pump(client, upstream)
            back.join()


def _short_tmp() -> str | None:
    return "/tmp" if os.access("/tmp", os.W_OK) else None


def _read_head(client: socket.socket) -> bytes | None:
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > MAX_HEAD:
            return None
        chunk = client.recv(CHUNK)
        if not chunk:
            return None
        data += chunk
    return data


def _http_origin(target: str) -> str | None:
    parts = urlsplit(target)
    if parts.scheme != "http" or not parts.hostname:
        return None
    return f"{parts.hostname}:{parts.port or 80}"


def _origin_path(target: str) -> str:
    parts = urlsplit(target)
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


def _closing(rest: bytes) -> bytes:
    """The request's headers (and whatever body followed) with `Connection: close`: the next
    request on the client's connection may be for another host."""
    headers, sep, body = rest.partition(b"\r\n\r\n")
    kept = [
        line
        for line in headers.split(b"\r\n")
        if line and not line.lower().startswith((b"connection:", b"proxy-connection:"))
    ]
    return b"\r\n".join([*kept, b"Connection: close"]) + b"\r\n\r\n" + body


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(CHUNK):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        try:
            sink.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def proxy_env(port: int = PROXY_PORT) -> dict[str, str]:
    """What points a CLI (and what it starts) at the box's proxy; NO_PROXY cleared."""
    url = f"http://127.0.0.1:{port}"
    env = {name: url for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")}
    env.update({name.lower(): url for name in list(env)})
    env.update(NO_PROXY="", no_proxy="", NODE_USE_ENV_PROXY="1")
    return env
