"""The built-in web UI (/ui): server-rendered pages over the management API's data, drawn with
the same functions its routes call (no field or rule of its own). The browser talks to the API
itself for what moves: creating a job, uploading, the event stream, replies and cancel."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from flask import Blueprint, redirect, render_template, request, url_for
from markupsafe import Markup
from marshmallow import ValidationError

from api import auth, context
from api.catalog import engine_summary, get_skill_or_404, matches_labels, skill_summary
from api.errors import ApiError
from api.jobs.conversation import conversation_state, files_body, preview_body
from api.jobs.listing import EVERY_KIND, list_jobs
from api.jobs.read import read_job
from api.schemas import JobListArgs
from api.schemas.output_fields import iso
from api.ui.forms import form_fields
from api.ui.login import add_login_routes
from runner_core.engines.catalog import all_engines, engine_info
from runner_core.error_codes import ErrorCode
from runner_core.events import last_seq
from runner_core.skills import SkillPackage
from runner_core.statuses import RunStatus

bp = Blueprint(
    "ui", __name__, url_prefix="/ui", template_folder="templates", static_folder="static"
)
add_login_routes(bp)
_LIST_ARGS = JobListArgs()
RUNTIME_OPTIONS = (  # (name, label, widget): the common runtime options the form offers
    ("no_cache", "Run again even if a cached result exists", "boolean"),
    ("debug", "Debug bundle (the whole run directory)", "boolean"),
    ("timeout_sec", "Time limit (seconds)", "integer"),
)


@bp.app_template_global()
def utc_time(when: datetime | None) -> Markup:
    """A timestamp as `<time>`: UTC, said so (times.js shows it in the reader's zone)."""
    if when is None:
        return Markup("")
    stamp = iso(when) or ""
    return Markup('<time datetime="{}">{} UTC</time>').format(stamp, stamp[:19].replace("T", " "))


@bp.get("/")
def home():
    return redirect(url_for("ui.skills"))


@bp.get("/skills")
def skills():
    # a script skill runs its own script whatever engines its runner.json allows: no engine
    every = [{**skill_summary(p), "script": _is_script(p)} for p in context.skills().list()]
    args = {k: request.args.get(k, "").strip() for k in ("category", "tag", "q")}
    listed = [s for s in every if matches_labels(s, args["category"], args["tag"], args["q"])]
    return render_template(
        "skills.html",
        skills=listed,
        args=args,
        categories=sorted({s["category"] for s in every if s["category"]}),
        tags=sorted({t for s in every for t in s["tags"]}),
        nav="skills",
    )


@bp.get("/skills/<skill_id>")
def skill(skill_id: str):
    pkg = get_skill_or_404(skill_id)
    summary = skill_summary(pkg)
    # an invalid skill's page says why; its runner.json may not even parse (no manifest)
    script = _is_script(pkg)
    engines = [] if script else summary["effective_engines"]
    models = {}
    for name in engines:
        info = engine_info(name, with_version=False)
        models[name] = {"default": info.default_model, "models": info.models}
    return render_template(
        "skill.html",
        skill=summary,
        fields=form_fields(pkg.input_schema, pkg.parameter_schema),
        engines=engines,
        script=script,
        models=models,
        runtime_options=RUNTIME_OPTIONS,
        nav="skills",
    )


def _is_script(pkg: SkillPackage) -> bool:
    """Runs its own script, no engine (an index-file composite with llm steps has theirs)."""
    return (
        pkg.manifest is not None and pkg.manifest.entrypoint.type == "script" and not pkg.llm_steps
    )


@bp.get("/runs")
def runs():
    args = _LIST_ARGS.load({k: v for k, v in request.args.items() if v})
    with context.connect() as conn:
        page = list_jobs(conn, args, auth.owner_filter(), EVERY_KIND)
    skills = [p.id for p in context.skills().list()]
    if args.get("skill_id") and args["skill_id"] not in skills:
        # a skill no longer installed still has its runs: the list shows the filter it applies
        skills.append(args["skill_id"])
    return render_template(
        "runs.html",
        page=page,
        args=args,
        statuses=list(RunStatus),
        skills=skills,
        engines=[e.engine for e in all_engines(with_version=False)],
        nav="runs",
    )


@bp.get("/runs/<request_id>")
def run(request_id: str):
    with context.connect() as conn:
        job = read_job(conn, request_id)
    return render_template(
        "run.html",
        state=conversation_state(job),
        tree=files_body(job),
        last_seq=last_seq(context.settings().runs_dir / job.run_id),  # history is read back from it
        nav="runs",
    )


@bp.get("/runs/<request_id>/tree")
def tree(request_id: str):
    """The file tree fragment (htmx swaps it in when the run moves on)."""
    with context.connect() as conn:
        job = read_job(conn, request_id)
    return render_template("_tree.html", tree=files_body(job), request_id=request_id)


@bp.get("/runs/<request_id>/preview")
def preview(request_id: str):
    """One file's preview fragment; a refused or missing path shows the API's error."""
    with context.connect() as conn:
        job = read_job(conn, request_id)
    shown: dict[str, Any]
    try:
        shown = preview_body(job, request.args.get("path", ""))
    except ApiError as exc:
        shown = {"error": {"code": exc.code, "message": exc.message}}
    return render_template("_preview.html", preview=shown)


@bp.get("/engines")
def engines():
    listed = [{**engine_summary(i), "models": i.models} for i in all_engines()]
    return render_template("engines.html", engines=listed, nav="engines")


@bp.get("/packages")
def packages():
    """Install a skill package: the page posts the zip to POST /v1/skill-packages itself."""
    return render_template("packages.html", nav="packages")


@bp.errorhandler(ApiError)
def _error_page(exc: ApiError):
    """A page, not the JSON body: an unknown skill or run, a bad filter."""
    return render_template("error.html", code=exc.code, message=exc.message), exc.status


@bp.errorhandler(ValidationError)
def _bad_filter(exc: ValidationError):
    message = "; ".join(f"{k}: {' '.join(v)}" for k, v in exc.normalized_messages().items())
    return render_template("error.html", code=ErrorCode.INVALID_REQUEST, message=message), 400
