"""The fake LLM HTTP server: routing, the request log and the `FakeLLM` context manager.

    with FakeLLM(Script(command="touch out.txt", final_text='{"ok": true}')) as llm:
        ... point a CLI at llm.base_url ...
        assert llm.requests

`script` may also be a path to a JSON file, re-read on every request, so a test (or a shell
session using `python -m fake_llm`) can change behaviour while the server runs.
"""

from __future__ import annotations

import gzip
import json
import threading
import zlib
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from fake_llm import anthropic, chat, gemini, responses
from fake_llm.schema import OffSchemaDraws
from fake_llm.script import Script
from fake_llm.wire import Reply, json_reply


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any  # parsed JSON, or the raw text when it is not JSON
    raw: str


def model_list(script: Script) -> dict[str, Any]:
    """A model list readable as both OpenAI and Anthropic shapes."""
    entry = {
        "id": script.model,
        "object": "model",
        "type": "model",
        "created": 0,
        "created_at": "2025-01-01T00:00:00Z",
        "owned_by": "fake",
        "display_name": script.model,
    }
    return {
        "object": "list",
        "data": [entry],
        "has_more": False,
        "first_id": script.model,
        "last_id": script.model,
    }


def route(method: str, path: str, body: Any, script: Script) -> Reply:
    """Dispatch one request to its protocol module."""
    data = body if isinstance(body, dict) else {}
    if method == "GET":
        if path.rstrip("/").endswith("/v1/models"):
            return json_reply(model_list(script))
        if "/v1beta/models" in path:
            return json_reply(
                {
                    "models": [
                        {
                            "name": f"models/{script.model}",
                            "displayName": script.model,
                            "supportedGenerationMethods": ["generateContent"],
                        }
                    ]
                }
            )
        return json_reply({"error": {"message": f"no route for GET {path}"}}, status=404)
    if path.endswith("/responses"):
        return responses.handle(data, script)
    if path.endswith("/chat/completions"):
        return chat.handle(data, script)
    if "/messages" in path:
        return anthropic.handle(path, data, script)
    if "/models/" in path and ":" in path:
        model, _, verb = path.rsplit("/", 1)[1].partition(":")
        return gemini.handle(model, verb, data, script)
    return json_reply({"error": {"message": f"no route for POST {path}"}}, status=404)


def _decode(raw: bytes, encoding: str) -> bytes:
    if encoding == "gzip":
        return gzip.decompress(raw)
    if encoding == "deflate":
        return zlib.decompress(raw)
    return raw


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_GET(self) -> None:  # noqa: N802 - http.server naming
        self._serve("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._serve("POST")

    def _serve(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = _decode(self.rfile.read(length), self.headers.get("Content-Encoding", ""))
        text = raw.decode("utf-8", errors="replace")
        try:
            body: Any = json.loads(text) if text else None
        except json.JSONDecodeError:
            body = text
        parts = urlsplit(self.path)
        self.server.owner.record(
            RecordedRequest(
                method, parts.path, parse_qs(parts.query), dict(self.headers.items()), body, text
            )
        )
        owner = self.server.owner
        script = replace(owner.current_script().for_request(text), draws=owner.draws)
        reply = route(method, parts.path, body, script)
        if reply.hold_sec > 0 and owner.hold(reply.hold_sec):
            self.close_connection = True  # the server stops: the held answer is never sent
            return
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type)
        self.send_header("Content-Length", str(len(reply.body)))
        for key, value in reply.headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(reply.body)
        self.wfile.flush()
        if reply.usage is not None:
            owner.record_usage(reply.usage)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep quiet
        if self.server.owner.verbose:
            super().log_message(format, *args)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: FakeLLM


class FakeLLM:
    """A fake LLM server on 127.0.0.1 (or `host`) in a background thread."""

    def __init__(
        self,
        script: Script | Path | None = None,
        port: int = 0,
        log_path: Path | None = None,
        verbose: bool = False,
        host: str = "127.0.0.1",
    ) -> None:
        self.script: Script | Path = script if script is not None else Script()
        self.requests: list[RecordedRequest] = []
        self.usage: list[dict[str, int]] = []  # the token counts of each answer sent, in order
        self.draws = OffSchemaDraws()  # which final answers go off schema (Script.off_schema_rate)
        self.stopping = threading.Event()  # set by stop(): held answers are dropped
        self.holding = 0  # answers being held now (Script.stall_sec)
        self.log_path = log_path
        self.verbose = verbose
        self._lock = threading.Lock()
        self.host = host
        self._server = _Server((host, port), _Handler)
        self._server.owner = self
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """Root URL; protocols add their own prefix (/v1, /v1beta)."""
        return f"http://{self.host}:{self.port}"

    def current_script(self) -> Script:
        """The script in force (re-read from disk when it is a path)."""
        return Script.load(self.script) if isinstance(self.script, Path) else self.script

    def record(self, request: RecordedRequest) -> None:
        """Append a request to the log (and to the JSONL log file, if any)."""
        with self._lock:
            self.requests.append(request)
            if self.log_path is not None:
                with self.log_path.open("a", encoding="utf-8") as fh:
                    fh.write(
                        json.dumps(
                            {
                                "method": request.method,
                                "path": request.path,
                                "query": request.query,
                                "body": request.body,
                            }
                        )
                        + "\n"
                    )

    def hold(self, seconds: float) -> bool:
        """Hold an answer `seconds` (counted in `holding` meanwhile); True when the server
        stopped first."""
        with self._lock:
            self.holding += 1
        try:
            return self.stopping.wait(seconds)
        finally:
            with self._lock:
                self.holding -= 1

    def record_usage(self, usage: dict[str, int]) -> None:
        """Note the token counts an answer that was sent reported."""
        with self._lock:
            self.usage.append(dict(usage))

    def usage_total(self) -> dict[str, int]:
        """The token counts of every answer sent so far, added up."""
        with self._lock:
            return {
                key: sum(counts.get(key, 0) for counts in self.usage)
                for key in sorted({key for counts in self.usage for key in counts})
            }

    def request_text(self) -> str:
        """All request bodies joined: handy for 'was X sent to the model' assertions."""
        with self._lock:
            return "\n".join(r.raw for r in self.requests)

    def start(self) -> FakeLLM:
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def serve_forever(self) -> None:
        """Serve in the calling thread (used by `python -m fake_llm`)."""
        self._server.serve_forever()

    def __enter__(self) -> FakeLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
