"""The CLI's commands other than `batch`: each takes the parsed arguments and a Client, prints
its answer (JSON with --json) and returns the exit code."""

from __future__ import annotations

import json
import sys
from argparse import Namespace
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

from skill_runner_client import strict_json
from skill_runner_client.client import Client
from skill_runner_client.errors import OutputNotWritable, SkillRunnerError
from skill_runner_client.runs import RunRoutes, is_not_found
from skill_runner_client.types import JobStatus

OK, FAILED = 0, 1


def emit(args: Namespace, body: Any, text: str | None = None) -> None:
    """`body` as JSON with --json (or when there is no text form), else `text`."""
    if args.json or text is None:
        print(json.dumps(body, indent=2, ensure_ascii=False))
    else:
        print(text)


def routes_for(client: Client, request_id: str) -> RunRoutes:
    """The routes of the run: a job's, or a one-off run's when no job has that id;
    REQUEST_NOT_FOUND naming both when neither has it."""
    try:
        client.jobs.get(request_id)
        return client.jobs
    except SkillRunnerError as exc:
        if not is_not_found(exc):
            raise
    try:
        client.temp_runs.get(request_id)
    except SkillRunnerError as exc:
        if not is_not_found(exc):
            raise
        message = f"no job or one-off run has the id '{request_id}'"
        raise SkillRunnerError(exc.status, exc.code, message, exc.details, exc.request_id) from None
    return client.temp_runs


def pairs(items: list[str] | None, what: str, as_json: bool) -> dict[str, Any]:
    """`key=value` options as a dict; values read as JSON when they parse (`-p n=3`)."""
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"{what} '{item}' is not key=value")
        if as_json:
            try:
                out[key] = strict_json.loads(value)
                continue
            except ValueError:  # not JSON (NaN included): the text as typed
                pass
        out[key] = value
    return out


def json_value(text: str, what: str) -> Any:
    try:
        return strict_json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{what} is not JSON: {exc}") from None


def json_object(text: str | None, what: str) -> dict[str, Any]:
    if not text:
        return {}
    value = json_value(text, what)
    if not isinstance(value, dict):
        raise ValueError(f"{what} must be a JSON object")
    return value


def submit(args: Namespace, client: Client) -> int:
    parameter = {**json_object(args.parameters, "--parameters"), **pairs(args.param, "-p", True)}
    inline = {**json_object(args.input_json, "--input-json"), **pairs(args.input, "-i", True)}
    files = pairs(args.file, "-f", False)
    for field, path in files.items():
        if not Path(path).is_file():
            raise ValueError(f"-f {field}: no file at {path}")
    options = json_object(args.runtime_options, "--runtime-options")
    if args.mode:
        options["execution_mode"] = args.mode
    if args.no_cache:
        options["no_cache"] = True
    created = client.jobs.create(
        args.skill_id,
        engine=args.engine,
        model=args.model,
        parameter=parameter,
        input=inline,
        runtime_options=options or None,
        files=files or None,
        idempotency_key=args.idempotency_key,
    )
    rid = created["request_id"]
    try:
        if not files and client.jobs.get(rid).get("waiting_for_upload"):
            # the skill takes files and none was given: the empty upload has the service check
            # the inputs (INPUT_FILE_MISSING), else the job waits a day for an upload never sent
            client.jobs.upload_again(rid, {})
        if not args.wait:
            emit(args, created, rid)
            return OK
        return show_result(args, client.jobs, rid, args.timeout)
    except KeyboardInterrupt:  # the id was never printed: without it the job is hard to find
        raise KeyboardInterrupt(f"interrupted; job {rid} goes on (wait {rid} follows it)") from None


def show_result(args: Namespace, routes: RunRoutes, request_id: str, timeout: float | None) -> int:
    """Wait for the run to end, print its result; 0 when it succeeded."""
    routes.wait(request_id, timeout)
    body = routes.result(request_id)
    emit(args, body)
    return OK if body["result"]["status"] == "succeeded" else FAILED


def wait(args: Namespace, client: Client) -> int:
    status = routes_for(client, args.request_id).wait(args.request_id, args.timeout)
    emit(args, status, f"{status['request_id']} {status['status']}{_error(status)}")
    return OK if status["status"] == "succeeded" else FAILED


def result(args: Namespace, client: Client) -> int:
    routes = routes_for(client, args.request_id)
    if args.wait:
        return show_result(args, routes, args.request_id, args.timeout)
    body = routes.result(args.request_id)
    emit(args, body)
    return OK if body["result"]["status"] == "succeeded" else FAILED


def status(args: Namespace, client: Client) -> int:
    doc = routes_for(client, args.request_id).get(args.request_id)
    lines = [f"{doc['request_id']} {doc['status']}{_error(doc)}"]
    for name in ("skill_id", "engine", "model", "created_at", "started_at", "finished_at"):
        if doc.get(name):
            lines.append(f"  {name}: {doc.get(name)}")
    if doc.get("pending_interaction_id") is not None:
        lines.append(f"  waiting for a reply to interaction {doc['pending_interaction_id']}")
    emit(args, doc, "\n".join(lines))
    return OK


