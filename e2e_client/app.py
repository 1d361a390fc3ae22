"""The example client's web service: pick a skill, a mode, engine, model and runtime options; run
it, answer its questions, read its result; replay what was recorded. It talks to the service
through the Python SDK only. `python -m e2e_client.app` serves it on 127.0.0.1:8011."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flask import Flask, abort, jsonify, redirect, render_template, request, url_for

from e2e_client import forms
from e2e_client.recordings import Recordings
from skill_runner_client import TERMINAL_STATUSES, Client, SkillRunnerError

DEFAULT_PORT = 8011
DEFAULT_BACKEND = "http://127.0.0.1:8000"
HERE = Path(__file__).resolve().parent
STDOUT_TAIL = 20_000  # bytes of stdout shown on the run page (its end)


def port_from_env(value: str | None) -> int:
    """SKILL_RUNNER_E2E_CLIENT_PORT: a port number 1-65535; anything else gives 8011."""
    try:
        port = int((value or "").strip())
    except ValueError:
        return DEFAULT_PORT
    return port if 0 < port < 65536 else DEFAULT_PORT


def create_app(
    backend_url: str | None = None,
    token: str | None = None,
    recordings_dir: str | os.PathLike[str] | None = None,
) -> Flask:
    backend = backend_url or os.environ.get(
        "SKILL_RUNNER_E2E_CLIENT_BACKEND_BASE_URL", DEFAULT_BACKEND
    )
    token = token if token is not None else os.environ.get("SKILL_RUNNER_TOKEN") or None
    folder = (
        recordings_dir
        or os.environ.get("SKILL_RUNNER_E2E_CLIENT_RECORDINGS_DIR")
        or HERE / "recordings"
    )
    app = Flask(__name__)
    client = Client(backend, token)
    recordings = Recordings(folder)
    app.extensions["e2e_client"] = {"client": client, "recordings": recordings}

    @app.template_filter("json_text")
    def _json_text(value: Any) -> str:
        """JSON for a person to read: as written (结果, <b>), not \\u escapes as `tojson`'s
        are; escaped for the page like any text."""
        return json.dumps(value, ensure_ascii=False, indent=2, default=str)

    @app.context_processor
    def _backend() -> dict[str, Any]:
        return {"backend": backend}

    @app.errorhandler(SkillRunnerError)
    def _refused(exc: SkillRunnerError):
        return render_template("error.html", error=exc.body["error"]), exc.status or 502

    @app.get("/")
    def skills():
        return render_template("skills.html", skills=client.skills())

    @app.get("/skills/<skill_id>")
    def skill(skill_id: str):
        return _form(client.skill(skill_id))

    def _form(detail: Mapping[str, Any], error: dict[str, Any] | None = None, status: int = 200):
        engines = forms.engines(detail)
        models = client.engine_models(engines[0]) if engines else None
        return render_template(
            "run_form.html",
            skill=detail,
            fields=forms.fields(detail.get("schemas") or {}),
            engines=engines,
            models=models,
            error=error,
            form=request.form,
        ), status

    @app.get("/engines/<engine>/models")
    def engine_models(engine: str):
        """The engine's models, for the form's model list when the engine changes."""
        return jsonify(client.engine_models(engine))

    @app.post("/skills/<skill_id>/run")
    def run_skill(skill_id: str):
        detail = client.skill(skill_id)
        form_fields = forms.fields(detail.get("schemas") or {})
        try:
            typed = forms.values(form_fields, request.form)
            options = forms.runtime_options(request.form)
        except forms.FormError as exc:
            return _form(detail, {"code": "FORM", "message": str(exc), "field": exc.name}, 400)
        body: dict[str, Any] = {
            "skill_id": skill_id,
            "engine": request.form.get("engine") or None,
            "model": request.form.get("model") or None,
            "parameter": typed["parameter"],
            "input": typed["input"] or None,
            "runtime_options": options,
        }
        try:
            created = client.jobs.create(**body)
        except SkillRunnerError as exc:
            if exc.status is None or exc.status >= 500:
                raise
            return _form(detail, exc.body["error"], 400)
        rid = created["request_id"]
        recordings.record(rid, "create", body, created, skill_id=skill_id, backend=backend)
        files = [f for f in form_fields if f.group == "file"]
        chosen = {f.name: request.files[f.key] for f in files if request.files.get(f.key)}
        if chosen:
            _upload(rid, chosen)
        return redirect(url_for("run", request_id=rid))

    def _upload(rid: str, chosen: dict[str, Any]) -> None:
        """Each file saved as `field + its extension` (how the service matches uploads), then
        sent as one zip by the SDK."""
        described: dict[str, Any] = {}
        with tempfile.TemporaryDirectory(prefix="e2e-upload-") as tmp:
            paths = {}
            for name, storage in chosen.items():
                path = Path(tmp) / (name + Path(storage.filename or "").suffix)
                storage.save(path)
                data = path.read_bytes()
                described[name] = {
                    "filename": storage.filename,
                    "size": len(data),
                    "sha256": hashlib.sha256(data).hexdigest(),
                }
                paths[name] = path
            answer = client.jobs.upload(rid, paths)
        recordings.record(rid, "upload", {"files": described}, answer)

    @app.get("/runs/<request_id>")
    def run(request_id: str):
        status = client.jobs.get(request_id)
        pending = None
        if status["status"] == "waiting_user":
            pending = client.jobs.pending(request_id)["pending"]
        result = None
        if status["status"] in TERMINAL_STATUSES:
            result = client.jobs.result(request_id)
            if not recordings.has(request_id, "result_read"):
                recordings.record(request_id, "result_read", {}, result)
        size = client.jobs.log_range(request_id, "stdout", 0, 0)["size"]  # the size alone
        tail = client.jobs.log_range(request_id, "stdout", max(0, size - STDOUT_TAIL))
        return render_template(
            "run.html",
            status=status,
            pending=pending,
            result=result,
            stdout=tail["text"],
            waiting=status["status"] not in (*TERMINAL_STATUSES, "waiting_user"),
            recording=recordings.name_of(request_id),
        )

    @app.post("/runs/<request_id>/reply")
    def reply(request_id: str):
        interaction_id = int(request.form["interaction_id"])
        response = forms.reply_response(request.form.get("kind", ""), request.form)
        key = f"e2e-{request_id}-{interaction_id}"
        sent = {"interaction_id": interaction_id, "response": response, "idempotency_key": key}
        answer = client.jobs.reply(request_id, interaction_id, response, idempotency_key=key)
        recordings.record(request_id, "reply", sent, answer)
        return redirect(url_for("run", request_id=request_id))

    @app.get("/recordings")
    def recordings_list():
        return render_template("recordings.html", recordings=recordings.list())

    @app.get("/recordings/<name>")
    def replay(name: str):
        """One step of a recording (`?step=N`, from 1), with the way to the previous and next."""
        try:
            doc = recordings.load(name)
        except (KeyError, OSError, ValueError):
            abort(404)
        steps = doc.get("steps") or []
        step = min(max(request.args.get("step", 1, type=int) or 1, 1), max(len(steps), 1))
        return render_template(
            "replay.html",
            name=name,
            doc=doc,
            steps=steps,
            step=step,
            current=steps[step - 1] if steps else None,
        )

    @app.get("/recordings/<name>/raw")
    def raw_recording(name: str):
        try:
            return jsonify(recordings.load(name))
        except (KeyError, OSError, ValueError):
            abort(404)

    return app


def main() -> None:
    host = os.environ.get("SKILL_RUNNER_E2E_CLIENT_HOST", "127.0.0.1")
    port = port_from_env(os.environ.get("SKILL_RUNNER_E2E_CLIENT_PORT"))
    create_app().run(host=host, port=port, threaded=True)


if __name__ == "__main__":
    main()
