"""Webhooks: where a job's callback may go, how its body is signed, and one delivery attempt.

Only hosts on the operator's allowlist (SKILL_RUNNER_WEBHOOK_HOSTS) are called, and an address
that is loopback, private, link-local or otherwise not global is refused unless that address
itself is listed: an allowed name that resolves somewhere internal is no way in (no
server-side request forgery). Redirects are not followed.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import ipaddress
import json
import socket
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

SIGNATURE_HEADER = "X-Skill-Runner-Signature"
TIMEOUT_SEC = 10.0  # each connect, send and read
DEADLINE_SEC = 30.0  # the whole exchange: a receiver that trickles its answer holds no worker


class WebhookRefused(ValueError):
    """A callback URL the service will not call."""


def check_url(url: str, allowed: tuple[str, ...]) -> None:
    """Raise WebhookRefused unless `url` is http(s) to an allowed host at allowed addresses."""
    if any(ch.isspace() or not ch.isprintable() for ch in url):
        raise WebhookRefused("the callback URL holds a space or a control character")
    try:
        parts = urlsplit(url)
        port = parts.port  # ValueError for a port out of range or not a number
    except ValueError as exc:
        raise WebhookRefused(f"the callback URL does not parse: {exc}") from exc
    if port == 0:  # nothing listens there: every attempt for the retry window would fail
        raise WebhookRefused("the callback URL does not parse: port 0 is no port to call")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise WebhookRefused("the callback URL must be http:// or https:// with a host")
    if parts.username is not None or parts.password is not None:
        raise WebhookRefused("the callback URL may not hold credentials (user:password@)")
    host = parts.hostname.lower()
    if not allowed:
        raise WebhookRefused("webhooks are off: SKILL_RUNNER_WEBHOOK_HOSTS lists no host")
    if host not in allowed:
        raise WebhookRefused(f"host '{host}' is not in SKILL_RUNNER_WEBHOOK_HOSTS")
    for address in _addresses(host, port or (443 if parts.scheme == "https" else 80)):
        if not allowed_address(address, allowed):
            raise WebhookRefused(
                f"'{host}' resolves to {address}, a non-public address not listed itself"
            )


def allowed_address(address: str, allowed: tuple[str, ...]) -> bool:
    """A public address, or one the allowlist names itself."""
    ip = ipaddress.ip_address(address)
    return ip.is_global or str(ip) in allowed


def _addresses(host: str, port: int) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise WebhookRefused(f"'{host}' does not resolve: {exc}") from exc
    return sorted({str(info[4][0]) for info in infos})


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """`t=<unix time>,v1=<hex HMAC-SHA256 of "<t>." + body>`."""
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"t={timestamp},v1={digest.hexdigest()}"


@dataclass(frozen=True)
class Attempt:
    status_code: int | None
    error: str | None

    @property
    def delivered(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # a 3xx is the receiver's answer, not a place to go


class _Watch:
    """The connection of one delivery, shut down when its deadline passes: a read that gets a
    byte now and then never reaches the per-read timeout."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sock: socket.socket | None = None
        self.cut = False

    def connected(self, sock: socket.socket) -> None:
        with self.lock:
            self.sock = sock
            if self.cut:
                _shut(sock)

    def expire(self) -> None:
        with self.lock:
            self.cut = True
            if self.sock is not None:
                _shut(self.sock)


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)  # wakes a blocked recv in the delivering thread
    except OSError:
        pass


def _watched(http_class: Any, watch: _Watch, allowed: tuple[str, ...] | None) -> Any:
    class Watched(http_class):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            if allowed is not None:  # http.client connects through this attribute
                made: Any = self.__dict__["_create_connection"]
                self.__dict__["_create_connection"] = _checked_connect(made, allowed)

        def connect(self) -> None:
            super().connect()
            watch.connected(self.sock)

    return Watched


def _checked_connect(connect: Any, allowed: tuple[str, ...]) -> Any:
    """`connect` that refuses a peer at an address check_url would refuse, before a byte is
    sent: the name is resolved again to connect, and may answer otherwise the second time."""

    def checked(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
        sock = connect(address, *args, **kwargs)
        peer = str(sock.getpeername()[0])
        if not allowed_address(peer, allowed):
            sock.close()
            raise WebhookRefused(
                f"'{address[0]}' now resolves to {peer}, a non-public address not listed itself"
            )
        return sock

    return checked


class _WatchedHTTP(urllib.request.HTTPHandler):
    def __init__(self, watch: _Watch, allowed: tuple[str, ...] | None) -> None:
        super().__init__()
        self.watch = watch
        self.allowed = allowed

    def do_open(self, http_class: Any, req: Any, **kwargs: Any) -> Any:
        return super().do_open(_watched(http_class, self.watch, self.allowed), req, **kwargs)


class _WatchedHTTPS(urllib.request.HTTPSHandler):
    def __init__(self, watch: _Watch, allowed: tuple[str, ...] | None) -> None:
        super().__init__()
        self.watch = watch
        self.allowed = allowed

    def do_open(self, http_class: Any, req: Any, **kwargs: Any) -> Any:
        return super().do_open(_watched(http_class, self.watch, self.allowed), req, **kwargs)


def deliver(
    url: str,
    document: dict[str, Any],
    secret: str,
    event: str,
    deadline: float = DEADLINE_SEC,
    allowed: tuple[str, ...] | None = None,
) -> Attempt:
    """POST the document once (checked again against the allowlist first by the caller); an
    answer that is not HTTP, or not complete within `deadline` seconds, is a failed attempt.
    With `allowed` (the allowlist), the address connected to is checked as check_url checks
    the name's: a name that resolves elsewhere the second time (DNS rebinding) reaches nothing."""
    body = json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "skill-runner-webhook",
        "X-Skill-Runner-Event": event,
        SIGNATURE_HEADER: signature(secret, int(time.time()), body),
    }
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    watch = _Watch()
    opener = urllib.request.build_opener(
        _NoRedirect, _WatchedHTTP(watch, allowed), _WatchedHTTPS(watch, allowed)
    )
    timer = threading.Timer(deadline, watch.expire)
    timer.daemon = True
    timer.start()
    try:
        with opener.open(request, timeout=TIMEOUT_SEC) as resp:
            return Attempt(resp.status, None)
    except urllib.error.HTTPError as exc:
        return Attempt(exc.code, f"HTTP {exc.code}")
    except (OSError, ValueError, http.client.HTTPException) as exc:
        if watch.cut:
            return Attempt(None, f"TimeoutError: no complete answer within {deadline:g} s")
        return Attempt(None, f"{type(exc).__name__}: {exc}")
    finally:
        timer.cancel()
