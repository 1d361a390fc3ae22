"""Parse assets/runner.json into a RunnerManifest, reporting every problem found."""

from __future__ import annotations

import shlex
from difflib import get_close_matches
from pathlib import PurePosixPath
from typing import Any

from runner_core.artifacts import ArtifactSpec
from runner_core.skills.model import (
    Automation,
    Command,
    Entrypoint,
    RunnerManifest,
    Runtime,
)

EXECUTION_MODES = ("auto", "interactive")
ENTRYPOINT_TYPES = ("prompt", "script", "hybrid")
NETWORK_MODES = ("off", "allowlist", "on")  # `on`: the open network, unless the operator forbids it


# the spec's keys, this service's own (retries, runtime, max_attempt) and those Skill-Runner's
# manifests carry (name, description, engine_configs, mcp): any other key is read by nobody
KNOWN_KEYS = frozenset(
    "id version engines unsupported_engines execution_modes entrypoint schemas artifacts "
    "automation normalizer fallback runtime max_attempt retries name description "
    "engine_configs mcp".split()
)
# where a key written at the top level belongs
MISPLACED = {
    "timeout": "automation.timeout_sec",
    "timeout_sec": "automation.timeout_sec",
    "network": "automation.network",
    "allowlist": "automation.allowlist",
    "fs_scope": "automation.fs_scope",
    "dependencies": "runtime.dependencies",
    "command": "entrypoint.script.command",
    "prompt": "entrypoint.prompt",
    "type": "entrypoint.type",
}


def parse_manifest(raw: Any, *, strict: bool) -> tuple[RunnerManifest | None, list[str], list[str]]:
    """Return (manifest or None, errors, warnings)."""
    errors: list[str] = []
    warnings: list[str] = []
    if not isinstance(raw, dict):
        return None, ["runner.json must be a JSON object"], warnings
    warnings.extend(unknown_key_warnings(raw))
    skill_id = raw.get("id")
    if not isinstance(skill_id, str) or not skill_id:
        errors.append("runner.json: 'id' is required")
    version = raw.get("version", "")
    if not isinstance(version, str) or not version:
        errors.append("runner.json: 'version' is required")
    engines = _str_list(raw, "engines", errors, optional=True)
    unsupported = _str_list(raw, "unsupported_engines", errors, optional=True) or ()
    if engines and set(engines) & set(unsupported):
        errors.append(
            "runner.json: 'engines' and 'unsupported_engines' overlap: "
            + ", ".join(sorted(set(engines) & set(unsupported)))
        )
    modes = _execution_modes(raw, strict, errors, warnings)
    max_attempt = raw.get("max_attempt")
    if max_attempt is not None and (not isinstance(max_attempt, int) or max_attempt < 1):
        errors.append("runner.json: 'max_attempt' must be an integer >= 1")
    entrypoint = _entrypoint(raw.get("entrypoint", {}), errors)
    schemas = raw.get("schemas", {})
    if not isinstance(schemas, dict):
        errors.append("runner.json: 'schemas' must be an object")
        schemas = {}
    for kind in [kind for kind, path in schemas.items() if not isinstance(path, str)]:
        errors.append(f"runner.json: schemas.{kind} must be a file path in the skill")
        schemas = {k: v for k, v in schemas.items() if k != kind}
    retries = raw.get("retries", 0)
    if retries is None:
        retries = 0
    if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0:
        errors.append("runner.json: 'retries' must be an integer >= 0")
        retries = 0
    manifest = RunnerManifest(
        id=skill_id if isinstance(skill_id, str) else "",
        version=version if isinstance(version, str) else "",
        engines=tuple(engines) if engines is not None else None,
        unsupported_engines=tuple(unsupported),
        execution_modes=tuple(modes),
        entrypoint=entrypoint,
        schemas=schemas,
        artifacts=tuple(_artifacts(raw.get("artifacts", []), errors)),
        automation=_automation(raw.get("automation", {}), errors),
        normalizer=_command(raw, "normalizer", errors),
        fallback=_command(raw, "fallback", errors),
        runtime=_runtime(raw.get("runtime"), errors),
        max_attempt=max_attempt if isinstance(max_attempt, int) else None,
        retries=retries,
    )
    return manifest, errors, warnings


def unknown_key_warnings(raw: dict) -> list[str]:
    """A warning per top-level key nobody reads (a typo, or a key out of its place)."""
    warnings = []
    for key in sorted(k for k in raw if k not in KNOWN_KEYS):
        near = get_close_matches(key, KNOWN_KEYS | MISPLACED.keys(), n=1)
        hint = MISPLACED.get(key) or (MISPLACED.get(near[0], near[0]) if near else None)
        where = f" (did you mean {hint}?)" if hint else ""
        warnings.append(f"runner.json: unknown key '{key}' is ignored{where}")
    return warnings


def _str_list(raw: dict, key: str, errors: list[str], optional: bool) -> list[str] | None:
    value = raw.get(key)
    if value is None:
        return None if optional else []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        errors.append(f"runner.json: '{key}' must be a list of strings")
        return []
    return value


def _execution_modes(raw: dict, strict: bool, errors: list[str], warnings: list[str]) -> list[str]:
    if "execution_modes" not in raw:
        if strict:
            errors.append(
                "runner.json: 'execution_modes' is required (non-empty, auto|interactive)"
            )
            return []
        warnings.append(
            "runner.json: 'execution_modes' missing; treated as [\"auto\"] (deprecated)"
        )
        return ["auto"]
    modes = raw["execution_modes"]
    if not isinstance(modes, list) or not modes:
        errors.append("runner.json: 'execution_modes' must be a non-empty list")
        return []
    bad = [m for m in modes if m not in EXECUTION_MODES]
    if bad:
        errors.append(f"runner.json: unknown execution_modes {bad}; allowed: auto, interactive")
    return [m for m in modes if m in EXECUTION_MODES]


