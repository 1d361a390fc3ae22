"""`skill-runner test DIR`: a skill played through the whole service before anyone runs it.

A throw-away service (`skill-runner serve --demo-llm-script`: its own data folder, the embedded
broker, SQLite, the API, a worker) runs the skill's cases from `DIR/tests/skill-test.json`
through the real engine CLI, the model's side played by the bundled fake LLM from each case's
`model` turns. Each case's result is checked against its `expect`; a report line per case,
exit 0 when every case passed, 1 when one failed, 2 when the test could not run.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from launcher.demo_llm import KEY_VARIABLES
from runner_core.settings import REPO_ROOT
from runner_core.skills import SkillRegistry
from runner_core.skills.loader import is_openevo_dir, load_openevo  # after runner_core.skills

TEST_FILE = Path("tests") / "skill-test.json"
CALLEES_FOLDER = "called-skills"  # the category folder the skills a composite calls go in
CASE_KEYS = {"name", "engine", "mode", "input", "parameter", "files", "model", "replies", "expect"}
START_SEC = 60  # the throw-away service answering /healthz
RUN_SEC = 300  # one case, queued to finished
STDERR_LINES = 5  # of a run that ended otherwise than expected


class SkillTestError(Exception):
    """The test cannot run (a bad test file, a service that does not start)."""


@dataclass
class CaseReport:
    name: str
    passed: bool
    problems: list[str]
    request_id: str | None = None

    def line(self) -> str:
        head = f"{'PASS' if self.passed else 'FAIL'} {self.name}"
        return head + "".join(f"\n  - {p}" for p in self.problems)


def load_cases(skill_dir: Path, test_file: Path | None) -> list[dict[str, Any]]:
    """The cases of the test file (one case, or `{"cases": [...]}`), each checked for shape."""
    path = test_file or skill_dir / TEST_FILE
    try:
        spec = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SkillTestError(f"{path}: cannot read it ({exc.strerror})") from exc
    except ValueError as exc:
        raise SkillTestError(f"{path}: not JSON ({exc})") from exc
    cases = spec.get("cases", [spec]) if isinstance(spec, dict) else None
    if not isinstance(cases, list) or not cases:
        raise SkillTestError(f'{path}: a case object, or {{"cases": [...]}}')
    for i, case in enumerate(cases):
        unknown = set(case) - CASE_KEYS if isinstance(case, dict) else {"(not an object)"}
        if unknown:
            raise SkillTestError(f"{path}: case {i + 1}: unknown keys {sorted(unknown)}")
        case.setdefault("name", f"case {i + 1}")
    return cases


def skill_id_of(skill_dir: Path) -> str:
    """The id the service gives the skill: a skill.json skill's `name`, else its folder's."""
    if is_openevo_dir(skill_dir):
        try:
            name = json.loads((skill_dir / "skill.json").read_text(encoding="utf-8")).get("name")
        except (OSError, ValueError, AttributeError):
            name = None
        if isinstance(name, str) and name:
            return name
    return skill_dir.name


def copy_callees(skill_dir: Path, installed: Path | None, dest: Path) -> None:
    """The skills a skill.json composite calls (and theirs), from the installed skills, into
    `dest` (a category folder of the test service's skills); one not found is left out, so the
    test service names it."""
    if not is_openevo_dir(skill_dir) or installed is None or not installed.is_dir():
        return
    registry = SkillRegistry(installed)
    spec = load_openevo(skill_dir).openevo
    wanted, seen = list(spec.callees() if spec else []), {skill_id_of(skill_dir)}
    while wanted:
        name = wanted.pop()
        found = registry.get(name) if name not in seen else None
        seen.add(name)
        if found is None or found.format != "skill.json":
            continue
        shutil.copytree(found.root, dest / name)
        wanted += found.openevo.callees() if found.openevo else []


def run_skill_test(
    skill_dir: Path,
    test_file: Path | None = None,
    keep: bool = False,
    installed: Path | None = None,
) -> int:
    """Each case through a throw-away service holding the skill (and the installed skills it
    calls, from `installed`); exit 0 when every case passed, else 1."""
    skill_dir = skill_dir.resolve()
    cases = load_cases(skill_dir, test_file)
    skill_id = skill_id_of(skill_dir)
    root = Path(tempfile.mkdtemp(prefix="skill-runner-test-"))
    try:
        shutil.copytree(skill_dir, root / "skills" / skill_dir.name)
        copy_callees(skill_dir, installed, root / "skills" / CALLEES_FOLDER)
        script = root / "model.json"
        script.write_text(json.dumps(cases[0].get("model") or {}), encoding="utf-8")
        with _Service(root, script) as service:
            reports = []
            for case in cases:
                script.write_text(json.dumps(case.get("model") or {}), encoding="utf-8")
                reports.append(_run_case(service, skill_dir, skill_id, case))
                print(reports[-1].line(), flush=True)
        passed = sum(r.passed for r in reports)
        print(f"{passed} of {len(reports)} case(s) passed")
        return 0 if passed == len(reports) else 1
    finally:
        if keep:
            print(f"the test service's data is kept in {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)


def _run_case(
    service: _Service, skill_dir: Path, skill_id: str, case: dict[str, Any]
) -> CaseReport:
    options: dict[str, Any] = {"no_cache": True}
    if case.get("mode"):  # auto or interactive: a runtime option of the job
        options["execution_mode"] = case["mode"]
    body = {
        "skill_id": skill_id,
        "input": case.get("input") or {},
        "parameter": case.get("parameter") or {},
        "runtime_options": options,
    }
    if case.get("engine"):
        body["engine"] = case["engine"]
    status, created = service.call("POST", "/v1/jobs", body)
    if status != 200:
        return CaseReport(case["name"], False, [f"the job was refused: {status} {created}"])
    rid = created["request_id"]
    if case.get("files"):
        status, answer = service.upload(rid, _input_zip(skill_dir, case["files"]))
        if status != 200:
            return CaseReport(case["name"], False, [f"the upload was refused: {answer}"], rid)
    state = service.wait(rid)
    for response in case.get("replies") or []:  # each answers the question the run waits on
        if state.get("status") != "waiting_user":
            break
        reply = {"interaction_id": state.get("pending_interaction_id"), "response": response}
        status, answer = service.call("POST", f"/v1/jobs/{rid}/interaction/reply", reply)
        if status != 200:
            return CaseReport(case["name"], False, [f"the reply was refused: {answer}"], rid)
        state = service.wait(rid, after=state.get("pending_interaction_id"))
    _, result = service.call("GET", f"/v1/jobs/{rid}/result")
    problems = expectation_problems(case.get("expect") or {}, state, result.get("result") or {})
    return CaseReport(case["name"], not problems, problems, rid)


def expectation_problems(
    expect: dict[str, Any], state: dict[str, Any], result: dict[str, Any]
) -> list[str]:
    """What differs from `expect` ({status, data (a subset), artifacts, error_code})."""
    problems = []
    status = expect.get("status", "succeeded")
    if state.get("status") != status:
        error = state.get("error") or {}
        why = f": {error.get('code')} {error.get('message', '')}".rstrip() if error else ""
        problems.append(f"status {state.get('status')}, expected {status}{why}")
        stderr = ((result.get("error") or {}).get("stderr") or "").strip().splitlines()
        if stderr:  # what the script or CLI said last: most often why it failed
            tail = stderr[-STDERR_LINES:]
            problems.append("stderr ends: " + "".join(f"\n      {line}" for line in tail))
        if result.get("data") is None:  # nothing more to compare: the status says it all
            return problems
    if "error_code" in expect and (state.get("error") or {}).get("code") != expect["error_code"]:
        problems.append(
            f"error code {(state.get('error') or {}).get('code')}, expected {expect['error_code']}"
        )
    if "data" in expect:
        problems += [f"data{p}" for p in _subset_problems(expect["data"], result.get("data"))]
    missing = [a for a in expect.get("artifacts", []) if a not in (result.get("artifacts") or [])]
    if missing:
        problems.append(f"artifacts missing: {', '.join(missing)}")
    return problems


def _subset_problems(want: Any, got: Any, where: str = "") -> list[str]:
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return [f"{where}: expected an object, got {json.dumps(got)[:80]}"]
        out = []
        for key, value in want.items():
            if key not in got:
                out.append(f"{where}.{key}: missing")
            else:
                out += _subset_problems(value, got[key], f"{where}.{key}")
        return out
    if want != got:
        return [f"{where or ''}: expected {json.dumps(want)[:80]}, got {json.dumps(got)[:80]}"]
    return []


def _input_zip(skill_dir: Path, files: dict[str, str]) -> bytes:
    """The case's files (input field -> path relative to the skill) as the upload zip."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for field, rel in files.items():
            path = (skill_dir / rel).resolve()
            if skill_dir not in path.parents or not path.is_file():
                raise SkillTestError(f"files.{field}: {rel} is not a file of the skill")
            zf.write(path, field)
    return buffer.getvalue()


class _Service:
    """`skill-runner serve --demo-llm-script` in a folder of its own, on a free port."""

    def __init__(self, root: Path, script: Path) -> None:
        self.root, self.script = root, script
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> _Service:
        env = {k: v for k, v in os.environ.items() if k not in KEY_VARIABLES}
        for name in ("DATABASE_URL", "CELERY_BROKER_URL", "SKILL_RUNNER_CONFIG"):
            env.pop(name, None)  # the throw-away service's own SQLite and broker
        env.update(
            SKILL_RUNNER_DATA_DIR=str(self.root / "data"),
            SKILL_RUNNER_SKILLS_DIR=str(self.root / "skills"),
            PORT=str(self.port),
            WEB_CONCURRENCY="1",
            SKILL_RUNNER_API_TOKEN="",
            SKILL_RUNNER_TOKENS_FILE="",
        )
        log = open(self.root / "service.log", "wb")  # noqa: SIM115 (closed with the process)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "launcher.cli", "serve", "--demo-llm-script", str(self.script)],
            env=env,
            cwd=REPO_ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + START_SEC
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SkillTestError(f"the test service stopped: {self._log_tail()}")
            try:
                if self.call("GET", "/healthz")[0] == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.3)
        self.__exit__()
        raise SkillTestError(f"the test service did not start in {START_SEC} s: {self._log_tail()}")

    def __exit__(self, *_exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)

    def _log_tail(self) -> str:
        text = (self.root / "service.log").read_text(errors="replace")
        return text[-1500:]

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        headers = {"content-type": "application/json"} if data else {}
        return self._send(urllib.request.Request(self.base + path, data, headers, method=method))

    def upload(self, rid: str, zip_bytes: bytes) -> tuple[int, Any]:
        boundary = uuid.uuid4().hex
        body = (
            (
                f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="in.zip"\r\n'
                "Content-Type: application/zip\r\n\r\n"
            ).encode()
            + zip_bytes
            + f"\r\n--{boundary}--\r\n".encode()
        )
        headers = {"content-type": f"multipart/form-data; boundary={boundary}"}
        request = urllib.request.Request(f"{self.base}/v1/jobs/{rid}/upload", body, headers)
        return self._send(request)

    def wait(self, rid: str, after: int | None = None) -> dict[str, Any]:
        """The job once it has ended or asks a question (other than question `after`, the one
        just answered)."""
        deadline = time.monotonic() + RUN_SEC
        state: dict[str, Any] = {}
        while time.monotonic() < deadline:
            _, state = self.call("GET", f"/v1/jobs/{rid}?wait_sec=20")
            if state.get("status") in ("succeeded", "failed", "canceled"):
                return state
            if state.get("status") == "waiting_user":
                if state.get("pending_interaction_id") != after:
                    return state
                time.sleep(0.1)  # the reply is accepted; the run has not moved on yet
        return state

    @staticmethod
    def _send(request: urllib.request.Request) -> tuple[int, Any]:
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                return answer.status, json.loads(answer.read() or b"null")
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"null")
