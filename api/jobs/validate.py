"""Checks of a job request before anything is written: engine, mode, model, parameters and
inline input against the skill; file inputs are checked when they are uploaded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from api import context
from api.errors import ApiError
from runner_core import runtime_options
from runner_core.budget import PRICED_BY_CLI
from runner_core.engines import RETIRED
from runner_core.engines.catalog import requested_model
from runner_core.engines.config import EngineConfigError, load_engine_config
from runner_core.engines.setting_types import check_setting_types
from runner_core.error_codes import ErrorCode
from runner_core.inputs import (
    InputError,
    file_fields,
    held_text,
    inline_errors,
    path_inputs,
    schema_errors,
    upload_listing,
    validate_parameters,
)
from runner_core.openevo.engines import default_engine, is_composite, steps_refusing
from runner_core.runtime_options import RuntimeOptions
from runner_core.skills import SkillPackage
from runner_core.tokens import priced, prices_at


def check_request(pkg: SkillPackage, body: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """Engine, execution mode, parameters and inline input; returns (engine, parameter)."""
    if pkg.health != "ok":
        raise ApiError(
            400,
            ErrorCode.SKILL_INVALID,
            f"skill '{pkg.id}' is invalid: " + "; ".join(pkg.errors),
            {"skill_id": pkg.id, "errors": pkg.errors},
        )
    manifest = pkg.loaded_manifest
    engine = body.get("engine")
    needs_engine = manifest.entrypoint.type in ("prompt", "hybrid")
    steps = pkg.llm_steps if is_composite(pkg) else None
    if engine is None and (needs_engine or steps):
        engine = default_engine(pkg)
    if engine in RETIRED:
        raise ApiError(
            400,
            ErrorCode.ENGINE_RETIRED,
            f"engine '{engine}' is retired: {RETIRED[engine]}",
            {"engine": engine, "reason": RETIRED[engine]},
        )
    if engine is not None and is_composite(pkg):
        check_steps_engine(pkg, engine)
    if (engine is not None and engine not in pkg.effective_engines) or (
        engine is None and (needs_engine or steps)
    ):
        named = (
            f"engine '{engine}' is not" if engine is not None else "no engine this service has is"
        )
        raise ApiError(
            400,
            ErrorCode.SKILL_ENGINE_UNSUPPORTED,
            f"{named} supported by skill '{pkg.id}'",
            {"engine": engine, "effective_engines": pkg.effective_engines},
        )
    check_runtime_options(body["runtime_options"])
    mode = RuntimeOptions.from_dict(body["runtime_options"]).execution_mode
    if mode not in manifest.execution_modes:
        raise ApiError(
            400,
            ErrorCode.EXECUTION_MODE_UNSUPPORTED,
            f"execution_mode '{mode}' is not declared by skill '{pkg.id}'",
            {"execution_mode": mode, "execution_modes": list(manifest.execution_modes)},
        )
    model_error = None
    if engine:  # the request's effort and provider_id shape and check the model it runs
        body["model"], model_error = requested_model(
            engine, body.get("model"), body.get("effort"), body.get("provider_id")
        )
    if model_error:
        raise ApiError(
            400,
            ErrorCode.MODEL_UNSUPPORTED,
            model_error,
            {"engine": engine, "model": body.get("model")},
        )
    if steps is None:  # a composite's budget is enforced on no run: not refused for its engine
        check_usd_budget(engine, body.get("model"), body["runtime_options"])
    if engine is not None:
        for skill_dir, skill_id in _engine_skills(pkg, steps):
            check_engine_config(
                skill_dir, skill_id, engine, body.get("model"), body["runtime_options"]
            )
    try:
        parameter = validate_parameters(pkg.parameter_schema, body.get("parameter"))
    except InputError as exc:
        raise ApiError(400, exc.code, exc.message, exc.details) from exc
    check_inline(pkg, body.get("input") or {})
    return engine, parameter


def check_runtime_options(options: dict[str, Any], request_id: str | None = None) -> None:
    """400 SCHEMA_VALIDATION_FAILED naming the first option of the wrong type (`request_id`:
    the run's, when the options are a reply's)."""
    errors = schema_errors(runtime_options.SCHEMA, options) if options else []
    if errors:
        first = errors[0]
        raise ApiError(
            400,
            ErrorCode.SCHEMA_VALIDATION_FAILED,
            f"runtime_options.{first['path']}: {first['message']}",
            {"schema": "runtime_options", "errors": errors},
            request_id,
        )


def check_steps_engine(pkg: SkillPackage, engine: str) -> None:
    """400 SKILL_ENGINE_UNSUPPORTED naming why a composite cannot run on `engine`: it reaches
    no llm skill (nothing in it runs on an engine), or which of its llm skills do not run on it."""
    steps = pkg.llm_steps or []
    refusing = steps_refusing(steps, engine)
    if steps and not refusing:
        return
    if not steps:
        message = (
            f"skill '{pkg.id}' runs on no engine: none of its steps is an llm skill "
            "(name no engine for it)"
        )
    else:
        message = (
            f"engine '{engine}' is not supported by skill '{pkg.id}': its llm step "
            + ", ".join(f"'{name}'" for name in refusing)
            + " does not run on it"
        )
    raise ApiError(
        400,
        ErrorCode.SKILL_ENGINE_UNSUPPORTED,
        message,
        {"engine": engine, "effective_engines": pkg.effective_engines, "steps": refusing},
    )


def _engine_skills(pkg: SkillPackage, steps: list[Any] | None) -> list[tuple[Path, str]]:
    """The skills whose engine config a job's engine and model go to: the skill itself, or
    a composite's llm skills."""
    if steps is None:
        return [(pkg.root, pkg.id)]
    return [(step.root, step.skill) for step in steps]