def _entrypoint(raw: Any, errors: list[str]) -> Entrypoint:
    if not isinstance(raw, dict):
        errors.append("runner.json: 'entrypoint' must be an object")
        return Entrypoint()
    kind = raw.get("type", "prompt")
    if kind not in ENTRYPOINT_TYPES:
        errors.append(f"runner.json: entrypoint.type must be one of {', '.join(ENTRYPOINT_TYPES)}")
    prompt = _object(raw, "prompt", errors)
    script = _object(raw, "script", errors)
    command = script.get("command")
    if command is None and kind in ("script", "hybrid"):
        errors.append(f"runner.json: entrypoint.script.command is required for type '{kind}'")
    elif command is not None and not _command_line(command):
        errors.append(
            "runner.json: entrypoint.script.command must be a command line string "
            '(e.g. "python scripts/run.py", quotes closed)'
        )
        command = None
    template = prompt.get("template")
    if template is not None and (not isinstance(template, str) or not template.strip()):
        errors.append("runner.json: entrypoint.prompt.template must be a file path in the skill")
        template = None
    result_mode = prompt.get("result_mode", "file")
    if result_mode not in ("file", "stdout"):
        errors.append("runner.json: entrypoint.prompt.result_mode must be file or stdout")
    result_file = prompt.get("result_file", "result/result.json")
    if not _inside_run(result_file):
        errors.append(
            "runner.json: entrypoint.prompt.result_file must be a relative path inside the run "
            "(no '..', not absolute), e.g. result/result.json"
        )
        result_file = "result/result.json"
    prompts = {} if raw.get("prompts") is None else raw["prompts"]
    if not isinstance(prompts, dict) or not all(isinstance(v, str) for v in prompts.values()):
        errors.append("runner.json: entrypoint.prompts must map engine names to strings")
        prompts = {}
    return Entrypoint(
        type=kind,
        prompt_template=template,
        result_mode=result_mode,
        result_file=result_file,
        script_command=command,
        prompts=dict(prompts),
    )


def _object(entrypoint: dict, key: str, errors: list[str]) -> dict:
    """entrypoint.<key>: an object, or {} when absent (or null)."""
    value = entrypoint.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        errors.append(f"runner.json: entrypoint.{key} must be an object")
        return {}
    return value


def _command_line(value: object) -> bool:
    """A string the worker can split into a program and its arguments (as it runs it)."""
    if not isinstance(value, str):
        return False
    try:
        return bool(shlex.split(value))
    except ValueError:  # an unclosed quote
        return False


def _artifacts(raw: Any, errors: list[str]) -> list[ArtifactSpec]:
    if not isinstance(raw, list):
        errors.append("runner.json: 'artifacts' must be a list")
        return []
    specs = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or not item.get("role") or not item.get("pattern"):
            errors.append(f"runner.json: artifacts[{i}] needs 'role' and 'pattern'")
            continue
        if not all(isinstance(item.get(key), str) for key in ("role", "pattern")):
            errors.append(f"runner.json: artifacts[{i}].role and .pattern must be strings")
            continue
        specs.append(
            ArtifactSpec(
                role=item["role"],
                pattern=item["pattern"],
                mime=item.get("mime"),
                required=bool(item.get("required", False)),
            )
        )
    return specs


def _automation(raw: Any, errors: list[str]) -> Automation:
    if not isinstance(raw, dict):
        errors.append("runner.json: 'automation' must be an object")
        return Automation()
    timeout = raw.get("timeout_sec")
    if timeout is not None and (not isinstance(timeout, int) or timeout <= 0):
        errors.append("runner.json: automation.timeout_sec must be a positive integer")
        timeout = None
    network = raw.get("network", "off")
    if network not in NETWORK_MODES:
        errors.append("runner.json: automation.network must be off, allowlist or on")
        network = "off"
    allowlist = raw.get("allowlist", []) or []
    if not isinstance(allowlist, list) or not all(isinstance(h, str) for h in allowlist):
        errors.append("runner.json: automation.allowlist must be a list of host strings")
        allowlist = []
    fs_scope = raw.get("fs_scope", "workspace_only")
    if not isinstance(fs_scope, str):
        errors.append("runner.json: automation.fs_scope must be a string")
        fs_scope = "workspace_only"
    return Automation(
        timeout_sec=timeout, network=network, allowlist=tuple(allowlist), fs_scope=fs_scope
    )


def _command(raw: dict, key: str, errors: list[str]) -> Command | None:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("command"), str):
        errors.append(f"runner.json: '{key}.command' must be a string")
        return None
    return Command(command=value["command"], enabled=bool(value.get("enabled", True)))


def _runtime(raw: Any, errors: list[str]) -> Runtime | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        errors.append("runner.json: 'runtime' must be an object")
        return None
    deps = raw.get("dependencies", [])
    if not isinstance(deps, list) or not all(isinstance(d, str) for d in deps):
        errors.append("runner.json: runtime.dependencies must be a list of strings")
        deps = []
    language, version = raw.get("language", "python"), raw.get("version")
    if not isinstance(language, str) or not (version is None or isinstance(version, str)):
        errors.append("runner.json: runtime.language and runtime.version must be strings")
        language, version = "python", None
    return Runtime(language=language, version=version, dependencies=tuple(deps))


def _inside_run(path: object) -> bool:
    """A result file path the run directory holds: relative, no '..', not a folder."""
    if not isinstance(path, str) or not path.strip() or path.endswith("/"):
        return False
    parts = PurePosixPath(path).parts
    return not PurePosixPath(path).is_absolute() and ".." not in parts and "\\" not in path
