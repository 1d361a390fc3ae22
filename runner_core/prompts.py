"""Prompt rendering and the output contract patched into SKILL.md.

Templates run in Jinja2's sandbox with StrictUndefined: a skill's template can neither reach
Python internals nor silently print an empty value for a misspelled variable.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from jinja2 import StrictUndefined, Template, TemplateError

from runner_core.artifact_manifest import MANIFEST_TYPE
from runner_core.artifacts import is_file_field
from runner_core.error_codes import ErrorCode
from runner_core.interaction import AUTO_PROTOCOL, PROTOCOL
from runner_core.schema_refs import resolved_properties
from runner_core.skills.files import SkillFileError, read_text
from runner_core.skills.model import SkillPackage
from runner_core.template_limits import BoundedSandbox, bounded_render
from runner_core.workspace import write_file

DEFAULT_TEMPLATE = """\
Use the skill named '{{ skill.id }}' ({{ skill.description }}).

# Inputs
{% for key, value in input.items() %}
- {{ key }}: {{ value }}
{% endfor %}

# Parameters
{% for key, value in parameter.items() %}
- {{ key }}: {{ value }}
{% endfor %}

Task: Execute the skill using the above inputs and parameters.
{{ output_contract }}"""

CONTRACT_TEMPLATE = """
# Output contract
{% if result_file %}- Write the final result as one JSON object to `{{ result_file }}`; it must match this JSON Schema:
{% else %}- Do not write a result file: give the final result as one JSON object in your final message; it must match this JSON Schema:
{% endif %}
```json
{{ output_schema }}
```
- Write every file you produce under `{{ artifacts_dir }}`.
{% for a in artifact_fields %}- Field `{{ a.key }}` is a file: write it to `{{ artifacts_dir }}/{{ a.filename }}` and put that relative path (`artifacts/{{ a.filename }}`) in the field.
{% endfor %}{% for key in manifest_fields %}- Field `{{ key }}` is the path of a JSON file you write: one flat object naming each file you produce (`{"name": "artifacts/file.ext"}`, paths relative to the run directory); every file it names is returned with the result.
{% endfor %}- End with the same JSON object as your final message, with no other text.
"""

PATCH_MARKER = "<!-- skill-runner: output contract -->"
COMMON_PROMPT = "common"  # entrypoint.prompts key of the prompt for any engine
_FRONTMATTER = re.compile(r"\A---[ \t]*\r?\n.*?^---[ \t]*(?:\r?\n|\Z)", re.DOTALL | re.MULTILINE)


class PromptError(Exception):
    """A template that does not render: the run fails with PROMPT_TEMPLATE_ERROR."""

    code: str = ErrorCode.PROMPT_TEMPLATE_ERROR


class SkillMdError(PromptError):
    """The run's SKILL.md does not render (an undefined variable, a syntax error)."""

    code = ErrorCode.SKILL_MD_TEMPLATE_ERROR


@dataclass(frozen=True)
class PromptContext:
    input: dict[str, Any]
    parameter: dict[str, Any]
    run_dir: Path
    engine: str | None
    execution_mode: str = "auto"  # interactive runs are told how to ask and how to finish


_env = BoundedSandbox(
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
    autoescape=False,
)


def artifact_field_list(output_schema: dict[str, Any]) -> list[dict[str, str]]:
    return [
        {"key": k, "filename": v.get("x-filename", k), "role": v.get("x-role", "output")}
        for k, v in resolved_properties(output_schema).items()
        if is_file_field(v)
    ]


def manifest_field_list(output_schema: dict[str, Any]) -> list[str]:
    return [
        k
        for k, v in resolved_properties(output_schema).items()
        if isinstance(v, dict) and v.get("x-type") == MANIFEST_TYPE
    ]


def output_contract(pkg: SkillPackage, run_dir: Path, mode: str = "auto") -> str:
    """The output contract text (result file, schema, artifact fields), and whether and how
    the agent may ask the user (`mode`)."""
    protocol = PROTOCOL if mode == "interactive" else AUTO_PROTOCOL
    return _contract_text(pkg, run_dir) + protocol


def result_file(pkg: SkillPackage, run_dir: Path) -> str:
    """Where the agent writes its result (runner.json `entrypoint.prompt.result_file`); empty
    when the skill's `result_mode` is stdout."""
    relative = pkg.loaded_manifest.entrypoint.result_path
    return str(run_dir / relative) if relative is not None else ""


def _contract_text(pkg: SkillPackage, run_dir: Path) -> str:
    return _render(
        CONTRACT_TEMPLATE,
        {
            "result_file": result_file(pkg, run_dir),
            "artifacts_dir": str(run_dir / "artifacts"),
            "output_schema": json.dumps(pkg.output_schema, indent=2, ensure_ascii=False),
            "artifact_fields": artifact_field_list(pkg.output_schema),
            "manifest_fields": manifest_field_list(pkg.output_schema),
        },
        "output contract",
    )


