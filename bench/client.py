"""A keep-alive HTTP client on http.client: one connection per thread."""

from __future__ import annotations

import http.client
import json
import threading
import time
from dataclasses import dataclass
from typing import Any, BinaryIO
from urllib.parse import urlsplit


@dataclass
class Response:
    status: int
    body: Any
    seconds: float
    headers: dict[str, str]


class Client:
    """JSON over HTTP/1.1 with a persistent connection per thread."""

    def __init__(self, base_url: str, timeout: float = 120.0) -> None:
        parts = urlsplit(base_url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.timeout = timeout
        self._local = threading.local()
        self.requests = 0

    def _conn(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = http.client.HTTPConnection(
                self.host, self.port, timeout=self.timeout, blocksize=1 << 20
            )
            self._local.conn = conn
        return conn

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        headers: dict[str, str] | None = None,
        raw: bool = False,
    ) -> Response:
        """Send one request; JSON bodies are encoded, JSON answers decoded (unless `raw`)."""
        hdrs = dict(headers or {})
        data: bytes | BinaryIO | None = None
        if (
            body is not None
            and not isinstance(body, (bytes, bytearray))
            and not hasattr(body, "read")
        ):
            data = json.dumps(body).encode()
            hdrs.setdefault("Content-Type", "application/json")
        else:
            data = body
        for attempt in (1, 2):
            conn = self._conn()
            started = time.perf_counter()
            try:
                conn.request(method, path, body=data, headers=hdrs)
                resp = conn.getresponse()
                payload = resp.read()
            except (http.client.HTTPException, ConnectionError):
                self.close()
                if attempt == 2 or hasattr(data, "read"):
                    raise
                continue
            elapsed = time.perf_counter() - started
            self.requests += 1
            decoded: Any = payload
            if not raw and payload:
                try:
                    decoded = json.loads(payload)
                except ValueError:
                    decoded = payload
            return Response(resp.status, decoded, elapsed, dict(resp.getheaders()))
        raise AssertionError("unreachable")

    def get(self, path: str) -> Response:
        return self.request("GET", path)

    def post(self, path: str, body: Any = None, headers: dict[str, str] | None = None) -> Response:
        return self.request("POST", path, body, headers)

    def stream_get(self, path: str, chunk: int = 1 << 20) -> tuple[int, int, float]:
        """GET `path` reading the body in chunks and discarding it: (status, bytes, seconds)."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        started = time.perf_counter()
        try:
            conn.request("GET", path)
            resp = conn.getresponse()
            total = 0
            while True:
                block = resp.read(chunk)
                if not block:
                    break
                total += len(block)
            return resp.status, total, time.perf_counter() - started
        finally:
            conn.close()
