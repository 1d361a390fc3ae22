"""`batch`: run every job of a batch file with a bounded number of requests at once, keep each
result (and, if asked, its artifacts) on disk under the job's key, and a summary line per job.

Each job carries an Idempotency-Key derived from the file, its key and its content, and a job
counts as done only once its summary line is written; so after a crash, Ctrl-C or kill -9,
`--resume` sends the unfinished jobs again, the service answers with the jobs it already has,
and nothing runs twice.
"""

from __future__ import annotations

import json
import os
import queue
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any

try:
    import fcntl
except ImportError:  # Windows: batches there are not locked
    fcntl = None  # type: ignore[assignment]

from skill_runner_client.batch_file import BatchJob
from skill_runner_client.client import Client
from skill_runner_client.errors import OutputNotWritable, SkillRunnerError
from skill_runner_client.progress import Progress

LONG_POLL_SEC = 20.0
QUEUE_FULL, QUEUE_FULL_PAUSE_SEC = "QUEUE_FULL", 1.0
# a service that stops answering (restarted, a proxy's 502/503/504) is waited for this long,
# each job sent again (its key answers the same job) or its result asked again
OUTAGE_SEC, OUTAGE_PAUSE_MAX_SEC, OUTAGE_STATUSES = 600.0, 30.0, (502, 503, 504)
SUMMARY = "summary.jsonl"
LOCK = "batch.lock"  # held by the batch running in --out
OWNER = "batch_file.txt"  # the real path of the batch file whose batch --out holds
WAITING = "waiting_user"
# summary statuses --resume sends again: refused jobs (not on the service) and jobs waiting
# for a reply (their Idempotency-Key answers the same job, collected once it ends)
NOT_DONE = ("rejected", WAITING)


class BatchAborted(RuntimeError):
    """The service stopped answering (or failed) mid-batch; `--resume` continues."""


@dataclass(frozen=True)
class BatchOptions:
    out: Path
    concurrency: int = 8  # requests at once, for submitting and for collecting each
    max_queued: int = 500  # jobs submitted and not yet collected
    resume: bool = False
    artifacts: bool = False


@dataclass
class Pending:
    job: BatchJob
    request_id: str
    submitted: float


def read_summary(out: Path) -> dict[str, dict[str, Any]]:
    """The jobs the summary holds as done, by key. It is rewritten without a line torn by a
    crash, without refused jobs (nothing of those exists on the service: they go again) and
    without jobs that waited for a reply (sent again with their key, they are collected)."""
    path = out / SUMMARY
    if not path.exists():
        return {}
    done: dict[str, dict[str, Any]] = {}
    with path.open("rb") as fh:
        for raw in fh:
            try:
                entry = json.loads(raw)
            except ValueError:
                break
            if not raw.endswith(b"\n"):
                break
            if entry["status"] not in NOT_DONE:
                done[entry["key"]] = entry
    part = path.with_name(SUMMARY + ".part")
    part.write_text("".join(json.dumps(e) + "\n" for e in done.values()), encoding="utf-8")
    os.replace(part, path)
    return done


