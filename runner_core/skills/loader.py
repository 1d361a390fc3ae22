"""Load a skill directory into a SkillPackage, collecting every problem instead of raising."""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import replace
from pathlib import Path
from typing import Any

import skills_ref
from skills_ref.parser import parse_frontmatter

from runner_core.artifact_manifest import manifest_fields
from runner_core.artifacts import artifact_fields
from runner_core.engines import RETIRED, RUNNABLE_ENGINES, SUPPORTED_ENGINES
from runner_core.openevo.spec import is_openevo_dir, load_openevo
from runner_core.skills.files import SkillFileError, read_json, read_text
from runner_core.skills.manifest import parse_manifest
from runner_core.skills.model import RunnerManifest, SkillPackage
from runner_core.skills.schemas import check_skill_schema

SCHEMA_KINDS = ("input", "parameter", "output")
# the input or parameter schema of a skill that has none (Skill-Runner makes both optional)
_NO_SCHEMA: dict[str, Any] = {"type": "object"}


def load_skill(root: Path, *, strict: bool = False) -> SkillPackage:
    """Load the skill at `root`. `strict` applies the rules for new uploads."""
    if is_openevo_dir(root):
        return load_openevo(root)
    pkg = SkillPackage(id=root.name, root=root)
    _load_skill_md(pkg)
    runner_path = root / "assets" / "runner.json"
    if not runner_path.is_file():
        pkg.errors.append("assets/runner.json is missing")
        return pkg
    raw = _read_json(runner_path, "assets/runner.json", pkg)
    if raw is None:
        return pkg
    manifest, errors, warnings = parse_manifest(raw, strict=strict)
    pkg.errors.extend(errors)
    pkg.warnings.extend(warnings)
    if manifest is None:
        return pkg
    pkg.manifest = manifest
    if manifest.id != root.name:
        pkg.errors.append(
            f"runner.json id '{manifest.id}' must equal the directory name '{root.name}'"
        )
    if pkg.name and manifest.id != pkg.name:
        pkg.errors.append(f"runner.json id '{manifest.id}' must equal SKILL.md name '{pkg.name}'")
    pkg.warnings.extend(missing_command_files(root, manifest))
    _load_schemas(pkg)
    pkg.effective_engines = effective_engines(
        manifest.engines, manifest.unsupported_engines, pkg.errors, pkg.warnings
    )
    pkg.artifacts = list(manifest.artifacts) + artifact_fields(pkg.output_schema)
    pkg.artifact_manifests = manifest_fields(pkg.output_schema)
    return pkg


def effective_engines(engines, unsupported, errors: list[str], warnings: list[str]) -> list[str]:
    """(engines or all supported) minus unsupported, of the engines this service has an adapter
    for: an engine it has none for (a newer CLI, a typo) is named in a warning and left out, so
    a request for it is refused rather than queued where no worker serves it. An empty
    declared set is an error."""
    base = list(engines) if engines is not None else list(RUNNABLE_ENGINES)
    declared = [e for e in base if e not in set(unsupported)]
    if not declared:
        errors.append("the effective engine set is empty")
    unknown = [e for e in declared if e not in SUPPORTED_ENGINES]
    if unknown:
        warnings.append(
            f"runner.json: this service has no adapter for engine {', '.join(unknown)}; "
            "runs on it are refused (engines here: " + ", ".join(RUNNABLE_ENGINES) + ")"
        )
    retired = [e for e in declared if e in RETIRED] if engines is not None else []
    if retired:
        warnings.append(
            f"runner.json: engine {', '.join(retired)} is retired ({RETIRED[retired[0]]}); "
            "new runs on it are refused"
        )
    return [e for e in declared if e in SUPPORTED_ENGINES]


