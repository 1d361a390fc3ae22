"""HTTP under the SDK (urllib3: a request costs a third of the client CPU httpx's does, which
counts when a batch client shares the cores with the service): base URL, bearer token, the
error body as SkillRunnerError, and retries of 429 and 503 after their Retry-After (and of
lost connections where a retry is safe)."""

from __future__ import annotations

import email.utils
import json as jsonlib
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, cast
from urllib.parse import urlencode, urlsplit

import urllib3
from urllib3.exceptions import ConnectTimeoutError, HTTPError

from skill_runner_client import multipart
from skill_runner_client.errors import (
    CONNECTION_FAILED,
    UNEXPECTED_RESPONSE,
    SkillRunnerError,
    not_the_api,
)

RETRY_STATUSES = (429, 503)
CONNECT_TIMEOUT_SEC = 10.0
UNSET = object()


def retry_after_sec(value: str | None, default: float) -> float:
    """Seconds a Retry-After header asks for (a number or an HTTP date)."""
    if not value:
        return default
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return default
    return max(0.0, when.timestamp() - time.time())


class NotSent(SkillRunnerError):
    """No connection was made (refused, or none within the connect timeout): the request never
    reached the service, so sending it again is safe whatever it is."""


class Response:
    """An answer: status, headers and body; a streamed one reads its body as it is iterated."""

    def __init__(self, raw: urllib3.BaseHTTPResponse, streamed: bool = False) -> None:
        self.raw, self.status_code, self.headers = raw, raw.status, raw.headers
        self.content = b"" if streamed else raw.data

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    def json(self) -> Any:
        """The body as JSON; SkillRunnerError UNEXPECTED_RESPONSE when it is not (a server
        that is not the service answering 200 with a page)."""
        try:
            return jsonlib.loads(self.content)
        except ValueError:
            message = not_the_api(self.status_code, self.text, " that is not JSON")
            raise SkillRunnerError(self.status_code, UNEXPECTED_RESPONSE, message) from None

    def read(self) -> None:
        self.content = self.raw.read()

    def iter_bytes(self, size: int = 65536) -> Iterator[bytes]:
        while True:
            chunk = self._read1(size)
            if not chunk:
                return
            yield chunk

    def iter_lines(self) -> Iterator[str]:
        """Lines as soon as each is complete (server-sent events), without their line end."""
        pending = b""
        for chunk in self.iter_bytes():
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                yield line.rstrip(b"\r").decode("utf-8", "replace")
        if pending:
            yield pending.rstrip(b"\r").decode("utf-8", "replace")

    def _read1(self, size: int) -> bytes:
        try:
            return self.raw.read1(size)
        except HTTPError as exc:  # the connection dropped mid-body
            raise SkillRunnerError(None, CONNECTION_FAILED, f"reading the answer: {exc}") from exc