class BatchRun:
    """One invocation of `batch` over `jobs`."""

    def __init__(
        self, client: Client, batch_file: Path, jobs: list[BatchJob], options: BatchOptions
    ) -> None:
        self.client, self.batch_file, self.jobs, self.options = client, batch_file, jobs, options
        self.results_dir = options.out / "results"
        self._lock = threading.Lock()
        self._todo: list[BatchJob] = []
        self._slots = threading.BoundedSemaphore(options.max_queued)
        self._pending: queue.Queue[Pending] = queue.Queue()
        self._failure: BaseException | None = None
        self._outage_since: float | None = None  # when the service stopped answering
        self._ended = 0
        self._done = threading.Event()
        self._collecting = threading.Event()  # every job sent, or --max-queued of them waiting
        self._submitters = 0
        self.progress = Progress(len(jobs))

    def run(self) -> int:
        """0: every job succeeded; 1: some failed (or the batch stopped; resume it). ValueError
        for an --out that holds an earlier batch, unless resuming, or that cannot be written."""
        owner = _owner(self.options.out)
        mine = os.path.realpath(self.batch_file)
        if owner is not None and owner != mine:  # its summary would count as this file's
            raise ValueError(
                f"{self.options.out} holds the batch of {owner}: give {self.batch_file} "
                "an --out of its own"
            )
        if (self.options.out / SUMMARY).exists() and not self.options.resume:
            raise ValueError(  # a usage error: nothing was sent
                f"{self.options.out / SUMMARY} holds an earlier batch: --resume continues it"
            )
        try:
            self.results_dir.mkdir(parents=True, exist_ok=True)
            self._lock_file = _lock(self.options.out)
            if owner is None:
                (self.options.out / OWNER).write_text(mine + "\n", encoding="utf-8")
            done = read_summary(self.options.out)
            self._summary = (self.options.out / SUMMARY).open("a", encoding="utf-8")
        except OSError as exc:  # a usage error too: nothing was sent
            raise OutputNotWritable(self.options.out, exc) from None
        # only this file's keys count: a summary line of a key no longer in it (an edited file)
        # would otherwise end the batch before all of its jobs are done
        keys = {j.key for j in self.jobs}
        done = {k: e for k, e in done.items() if k in keys}
        self._ended = len(done)
        ok = sum(1 for e in done.values() if e["status"] == "succeeded")
        self.progress = Progress(len(self.jobs), ok, len(done) - ok)
        self._todo = [j for j in self.jobs if j.key not in done]
        self._todo.reverse()  # popped from the end: file order
        remaining = len(self._todo)
        n = self.options.concurrency
        self._submitters = n
        threads = [threading.Thread(target=self._submitter, daemon=True) for _ in range(n)]
        threads += [threading.Thread(target=self._collector, daemon=True) for _ in range(n)]
        self.progress.start()
        for thread in threads:
            thread.start()
        try:
            if remaining:
                while not self._done.wait(0.2):  # a wait the main thread's Ctrl-C can break
                    pass
        finally:
            self.progress.finish()
            with self._lock:
                self._summary.close()
            self._lock_file.close()  # the lock goes with it
        if self._failure is not None:
            raise BatchAborted(f"the batch stopped: {self._failure}; --resume continues it")
        return 0 if self.progress.failed == 0 else 1

    # -- submitting ------------------------------------------------------------------------
    def _submitter(self) -> None:
        try:
            self._submit_jobs()
        finally:
            with self._lock:
                self._submitters -= 1
                if self._submitters == 0:
                    self._collecting.set()

    def _submit_jobs(self) -> None:
        while self._failure is None:
            with self._lock:
                job = self._todo.pop() if self._todo else None
            if job is None:
                break
            if not self._slots.acquire(blocking=False):
                self._collecting.set()  # the window is full: results make room
                self._slots.acquire()
            try:
                self._submit_until_queued(job)
            except SkillRunnerError as exc:
                self._slots.release()
                if self._waited_out(exc):
                    with self._lock:
                        self._todo.append(job)  # the next one sent
                elif exc.status in (401, 403):  # the token, not the job: every job would follow
                    self._fail(exc)
                elif exc.status is not None and 400 <= exc.status < 500:
                    note = f"{exc.code}: {exc.explained()}"
                    self._record(job, None, "rejected", exc.code, 0.0, False, note)
                else:
                    self._fail(exc)
            except BaseException as exc:  # noqa: BLE001 - reported by the main thread
                self._slots.release()
                self._fail(exc)

    def _submit_until_queued(self, job: BatchJob) -> None:
        """`_submit`, sent again while the service's queue is full (429 QUEUE_FULL after the
        SDK's own retries): that is backpressure, not the job refused."""
        while True:
            try:
                return self._submit(job)
            except SkillRunnerError as exc:
                if exc.code != QUEUE_FULL or self._failure is not None:
                    raise
            self._collecting.set()  # the runs already sent make room as they end
            time.sleep(QUEUE_FULL_PAUSE_SEC)

    def _submit(self, job: BatchJob) -> None:
        started = time.monotonic()
        created = self.client.jobs.create(
            job.skill_id,
            engine=job.engine,
            model=job.model,
            parameter=job.parameter,
            input=job.input,
            runtime_options=job.runtime_options,
            files=job.files or None,  # a resumed job's upload, already taken, is not sent again
            idempotency_key=job.idempotency_key(self.batch_file),
        )
        self._answered()
        self.progress.submitted()
        self._pending.put(Pending(job, created["request_id"], started))

    # -- collecting ------------------------------------------------------------------------
    def _collector(self) -> None:
        # runs until every job has ended (or the batch failed): an unfinished job goes back
        # into the queue, so an empty queue does not mean the work is done. Collecting starts
        # once every job is sent or the window of --max-queued jobs is full: until then the
        # service's time goes to accepting jobs (results waited for meanwhile cost it ~15% of
        # its accepting rate), and the runs go on without being watched.
        while not (self._collecting.wait(0.2) or self._done.is_set()):
            pass
        while not self._done.is_set():
            try:
                item = self._pending.get(timeout=0.5)
            except queue.Empty:
                continue
            try:
                self._collect(item)
            except SkillRunnerError as exc:
                if self._waited_out(exc):
                    self._pending.put(item)
                    continue
                self._fail(exc)
                return
            except BaseException as exc:  # noqa: BLE001 - reported by the main thread
                self._fail(exc)
                return

    def _collect(self, item: Pending) -> None:
        asked = time.monotonic()
        try:
            body = self.client.jobs.result(item.request_id, wait_sec=LONG_POLL_SEC)
        except SkillRunnerError as exc:
            if exc.code != "RUN_NOT_FINISHED":
                raise
            self._answered()
            if exc.details.get("status") == WAITING:  # asks a question nobody here answers
                self._record(
                    item.job,
                    item.request_id,
                    WAITING,
                    None,
                    time.monotonic() - item.submitted,
                    True,
                    f"{WAITING}: answer it (skill-runner reply {item.request_id}), then --resume",
                )
                self._slots.release()
                return
            if exc.details.get("waiting_for_upload"):
                # a line without the files its skill takes: the empty upload has the service
                # check the inputs (INPUT_FILE_MISSING), else the job waits a day for none
                self.client.jobs.upload_again(item.request_id, item.job.files)
            elif time.monotonic() - asked < 1.0:
                time.sleep(0.5)  # answered at once: the server's waiting slots are taken
            self._pending.put(item)
            return
        self._answered()
        result = body["result"]
        key = item.job.key
        if self.options.artifacts and result.get("artifacts"):
            self._download_artifacts(item.request_id, key)
        _write_json(self.results_dir / f"{key}.json", body)
        error: dict[str, Any] = dict(result.get("error") or {})
        self._record(
            item.job,
            item.request_id,
            result["status"],
            error.get("code"),
            time.monotonic() - item.submitted,
            True,
            f"{result['status']} {error.get('code') or ''}",
            body.get("token_usage"),
        )
        self._slots.release()

    def _download_artifacts(self, request_id: str, key: str) -> None:
        folder = self.options.out / "artifacts" / key
        for artifact in self.client.jobs.artifacts(request_id):
            path = artifact["path"]
            relative = PurePosixPath(
                path[len("artifacts/") :] if path.startswith("artifacts/") else path
            )
            if relative.is_absolute() or ".." in relative.parts or not relative.parts:
                # the name comes from the service: never a file outside the job's own folder
                self.progress.log(f"skipped artifact {path!r} of {key}: not a path under {folder}")
                continue
            dest = folder.joinpath(*relative.parts)
            try:
                self.client.jobs.download_artifact(request_id, path, dest)
            except OSError as exc:
                raise OutputNotWritable(dest, exc) from None

    # -- bookkeeping -----------------------------------------------------------------------
    def _record(
        self,
        job: BatchJob,
        request_id: str | None,
        status: str,
        code: str | None,
        sec: float,
        was_running: bool,
        note: str,
        usage: Mapping[str, Any] | None = None,
    ) -> None:
        """Append the job's summary line: from here on it counts as done."""
        entry: dict[str, Any] = {
            "key": job.key,
            "line": job.line,
            "request_id": request_id,
            "status": status,
            "error_code": code,
            "duration_sec": round(sec, 3),
        }
        if usage:
            entry["token_usage"] = dict(usage)
        with self._lock:
            try:
                self._summary.write(json.dumps(entry) + "\n")
                self._summary.flush()
            except OSError as exc:
                raise OutputNotWritable(self.options.out / SUMMARY, exc) from None
            self.progress.ended(status == "succeeded", job.key, was_running, note, usage)
            self._ended += 1
            if self._ended >= len(self.jobs):
                self._done.set()

    def _waited_out(self, exc: SkillRunnerError) -> bool:
        """True, after a pause, when the service gave no answer (or a 502/503/504) and has
        answered nothing for less than OUTAGE_SEC: the caller tries again. False otherwise."""
        if not (exc.status is None or exc.status in OUTAGE_STATUSES) or self._done.is_set():
            return False
        now = time.monotonic()
        with self._lock:
            first = self._outage_since is None
            if first:
                self._outage_since = now
            since = self._outage_since or now
        if first:
            self.progress.log(
                f"the service does not answer ({exc.code}: {exc.message}); "
                f"trying again for up to {OUTAGE_SEC:.0f}s"
            )
        if now - since >= OUTAGE_SEC:
            return False
        self._done.wait(min(OUTAGE_PAUSE_MAX_SEC, 1.0 + (now - since) / 4))
        return not self._done.is_set()

    def _answered(self) -> None:
        """The service answers: an outage, if any, is over."""
        if self._outage_since is None:
            return
        with self._lock:
            since, self._outage_since = self._outage_since, None
        if since is not None:
            self.progress.log(f"the service answers again after {time.monotonic() - since:.0f}s")

    def _fail(self, exc: BaseException) -> None:
        with self._lock:
            if self._failure is None:
                self._failure = exc
        self._done.set()


def _lock(out: Path) -> IO[bytes]:
    """An exclusive lock on `out`, held while the batch runs: a second batch there (a --resume
    started while the first goes on) would rewrite the summary under the first one, whose
    later lines would then be lost. ValueError when another holds it."""
    fh = (out / LOCK).open("ab")
    if fcntl is None:
        return fh
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.close()
        raise ValueError(
            f"another batch is running in {out}: let it end (or stop it) first"
        ) from None
    return fh


def _owner(out: Path) -> str | None:
    """The batch file whose batch `out` holds (None: none yet, or an --out from before)."""
    try:
        return (out / OWNER).read_text(encoding="utf-8").strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def _write_json(path: Path, body: Any) -> None:
    """Whole or not at all: a crash never leaves half a result. Its bytes reach the disk
    before its name and before its summary line, so a power cut cannot leave an empty
    result for a job the summary says is done."""
    part = path.with_name(path.name + ".part")
    try:
        with part.open("w", encoding="utf-8") as fh:
            fh.write(json.dumps(body, indent=2, ensure_ascii=False))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(part, path)
    except OSError as exc:
        raise OutputNotWritable(path, exc) from None