_SCRIPT_SUFFIXES = (".py", ".sh", ".bash", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", ".r", ".R")


def missing_command_files(root: Path, manifest: RunnerManifest) -> list[str]:
    """A warning per script a command names that the skill lacks: its commands run from the
    skill's root, so `python scripts/run.py` needs `scripts/run.py` there."""
    commands = [("entrypoint.script.command", manifest.entrypoint.script_command)]
    for key in ("normalizer", "fallback"):
        command = getattr(manifest, key)
        if command is not None and command.enabled:
            commands.append((f"{key}.command", command.command))
    warnings = []
    for where, command_line in commands:
        try:
            argv = shlex.split(command_line or "")
        except ValueError:  # reported as an error by parse_manifest
            continue
        for token in argv:
            if token.startswith("-") or os.path.isabs(token) or any(c.isspace() for c in token):
                continue
            if not (token.endswith(_SCRIPT_SUFFIXES) or token.startswith("./")):
                continue
            if not (root / token).exists():
                warnings.append(f"runner.json: {where} runs {token}, which the skill does not have")
    return warnings


def _load_skill_md(pkg: SkillPackage) -> None:
    md = pkg.root / "SKILL.md"
    if not md.is_file():
        pkg.errors.append("SKILL.md is missing")
        return
    try:
        text = read_text(md, "SKILL.md")
    except SkillFileError as exc:  # skills_ref would raise reading it too
        pkg.errors.append(str(exc))
        return
    pkg.errors.extend(f"SKILL.md: {e}" for e in skills_ref.validate(pkg.root))
    if unquoted_colon_in_description(text):
        pkg.warnings.append(
            "SKILL.md: the description holds an unquoted ':', which codex's YAML "
            "parser rejects; put the description in quotes"
        )
    try:
        meta, body = parse_frontmatter(text)
    except skills_ref.SkillError:
        return  # already reported by validate()
    pkg.frontmatter = meta
    pkg.name = meta.get("name")
    pkg.description = meta.get("description")
    pkg.body = body


_DESCRIPTION_LINE = re.compile(r"^description:[ \t]*(.*)$", re.MULTILINE)


def unquoted_colon_in_description(skill_md: str) -> bool:
    """True when the frontmatter's `description` is a plain (unquoted) scalar holding ':'."""
    parts = skill_md.split("---", 2)
    if len(parts) < 3:
        return False
    match = _DESCRIPTION_LINE.search(parts[1])
    if match is None:
        return False
    value = match.group(1).strip()
    return bool(value) and value[0] not in "'\"|>" and ":" in value


def _load_schemas(pkg: SkillPackage) -> None:
    declared = _schema_paths(pkg)
    for kind in SCHEMA_KINDS:
        rel = declared.get(kind)
        if not rel:
            if kind == "output":
                pkg.errors.append(
                    "schemas.output is not declared in runner.json (nor is there "
                    "assets/output.schema.json)"
                )
            else:  # no input (or parameter) schema: the skill takes an object, any keys
                setattr(pkg, f"{kind}_schema", dict(_NO_SCHEMA))
            continue
        path = (pkg.root / rel).resolve()
        if pkg.root.resolve() not in path.parents:
            pkg.errors.append(f"schemas.{kind} points outside the skill: {rel}")
            continue
        if not path.is_file():
            pkg.errors.append(f"schemas.{kind} file not found: {rel}")
            continue
        schema = _read_json(path, rel, pkg)
        if isinstance(schema, dict):
            setattr(pkg, f"{kind}_schema", schema)
            check = check_skill_schema(kind, rel, schema)
            pkg.errors.extend(check.errors)
            pkg.warnings.extend(check.warnings)
        elif schema is not None:
            pkg.errors.append(f"{rel} must hold a JSON object")


def _schema_paths(pkg: SkillPackage) -> dict[str, str]:
    """runner.json's `schemas`, a kind it leaves out found at `assets/<kind>.schema.json` as
    Skill-Runner finds it (the Zotero plugin's own skills rely on that); written back into the
    manifest, so the rest of the service reads the path it found."""
    manifest = pkg.loaded_manifest
    schemas = dict(manifest.schemas)
    for kind in SCHEMA_KINDS:
        conventional = f"assets/{kind}.schema.json"
        if kind not in schemas and (pkg.root / conventional).is_file():
            schemas[kind] = conventional
    if schemas != manifest.schemas:
        pkg.manifest = replace(manifest, schemas=schemas)
    return schemas


def _read_json(path: Path, rel: str, pkg: SkillPackage) -> Any:
    try:
        return read_json(path, rel)
    except SkillFileError as exc:
        pkg.errors.append(str(exc))
        return None