def select_template(pkg: SkillPackage, engine: str | None) -> tuple[str, str]:
    """(template text, where it came from): engine prompt > `common` prompt (Skill-Runner's
    prompt for every engine, which the Zotero plugin's skills use) > prompt.template file >
    default."""
    entry = pkg.loaded_manifest.entrypoint
    if engine and engine in entry.prompts:
        return entry.prompts[engine], f"entrypoint.prompts.{engine}"
    if COMMON_PROMPT in entry.prompts:
        return entry.prompts[COMMON_PROMPT], f"entrypoint.prompts.{COMMON_PROMPT}"
    if entry.prompt_template:
        path = (pkg.root / entry.prompt_template).resolve()
        if pkg.root.resolve() not in path.parents or not path.is_file():
            raise PromptError(f"prompt template not found in the skill: {entry.prompt_template}")
        try:
            return read_text(path, entry.prompt_template), entry.prompt_template
        except SkillFileError as exc:  # too large, not UTF-8
            raise PromptError(str(exc)) from exc
    return DEFAULT_TEMPLATE, "default"


def template_variables(pkg: SkillPackage, ctx: PromptContext) -> dict[str, Any]:
    """What a prompt template (and SKILL.md) sees: input, parameter, skill, engine, the
    output contract and where the result and artifacts go."""
    return {
        "input": _Fields(ctx.input, _declared(pkg.input_schema)),
        "parameter": _Fields(ctx.parameter, _declared(pkg.parameter_schema)),
        "engine": ctx.engine,
        "skill": {
            "id": pkg.id,
            "name": pkg.name,
            "description": pkg.description,
            "body": pkg.body,
            "version": pkg.version,
        },
        "skill_md": pkg.body,
        "output_contract": output_contract(pkg, ctx.run_dir, ctx.execution_mode),
        "result_file": result_file(pkg, ctx.run_dir),
        "artifacts_dir": str(ctx.run_dir / "artifacts"),
    }


class _Fields(dict):
    """A run's input or parameter values for a template: a field the skill's schema declares
    but the request left out reads as empty (as Skill-Runner renders it: an optional field);
    any other missing name is still an error (StrictUndefined), so a misspelling shows. With
    no schema declaring fields (a skill without a parameter schema takes any object) any
    missing name reads as empty: there is no list to check it against."""

    def __init__(self, values: dict[str, Any], declared: frozenset[str] | None) -> None:
        super().__init__(values)
        self._declared = declared

    def __missing__(self, key: str) -> str:
        if self._declared is None or key in self._declared:
            return ""
        raise KeyError(key)


# named as a plain dict in Jinja2's errors ("'dict object' has no attribute 'x'"), as before
_Fields.__name__, _Fields.__module__ = "dict", "builtins"


def _declared(schema: dict[str, Any]) -> frozenset[str] | None:
    """The field names `schema` declares; None when it declares none (any object)."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    return frozenset(properties) if isinstance(properties, dict) and properties else None


def render_prompt(pkg: SkillPackage, ctx: PromptContext) -> str:
    """Render the prompt; custom templates get the output contract appended when they omit it."""
    template, source = select_template(pkg, ctx.engine)
    variables = template_variables(pkg, ctx)
    text = _render(template, variables, source)
    if source != "default" and "output_contract" not in template:
        text = text.rstrip() + "\n" + variables["output_contract"]
    return text


def patch_skill_md(skill_dir: Path, pkg: SkillPackage, ctx: PromptContext) -> None:
    """Render the run's copy of SKILL.md (its body is a Jinja2 template with the prompt's
    variables, e.g. `{{ input.text }}`) and append the output contract, once. The file is
    replaced, never written in place: a snapshot's files are links to the service's shared
    read-only copy of the skill version (runner_core.skill_copy)."""
    md = skill_dir / "SKILL.md"
    if not md.is_file():  # a skill.json llm skill: the prompt carries the contract
        return
    text = md.read_text(encoding="utf-8")
    if PATCH_MARKER in text:  # done already: rendering twice would render the inputs' text
        return
    variables = template_variables(pkg, ctx)
    head, body = split_frontmatter(text)
    if any(mark in body for mark in ("{{", "{%", "{#")):
        try:
            body = bounded_render(_compiled(body), variables)
        except TemplateError as exc:
            raise SkillMdError(f"SKILL.md does not render: {_describe(exc)}") from exc
    patched = (head + body).rstrip() + f"\n\n{PATCH_MARKER}\n{variables['output_contract']}"
    write_file(md, patched.encode("utf-8"))  # a new file renamed over the link


def split_frontmatter(text: str) -> tuple[str, str]:
    """(frontmatter with its `---` lines, body); the frontmatter is metadata the CLI reads to
    discover the skill, so it is never rendered."""
    match = _FRONTMATTER.match(text)
    return (match.group(0), text[match.end() :]) if match else ("", text)


def _render(template: str, variables: dict[str, Any], source: str) -> str:
    try:
        return bounded_render(_compiled(template), variables)
    except TemplateError as exc:
        raise PromptError(f"prompt template {source} does not render: {_describe(exc)}") from exc


def _describe(exc: TemplateError) -> str:
    """The error, with its line when Jinja2 knows it (a syntax error)."""
    line = getattr(exc, "lineno", None)
    return f"{exc} (line {line})" if line else str(exc)


@lru_cache(maxsize=256)
def _compiled(template: str) -> Template:
    """Compiling a template costs far more than rendering it; skills reuse theirs."""
    return _env.from_string(template)
