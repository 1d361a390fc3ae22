"""Load a skill.json directory into a SkillPackage: the meta-schema, the mode's body file, and
a runner manifest synthesized so the run goes through the same path as a SKILL.md skill."""

from __future__ import annotations

import copy
import difflib
import math
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jsonschema import Draft7Validator, FormatChecker

from runner_core.engines import RUNNABLE_ENGINES, SUPPORTED_ENGINES
from runner_core.openevo.meta_schema import META_SCHEMA, STEP_SCHEMA
from runner_core.openevo.node import node_command
from runner_core.openevo.references import reference_errors
from runner_core.openevo.templates import compile_errors
from runner_core.openevo.workflow import depends_of
from runner_core.schema_patterns import pattern_errors
from runner_core.schema_refs import outside_ref_errors
from runner_core.semver import SEMVER
from runner_core.skills.files import SkillFileError, read_json, read_text
from runner_core.skills.model import Automation, Entrypoint, RunnerManifest, SkillPackage

SKILL_JSON = "skill.json"
CODE_FILES = ("index.py", "index.ts", "index.js")
HARNESS_PY = Path(__file__).with_name("harness.py")
DEFAULT_TIMEOUT_MS = 30000
# The llm prompt: prompt.md is the instruction; the input and the output contract follow.
LLM_TEMPLATE = """\
{{ skill.body }}

# Input
```json
{{ input | tojson(indent=2) }}
```
{{ output_contract }}"""

# only the meta-schema's own format (its maxLength bounds the length): the draft-07 formats
# inside `input` and `output` stay annotations, as before
_formats = FormatChecker(formats=())
_formats.checks("semver")(lambda v: not isinstance(v, str) or bool(SEMVER.fullmatch(v)))
_meta = Draft7Validator(META_SCHEMA, format_checker=_formats)


@dataclass(frozen=True)
class OpenEvoSpec:
    """What skill.json declares beyond the SkillPackage fields."""

    name: str
    mode: str
    category: str = ""
    calls: tuple[str, ...] = ()
    pipeline: tuple[dict[str, Any], ...] = ()
    output_mapping: dict[str, Any] | None = None
    timeout_ms: float = DEFAULT_TIMEOUT_MS
    retry: int = 0
    tags: tuple[str, ...] = ()
    author: str | None = None
    code_file: str | None = None  # index.py / index.ts / index.js
    raw: dict[str, Any] = field(default_factory=dict)

    def callees(self) -> list[str]:
        """Every skill this one may call: `calls` and the pipeline's steps."""
        names = list(self.calls)
        names += [s["skill"] for s in self.pipeline if s.get("skill") not in names]
        return list(dict.fromkeys(names))


def is_openevo_dir(root: Path) -> bool:
    return (root / SKILL_JSON).is_file() and not (root / "SKILL.md").is_file()


def load_openevo(root: Path) -> SkillPackage:
    """The skill.json skill at `root`; every problem lands in `errors` (health invalid)."""
    pkg = SkillPackage(id=root.name, root=root, format="skill.json")
    try:
        raw = read_json(root / SKILL_JSON, SKILL_JSON)
    except SkillFileError as exc:
        pkg.errors.append(str(exc))
        return pkg
    if not isinstance(raw, dict):
        pkg.errors.append("skill.json must hold a JSON object")
        return pkg
    for err in sorted(_meta.iter_errors(raw), key=lambda e: list(e.absolute_path)):
        where = "/".join(str(p) for p in err.absolute_path) or "(root)"
        pkg.errors.append(f"skill.json: {where}: {err.message}")
    if isinstance(raw.get("name"), str) and raw["name"]:
        pkg.id = raw["name"]
    if pkg.errors:
        return pkg
    spec = _spec(raw, root, pkg.errors)
    pkg.warnings.extend(unknown_step_fields(raw.get("pipeline") or []))
    pkg.openevo = spec
    pkg.name, pkg.description = spec.name, raw["description"]
    pkg.input_schema = inline_input_schema(raw["input"], pkg.errors)
    pkg.parameter_schema = {"type": "object", "properties": {}, "additionalProperties": False}
    pkg.output_schema = raw["output"]
    for kind in ("input", "output"):  # nested repeats: exponential matching in the API
        pkg.errors.extend(pattern_errors(f"skill.json: {kind}", raw[kind]))
        pkg.errors.extend(outside_ref_errors(f"skill.json: {kind}", raw[kind]))
    if spec.mode == "llm" and (root / "prompt.md").is_file():
        try:
            pkg.body = read_text(root / "prompt.md", "prompt.md")
        except SkillFileError as exc:
            pkg.errors.append(str(exc))
    pkg.manifest = _manifest(spec, raw)
    pkg.effective_engines = list(RUNNABLE_ENGINES) if spec.mode == "llm" else []
    return pkg