def _error(doc: JobStatus) -> str:
    error = doc.get("error")
    return f" ({error['code']}: {error['message']})" if error else ""


def cancel(args: Namespace, client: Client) -> int:
    answer = routes_for(client, args.request_id).cancel(args.request_id)
    verdict = "canceled" if answer["accepted"] else f"not canceled: already {answer['status']}"
    emit(args, answer, f"{args.request_id} {verdict}")
    return OK if answer["accepted"] else FAILED


def logs(args: Namespace, client: Client) -> int:
    routes = routes_for(client, args.request_id)
    if args.follow:
        for text in follow_printed(routes, args.request_id, args.stream):
            sys.stdout.write(text)
            sys.stdout.flush()
        return OK
    snapshot = cast(dict[str, Any], routes.logs(args.request_id))
    emit(args, snapshot, snapshot.get(args.stream) or "")
    return OK


def follow_printed(routes: Any, request_id: str, stream: str) -> Iterator[str]:
    """A log as the run prints it: from the event stream's raw chunks (each read whole from
    logs/range when its event carries only the start); the prompt, or a service recording no
    events, by polling byte ranges."""
    done = 0  # bytes of the log printed so far
    if stream in ("stdout", "stderr"):
        for event in routes.events(request_id):
            if event.get("type") != f"raw.{stream}":
                continue
            ref, text = event["data"]["raw_ref"], event["data"].get("text", "")
            if ref["byte_to"] <= done:
                continue
            if len(text.encode()) < ref["byte_to"] - ref["byte_from"] or ref["byte_from"] > done:
                text = routes.log_range(request_id, stream, done, ref["byte_to"])["text"]
            done = ref["byte_to"]
            yield text
    yield from routes.follow_log(request_id, stream, done)


def bundle(args: Namespace, client: Client) -> int:
    routes = routes_for(client, args.request_id)
    try:
        path = routes.download_bundle(args.request_id, args.output)
    except OSError as exc:  # the service answered (its failures are SkillRunnerError)
        raise OutputNotWritable(args.output, exc) from None
    size = path.stat().st_size
    emit(args, {"path": str(path), "size": size}, f"{path} ({size} bytes)")
    return OK


def list_jobs(args: Namespace, client: Client) -> int:
    if args.all:
        items = list(client.jobs.iter(args.status, args.skill, args.engine))
    else:
        items = client.jobs.list(args.status, args.skill, args.engine, args.limit)["items"]
    rows = [
        f"{j['request_id']}  {j['status']:<12} {j['skill_id']:<24} {j.get('engine') or '-':<8} "
        f"{j['created_at']}"
        for j in items
    ]
    emit(args, items, "\n".join(rows))
    return OK


def reply(args: Namespace, client: Client) -> int:
    if args.text is not None:
        response: Any = args.text
    elif args.choice is not None:
        response = args.choice
    elif args.confirm is not None:
        response = args.confirm == "yes"
    else:
        response = json_value(args.response, "--response")
    routes = routes_for(client, args.request_id)
    interaction_id = args.interaction_id
    if interaction_id is None:
        pending = routes.pending(args.request_id)["pending"]
        if pending is None:
            raise ValueError(f"{args.request_id} is waiting for no reply")
        interaction_id = pending["interaction_id"]
    answer = routes.reply(args.request_id, interaction_id, response, args.idempotency_key)
    verdict = "accepted" if answer["accepted"] else "not accepted"
    emit(args, answer, f"{args.request_id} reply {verdict}; {answer['status']}")
    return OK if answer["accepted"] else FAILED


def skills(args: Namespace, client: Client) -> int:
    if args.skill_id:
        emit(args, client.skill(args.skill_id))
        return OK
    items = client.skills()
    rows = [
        f"{s['id']:<28} {s.get('version') or '-':<10} {s.get('health', '-'):<8} "
        f"{','.join(s.get('execution_modes') or [])}"
        for s in items
    ]
    emit(args, items, "\n".join(rows))
    return OK


def install(args: Namespace, client: Client) -> int:
    if not (Path(args.package).is_file() or Path(args.package).is_dir()):
        raise ValueError(f"install: no package zip or skill folder at {args.package}")
    answer = client.install(args.package)
    text = f"{answer.get('skill_id')} {answer.get('version')} {answer.get('action')}"
    emit(args, answer, text)
    return OK if answer.get("status") == "succeeded" else FAILED


def engines(args: Namespace, client: Client) -> int:
    items = client.engines()
    rows = [
        f"{e['engine']:<10} installed={e.get('installed')} auth_ready={e.get('auth_ready')} "
        f"{e.get('cli_version') or ''}"
        for e in items
    ]
    emit(args, items, "\n".join(rows))
    return OK