def check_engine_config(
    skill_dir: Path, skill_id: str, engine: str, model: str | None, options: dict[str, Any]
) -> None:
    """400 ENGINE_CONFIG_INVALID naming the key, for what would fail the run once its CLI is
    set up: a config layer (the skill's files, the request's `<engine>_config`) that does not
    load, a setting without a value (null: no CLI settings file or TOML override has one), or
    a setting the engine's CLI knows with another JSON type (checked on the merged layers)."""
    settings = RuntimeOptions.from_dict(options).engine_config(engine)
    problem = None
    if settings is not None and not isinstance(settings, dict):
        problem = f"runtime_options.{engine}_config must be an object"
    else:
        empty = null_keys(settings or {}, f"runtime_options.{engine}_config")
        if empty:
            problem = f"{empty[0]}: a setting needs a value, not null"
    if problem is None:
        user = {"model": model, f"{engine}_config": settings}
        try:
            merged = load_engine_config(engine, skill_dir=skill_dir, user=user)
            check_setting_types(
                engine, merged.get("settings") or {}, skill_dir=skill_dir, sent=settings
            )
        except EngineConfigError as exc:
            problem = str(exc)
    if problem is not None:
        raise ApiError(
            400, ErrorCode.ENGINE_CONFIG_INVALID, problem, {"engine": engine, "skill_id": skill_id}
        )


def null_keys(value: Any, where: str) -> list[str]:
    """The dotted paths under `value` that hold null."""
    if value is None:
        return [where]
    if isinstance(value, dict):
        return [path for key, item in value.items() for path in null_keys(item, f"{where}.{key}")]
    if isinstance(value, list):
        return [path for n, item in enumerate(value) for path in null_keys(item, f"{where}[{n}]")]
    return []


def check_usd_budget(engine: str | None, model: str | None, options: dict[str, Any]) -> None:
    """400 BUDGET_UNENFORCEABLE: a USD budget for a run whose cost nobody would know (its CLI
    prices nothing and the price table names neither its model nor its engine)."""
    budget = RuntimeOptions.from_dict(options).budget
    if budget is None or budget.max_usd is None or engine is None or engine in PRICED_BY_CLI:
        return
    probe = {"input_tokens": 1, "output_tokens": 1}
    if "cost_usd" in (
        priced(probe, prices_at(context.settings().prices_file), engine, model) or {}
    ):
        return
    raise ApiError(
        400,
        ErrorCode.BUDGET_UNENFORCEABLE,
        f"a USD budget needs a cost, and {engine} reports none: give the operator's price "
        f"table (SKILL_RUNNER_PRICES_FILE) an entry for {engine} or its model, or use max_tokens",
        {"engine": engine, "model": model, "priced_by_cli": sorted(PRICED_BY_CLI)},
    )


def check_inline(pkg: SkillPackage, inline: dict[str, Any]) -> None:
    """Inline fields are checked now; file fields wait for the upload. A file field may name
    its upload by path (`<key>/<name>` or `inputs/<key>/<name>`), as existing clients do."""
    files = file_fields(pkg.input_schema)
    by_path = path_inputs(pkg.input_schema, inline)
    sent_as_inline = sorted((set(inline) & set(files)) - set(by_path))
    if sent_as_inline:
        raise ApiError(
            400,
            ErrorCode.INPUT_FILE_AS_INLINE,
            "file inputs must be uploaded, not sent inline (or name their upload as "
            "'inputs/<key>/<file>'): " + ", ".join(sent_as_inline),
            {"fields": sent_as_inline},
        )
    inline = {k: v for k, v in inline.items() if k not in by_path}
    errors = inline_errors(pkg.input_schema, inline, set(by_path))
    if errors:
        raise ApiError(
            400,
            ErrorCode.SCHEMA_VALIDATION_FAILED,
            "input does not match the skill's input schema",
            {"schema": "input", "errors": errors},
        )


def check_named_uploads(pkg: SkillPackage, inline: dict[str, Any], uploaded: set[str]) -> None:
    """Every file input named by path in `input` is in the upload: else 400 INPUT_FILE_MISSING."""
    named = path_inputs(pkg.input_schema, inline)
    missing = sorted(k for k, rel in named.items() if rel not in uploaded)
    if missing:
        held = upload_listing(uploaded)
        raise ApiError(
            400,
            ErrorCode.INPUT_FILE_MISSING,
            "the upload holds no file at the path input names for: "
            + ", ".join(f"{k} ({named[k]})" for k in missing)
            + f"; {held_text(held)}",
            {"fields": missing, "paths": {k: named[k] for k in missing}, **held},
        )