class Transport:
    """One connection pool to the service, shared by threads."""

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 5,
        max_retry_wait: float = 60.0,
    ) -> None:
        self.max_retries, self.max_retry_wait = max_retries, max_retry_wait
        expected = f"server URL {base_url!r}: expected http(s)://host[:port][/path]"
        try:
            base = urlsplit(base_url.rstrip("/"))
            base.port  # noqa: B018 - raises for a port that is not a number from 0 to 65535
        except ValueError as exc:  # an unclosed [, a port out of range
            raise ValueError(f"{expected} ({exc})") from None
        if base.scheme not in ("http", "https") or not base.hostname:
            raise ValueError(expected)
        self.prefix = base.path
        # a token read from a file keeps its line end; one holding a character no header can
        # carry is refused here, since urllib3's error would print it whole (into a CI log)
        token = (token or "").strip()
        if any(c < " " or "\x7f" <= c < "\xa0" or c > "\xff" for c in token):
            raise ValueError("the token holds a character a header cannot carry (a line break?)")
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.read_timeout = timeout
        self.timeout = urllib3.Timeout(connect=CONNECT_TIMEOUT_SEC, read=timeout)
        self.pool = urllib3.connection_from_url(
            f"{base.scheme}://{base.netloc}", maxsize=64, block=False, retries=False
        )

    def close(self) -> None:
        self.pool.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        rewind: Callable[[], object] | None = None,
        safe_to_repeat: bool | None = None,
        headers: Mapping[str, str] | None = None,
        **kwargs: Any,
    ) -> Response:
        """Send and return a 2xx answer; raise SkillRunnerError otherwise. `rewind` resets a
        file body before each retry; a connection that could not be made is retried for any
        request, one lost once made only when repeating the request is safe (GET, or a POST
        with an Idempotency-Key). `params`, `json`, `data`
        (form fields), `files` (field -> (filename, file, type)) and `timeout` as in requests."""
        if safe_to_repeat is None:
            safe_to_repeat = method == "GET" or "Idempotency-Key" in (headers or {})
        attempt = 0
        while True:
            if rewind is not None:
                rewind()
            try:
                response = self._send(method, path, headers, False, **kwargs)
            except SkillRunnerError as exc:
                repeat = safe_to_repeat or isinstance(exc, NotSent)
                if not repeat or attempt >= self.max_retries:
                    raise
                self._sleep(None, attempt)
                attempt += 1
                continue
            if response.status_code in RETRY_STATUSES and attempt < self.max_retries:
                self._sleep(response.headers.get("Retry-After"), attempt)
                attempt += 1
                continue
            if response.status_code >= 400:
                raise error_of(response)
            return response

    @contextmanager
    def stream(
        self, method: str, path: str, headers: Mapping[str, str] | None = None, **kwargs: Any
    ) -> Iterator[Response]:
        """A streamed 2xx answer (downloads, events); retried like a GET until its body starts."""
        attempt = 0
        while True:
            try:
                response = self._send(method, path, headers, True, **kwargs)
            except SkillRunnerError:
                if attempt >= self.max_retries:
                    raise
                self._sleep(None, attempt)
                attempt += 1
                continue
            try:
                if response.status_code in RETRY_STATUSES and attempt < self.max_retries:
                    retry_after = response.headers.get("Retry-After")
                elif response.status_code >= 400:
                    response.read()
                    raise error_of(response)
                else:
                    yield response
                    return
            finally:
                if not response.raw.closed:  # a body left unread: the connection is not reused
                    response.raw.close()
                response.raw.release_conn()
            self._sleep(retry_after, attempt)
            attempt += 1

    def _send(
        self,
        method: str,
        path: str,
        headers: Mapping[str, str] | None,
        streamed: bool,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        data: Mapping[str, str] | None = None,
        files: Mapping[str, multipart.FilePart] | None = None,
        timeout: float | None | object = UNSET,
    ) -> Response:
        url = self.prefix + path
        if params:
            url += "?" + urlencode({k: _param(v) for k, v in params.items() if v is not None})
        sent = {**self.headers, **(headers or {})}
        body: Any = None
        if files is not None or data is not None:
            body, sent["Content-Type"] = multipart.encode(data or {}, files or {})
            sent["Content-Length"] = str(body.length)
        elif json is not None:
            # allow_nan=False: NaN is not JSON; ValueError here instead of a body the API refuses
            text = jsonlib.dumps(json, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
            body = text.encode()
            sent["Content-Type"] = "application/json"
        read = self.timeout
        if timeout is not UNSET:  # None: wait for the body as long as it takes (events)
            read = urllib3.Timeout(connect=CONNECT_TIMEOUT_SEC, read=cast(float | None, timeout))
        try:
            raw = self.pool.urlopen(
                method,
                url,
                body=body,
                headers=sent,
                timeout=read,
                preload_content=not streamed,
                redirect=False,
            )
        except ConnectTimeoutError as exc:  # refused too (NewConnectionError)
            raise NotSent(None, CONNECTION_FAILED, f"{method} {path}: {exc}") from exc
        except HTTPError as exc:
            raise SkillRunnerError(None, CONNECTION_FAILED, f"{method} {path}: {exc}") from exc
        return Response(raw, streamed)

    def _sleep(self, retry_after: str | None, attempt: int) -> None:
        backoff = min(2.0**attempt * 0.5, self.max_retry_wait)
        time.sleep(min(retry_after_sec(retry_after, backoff), self.max_retry_wait))


def _param(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def error_of(response: Response) -> SkillRunnerError:
    try:
        body = jsonlib.loads(response.content)
    except ValueError:
        body = None
    return SkillRunnerError.from_response(response.status_code, body, response.text)
