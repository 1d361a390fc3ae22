"""The routes every run has, under /v1/jobs and /v1/temp-skill-runs alike: upload, status,
waiting, result, logs, log ranges, cancel, bundle, pending interaction and reply."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any, cast
from urllib.parse import quote

from skill_runner_client.errors import CONNECTION_FAILED, SkillRunnerError
from skill_runner_client.inputs import FileSource, build_inputs_zip
from skill_runner_client.transport import Transport
from skill_runner_client.types import (
    TERMINAL_STATUSES,
    CancelResult,
    Created,
    JobResult,
    JobStatus,
    LogRange,
    Logs,
    PendingAnswer,
    ReplyAnswer,
)

LONG_POLL_SEC = 30.0  # per request; the service caps wait_sec at 60


class RunRoutes:
    """One kind of run (`/v1/jobs` or `/v1/temp-skill-runs`)."""

    def __init__(self, transport: Transport, prefix: str) -> None:
        self._t, self.prefix = transport, prefix

    def _path(self, request_id: str, tail: str = "") -> str:
        # quoted, so ? or # stay in the id; a / would reach another route even as %2F (the
        # server decodes it first): `ID/artifacts` answered the manifest as the run's status
        if not request_id or "/" in request_id:
            raise ValueError(f"'{request_id}' is not a request id")
        return f"{self.prefix}/{quote(request_id, safe='')}{tail}"

    def upload(self, request_id: str, files: Mapping[str, FileSource]) -> Created:
        """Send the input files (field -> path or bytes) as the run's one zip."""
        with build_inputs_zip(files) as body:
            return self.upload_zip(request_id, body)

    def upload_new(self, request_id: str, files: Mapping[str, FileSource]) -> Created:
        """`upload` for a run just created: files the service refuses (4xx: too large, a zip
        bomb) cancel the run, which would otherwise wait a day for an upload nobody sends."""
        try:
            return self.upload(request_id, files)
        except SkillRunnerError as exc:
            if exc.status is not None and 400 <= exc.status < 500:
                with contextlib.suppress(SkillRunnerError):
                    self.cancel(request_id)
            raise

    def upload_again(self, request_id: str, files: Mapping[str, FileSource]) -> Created:
        """`upload` for a create that may have been sent before (the same Idempotency-Key): an
        upload already taken is not an error, one still coming in is waited for."""
        for _ in range(120):
            try:
                return self.upload(request_id, files)
            except SkillRunnerError as exc:
                if exc.code == "UPLOAD_NOT_ALLOWED":
                    status = self.get(request_id)
                    return {
                        "request_id": request_id,
                        "cache_hit": status.get("cache_hit", False),
                        "status": status["status"],
                    }
                if exc.code != "UPLOAD_IN_PROGRESS":
                    raise
            time.sleep(0.5)  # the upload of the earlier attempt is still coming in
        raise SkillRunnerError(409, "UPLOAD_IN_PROGRESS", f"the upload of {request_id} never ended")

    def upload_zip(self, request_id: str, zip_file: IO[bytes] | str | os.PathLike[str]) -> Created:
        """Send a ready-made input zip (an open binary file or a path)."""
        if not hasattr(zip_file, "read"):
            with open(cast(str, zip_file), "rb") as opened:
                return self.upload_zip(request_id, opened)
        fh = cast(IO[bytes], zip_file)
        start = fh.tell()
        response = self._t.request(
            "POST",
            self._path(request_id, "/upload"),
            files={"file": ("inputs.zip", fh, "application/zip")},
            rewind=lambda: fh.seek(start),
            safe_to_repeat=False,
        )
        return cast(Created, response.json())

    def get(self, request_id: str, wait_sec: float | None = None) -> JobStatus:
        """The status document; `wait_sec` (<= 60) waits for the run to end first."""
        path = self._path(request_id)
        return cast(JobStatus, self._t.request("GET", path, **self._long_poll(wait_sec)).json())

    def wait(
        self,
        request_id: str,
        timeout: float | None = None,
        until: tuple[str, ...] = TERMINAL_STATUSES,
        interval: float = 0.2,
    ) -> JobStatus:
        """Until the status is one of `until` (by default: the run ended): long polls while
        waiting for the end, polls every `interval` s for other statuses (the long poll answers
        only at the end). TimeoutError after `timeout` seconds (None: no limit)."""
        long_poll = set(until) <= set(TERMINAL_STATUSES)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = LONG_POLL_SEC if deadline is None else deadline - time.monotonic()
            wait_sec = max(0.0, min(LONG_POLL_SEC, left)) if long_poll else None
            status = self.get(request_id, wait_sec=wait_sec)
            if status["status"] in until:
                return status
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"{request_id} still {status['status']} after {timeout} s")
            if not long_poll:
                time.sleep(interval)
            elif status["status"] == "waiting_user" or status.get("waiting_for_upload"):
                time.sleep(1.0)  # the long poll answers at once while the run needs the client

    def result(self, request_id: str, wait_sec: float | None = None) -> JobResult:
        """The result; 409 RUN_NOT_FINISHED while the run goes, unless it ends within wait_sec."""
        path = self._path(request_id, "/result")
        return cast(JobResult, self._t.request("GET", path, **self._long_poll(wait_sec)).json())

    def _long_poll(self, wait_sec: float | None) -> dict[str, Any]:
        """`wait_sec` as a query, the answer waited for that much longer than any other: a
        client timeout shorter than the long poll would cut every one of them off."""
        if not wait_sec:
            return {}
        return {"params": {"wait_sec": wait_sec}, "timeout": self._t.read_timeout + wait_sec}

    def logs(self, request_id: str) -> Logs:
        """Prompt, stdout and stderr (the last 2 MiB of each)."""
        return cast(Logs, self._t.request("GET", self._path(request_id, "/logs")).json())

    def log_range(
        self,
        request_id: str,
        stream: str = "stdout",
        byte_from: int = 0,
        byte_to: int | None = None,
    ) -> LogRange:
        """A byte range of one log, at most 1 MiB."""
        params: dict[str, Any] = {"stream": stream, "byte_from": byte_from}
        if byte_to is not None:
            params["byte_to"] = byte_to
        path = self._path(request_id, "/logs/range")
        return cast(LogRange, self._t.request("GET", path, params=params).json())

    def follow_log(
        self, request_id: str, stream: str = "stdout", byte_from: int = 0, interval: float = 0.5
    ) -> Iterator[str]:
        """Yield a log's text as it grows, until the run has ended and the log is read whole."""
        while True:
            part = self.log_range(request_id, stream, byte_from)
            if part["text"]:
                yield part["text"]
            byte_from = part["byte_to"]
            if part["status"] in TERMINAL_STATUSES and byte_from >= part["size"]:
                return
            if byte_from >= part["size"]:
                time.sleep(interval)

    def events(
        self, request_id: str, cursor: int = 0, reconnects: int = 10, idle_sec: float = 30.0
    ) -> Iterator[dict[str, Any]]:
        """Yield the run's FCMP events (seq > `cursor`) as they happen, until its terminal event
        (or, for a run that ended without one, the end of the stream). A dropped connection, or
        one silent for `idle_sec` (the service sends a heartbeat every 5 s), is resumed after
        the last seq seen (Last-Event-ID): nothing lost, nothing repeated."""
        last, failures = cursor, 0
        while True:
            try:
                for kind, data in self._sse(request_id, last, idle_sec):
                    if kind != "chat_event":
                        continue
                    last, failures = data["seq"], 0
                    yield data
                    if data.get("type") == "conversation.state.changed" and "terminal" in (
                        data.get("data") or {}
                    ):
                        return
                # closed without the terminal event: the run ended without one, or the service
                # closed its streams (a restart) while the run goes on, which is resumed
                if self.get(request_id)["status"] in TERMINAL_STATUSES:
                    return
                failures += 1
                if failures > reconnects:
                    message = f"the event stream of {request_id} keeps closing; the run goes on"
                    raise SkillRunnerError(None, CONNECTION_FAILED, message)
            except SkillRunnerError as exc:
                if exc.status is not None:
                    raise  # an answer (404 ...), not a dropped connection
                failures += 1
                if failures > reconnects:
                    raise
            time.sleep(min(5.0, 0.5 * failures))

    def _sse(
        self, request_id: str, last: int, idle_sec: float
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        headers = {"Accept": "text/event-stream", "Last-Event-ID": str(last)}
        path = self._path(request_id, "/events")
        # a read timeout: a connection gone silent (a host that died, a network cut) ends as
        # a dropped one and is resumed, where waiting for ever would hang the caller
        with self._t.stream("GET", path, headers=headers, timeout=idle_sec) as r:
            kind, data = "", ""
            for line in r.iter_lines():
                if line.startswith("event: "):
                    kind = line[7:]
                elif line.startswith("data: "):
                    data = line[6:]
                elif not line and kind:
                    yield kind, json.loads(data)
                    kind, data = "", ""

    def cancel(self, request_id: str) -> CancelResult:
        """Cancel an active run; a finished one answers accepted=false."""
        return cast(CancelResult, self._t.request("POST", self._path(request_id, "/cancel")).json())

    def download_bundle(self, request_id: str, dest: str | os.PathLike[str]) -> Path:
        """Stream the run bundle zip to `dest` (written whole or not at all)."""
        return self._download(self._path(request_id, "/bundle"), dest)

    def pending(self, request_id: str) -> PendingAnswer:
        """The interaction an interactive run waits on (`pending` None when none)."""
        path = self._path(request_id, "/interaction/pending")
        return cast(PendingAnswer, self._t.request("GET", path).json())

    def reply(
        self,
        request_id: str,
        interaction_id: int,
        response: Any,
        idempotency_key: str | None = None,
    ) -> ReplyAnswer:
        """Answer the pending interaction; the same idempotency_key never starts a second turn."""
        body: dict[str, Any] = {"interaction_id": interaction_id, "response": response}
        if idempotency_key:
            body["idempotency_key"] = idempotency_key
        path = self._path(request_id, "/interaction/reply")
        answer = self._t.request("POST", path, json=body, safe_to_repeat=bool(idempotency_key))
        return cast(ReplyAnswer, answer.json())

    def _download(self, path: str, given: str | os.PathLike[str]) -> Path:
        # the file is written beside `dest` and renamed over it: refuse what that would replace
        # or fail on only after the download (a directory, a device such as /dev/null), and a
        # path ending in / (a folder named, which Path() would take as a file of that name)
        dest = Path(given)
        if dest.is_dir() or os.fspath(given).endswith(("/", os.sep)):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", os.fspath(given))
        if dest.exists() and not dest.is_file():
            raise FileExistsError(errno.EEXIST, "Not a regular file", str(dest))
        if not dest.parent.exists():  # (a file there: opening below says "Not a directory")
            dest.parent.mkdir(parents=True, exist_ok=True)
        part = dest.with_name(dest.name + ".part")
        attempt = 0
        while True:
            try:
                with self._t.stream("GET", path) as response, part.open("wb") as out:
                    for chunk in response.iter_bytes(256 * 1024):
                        out.write(chunk)
                os.replace(part, dest)
                return dest
            except SkillRunnerError as exc:
                part.unlink(missing_ok=True)
                if exc.status is not None or attempt >= self._t.max_retries:
                    raise
                # the connection dropped mid-body (a restart): the download starts over
                time.sleep(min(2.0**attempt * 0.5, self._t.max_retry_wait))
                attempt += 1
            except BaseException:
                part.unlink(missing_ok=True)
                raise


def is_not_found(exc: SkillRunnerError) -> bool:
    return exc.status == 404 and exc.code == "REQUEST_NOT_FOUND"