def _spec(raw: dict[str, Any], root: Path, errors: list[str]) -> OpenEvoSpec:
    mode = raw["mode"]
    code_file = next((f for f in CODE_FILES if (root / f).is_file()), None)
    if mode == "code" and code_file is None:
        errors.append("mode 'code' needs index.py, index.ts or index.js next to skill.json")
    if mode == "llm" and not (root / "prompt.md").is_file():
        errors.append("mode 'llm' needs prompt.md next to skill.json")
    pipeline = raw.get("pipeline") or []
    if mode == "composite" and not pipeline and code_file is None:
        errors.append("mode 'composite' needs a 'pipeline' or an index file")
    if pipeline and mode != "composite":
        errors.append("'pipeline' is only allowed with mode 'composite'")
    if mode == "composite" and pipeline:
        errors.extend(pipeline_errors(pipeline))
        errors.extend(f"outputMapping: {e}" for e in compile_errors(raw.get("outputMapping")))
        errors.extend(reference_errors(pipeline, raw.get("outputMapping"), _depends(pipeline)))
    return OpenEvoSpec(
        name=raw["name"],
        mode=mode,
        category=raw.get("category", ""),
        calls=tuple(raw.get("calls") or ()),
        pipeline=tuple(pipeline),
        output_mapping=raw.get("outputMapping"),
        timeout_ms=raw.get("timeout", DEFAULT_TIMEOUT_MS),
        retry=int(raw.get("retry", 0)),
        tags=tuple(raw.get("tags") or ()),
        author=raw.get("author"),
        code_file=code_file,
        raw=raw,
    )


def pipeline_errors(pipeline: list[dict[str, Any]]) -> list[str]:
    """Unique step names; `depends` naming earlier steps only (so the steps form a DAG);
    templates that compile."""
    errors, seen = [], set()
    for step in pipeline:
        name = step["step"]
        if name in seen:
            errors.append(f"pipeline: step '{name}' is declared twice")
        for dep in step.get("depends") or ():
            if dep not in seen:
                errors.append(f"pipeline: step '{name}' depends on '{dep}', not an earlier step")
        # a template that cannot compile would fail every run
        broken = compile_errors([step["input"], step.get("foreach")])
        broken += compile_errors(step.get("condition"), bare=True)
        errors.extend(f"pipeline: step '{name}': {e}" for e in broken)
        seen.add(name)
    return errors


def unknown_step_fields(pipeline: list[dict[str, Any]]) -> list[str]:
    """A warning per step field the service does not know: the meta-schema lets it through,
    but it does nothing, so a `forEach` or `dependsOn` would go unnoticed otherwise."""
    known = {name.lower(): name for name in STEP_SCHEMA["properties"]}
    warnings = []
    for step in pipeline:
        for key in step:
            if key in STEP_SCHEMA["properties"]:
                continue
            near = difflib.get_close_matches(key.lower(), list(known), n=1)
            hint = f" (did you mean '{known[near[0]]}'?)" if near else ""
            warnings.append(
                f"pipeline: step '{step['step']}': '{key}' is no step field and does nothing{hint}"
            )
    return warnings


def _depends(pipeline: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Each step's direct dependencies: its `depends`, else the step before it."""
    return {step["step"]: depends_of(pipeline, i) for i, step in enumerate(pipeline)}


def inline_input_schema(schema: dict[str, Any], errors: list[str]) -> dict[str, Any]:
    """The input schema with every top-level field marked inline (skill.json takes no files)."""
    if schema.get("type") != "object":
        errors.append("skill.json: input must be a JSON Schema of type 'object'")
        return schema
    marked = copy.deepcopy(schema)
    for prop in (marked.get("properties") or {}).values():
        if isinstance(prop, dict):
            prop["x-input-source"] = "inline"
    return marked


def _manifest(spec: OpenEvoSpec, raw: dict[str, Any]) -> RunnerManifest:
    """The runner manifest the rest of the service reads: code runs as a script (the harness
    calls execute), llm as a prompt skill on any engine, composite as its own entrypoint."""
    if spec.mode == "code" or (spec.mode == "composite" and not spec.pipeline):
        # an index-file composite runs as a script too; its ctx.call starts child runs
        entry = Entrypoint(type="script", script_command=code_command(spec.code_file or ""))
    elif spec.mode == "llm":
        entry = Entrypoint(type="prompt", prompts={e: LLM_TEMPLATE for e in SUPPORTED_ENGINES})
    else:
        entry = Entrypoint(type="composite")
    return RunnerManifest(
        id=spec.name,
        version=raw.get("version", "1.0.0"),
        engines=None if spec.mode == "llm" else (),
        unsupported_engines=(),
        execution_modes=("auto",),
        entrypoint=entry,
        schemas={"input": SKILL_JSON, "parameter": SKILL_JSON, "output": SKILL_JSON},
        artifacts=(),
        automation=Automation(timeout_sec=max(1, math.ceil(spec.timeout_ms / 1000))),
        normalizer=None,
        fallback=None,
        runtime=None,
        retries=spec.retry,
    )


def code_command(code_file: str) -> str:
    """The command running `execute` of the skill's index file through the harness."""
    if code_file.endswith(".py"):
        argv = [sys.executable, str(HARNESS_PY), code_file]
    else:
        argv = node_command(code_file)
    return shlex.join(argv)
