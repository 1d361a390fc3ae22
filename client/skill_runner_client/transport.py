"""HTTP under the SDK: base URL, bearer token, the error body as SkillRunnerError, and retries
of 429 and 503 after their Retry-After (and of lost connections where a retry is safe)."""

from __future__ import annotations

import email.utils
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from skill_runner_client.errors import CONNECTION_FAILED, SkillRunnerError

RETRY_STATUSES = (429, 503)


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


class Transport:
    """One httpx connection pool to the service, shared by threads."""

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 5,
        max_retry_wait: float = 60.0,
        http: httpx.Client | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.max_retries, self.max_retry_wait = max_retries, max_retry_wait
        self.http = http or httpx.Client(
            base_url=base_url.rstrip("/"),
            headers=headers,
            timeout=httpx.Timeout(timeout, connect=10.0),
            limits=httpx.Limits(max_connections=64, max_keepalive_connections=64),
        )

    def close(self) -> None:
        self.http.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        rewind: Callable[[], object] | None = None,
        safe_to_repeat: bool | None = None,
        **kwargs: Any,
    ) -> httpx.Response:
        """Send and return a 2xx answer; raise SkillRunnerError otherwise. `rewind` resets a
        file body before each retry; a lost connection is retried only when repeating the
        request is safe (GET, or a POST with an Idempotency-Key)."""
        if safe_to_repeat is None:
            headers = kwargs.get("headers") or {}
            safe_to_repeat = method == "GET" or "Idempotency-Key" in headers
        attempt = 0
        while True:
            if rewind is not None:
                rewind()
            try:
                response = self.http.request(method, path, **kwargs)
            except httpx.TransportError as exc:
                if not safe_to_repeat or attempt >= self.max_retries:
                    raise SkillRunnerError(
                        None, CONNECTION_FAILED, f"{method} {path}: {exc}"
                    ) from exc
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
    def stream(self, method: str, path: str, **kwargs: Any) -> Iterator[httpx.Response]:
        """A streamed 2xx answer (downloads); retried like a GET until its body starts."""
        attempt = 0
        while True:
            opened = self.http.stream(method, path, **kwargs)
            try:
                response = opened.__enter__()
            except httpx.TransportError as exc:
                if attempt >= self.max_retries:
                    raise SkillRunnerError(
                        None, CONNECTION_FAILED, f"{method} {path}: {exc}"
                    ) from exc
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
                opened.__exit__(None, None, None)
            self._sleep(retry_after, attempt)
            attempt += 1

    def _sleep(self, retry_after: str | None, attempt: int) -> None:
        backoff = min(2.0**attempt * 0.5, self.max_retry_wait)
        time.sleep(min(retry_after_sec(retry_after, backoff), self.max_retry_wait))


def error_of(response: httpx.Response) -> SkillRunnerError:
    try:
        body = response.json()
    except ValueError:
        body = None
    return SkillRunnerError.from_response(response.status_code, body, response.text)
