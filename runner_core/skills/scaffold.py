"""`skill-runner new NAME --kind prompt|script|skill.json`: a skill directory that passes
`skill-runner validate` and its own `skill-runner test` as written, to edit from there."""

from __future__ import annotations

import json
import re
from pathlib import Path

KINDS = ("prompt", "script", "skill.json")
_AGENT_NAME = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")  # Agent Skills names
_OPENEVO_NAME = re.compile(r"[a-z][a-z0-9]*(_[a-z0-9]+)*")  # skill.json names: snake_case

INPUT = {
    "type": "object",
    "properties": {"text": {"type": "string", "x-input-source": "inline"}},
    "required": ["text"],
    "additionalProperties": False,
}
PARAMETER = {"type": "object", "properties": {}, "additionalProperties": False}
OUTPUT = {
    "type": "object",
    "properties": {"summary": {"type": "string"}, "words": {"type": "integer", "minimum": 0}},
    "required": ["summary", "words"],
    "additionalProperties": False,
}
SKILL_MD = """---
name: {name}
description: "Say in one sentence what {name} does and when to use it."
---

# {name}

## Inputs
- `input.text` (inline, required): the text to work on.

## Steps
1. Read `input.text`.
2. Count its words and write a one-sentence summary.

## Output
JSON matching `assets/output.schema.json`: `{{"summary": "...", "words": n}}`.
"""
SCRIPT = '''"""{name}: reads the run's input, writes the result file (see docs/skills.md, Script skills)."""

import json
import os
from pathlib import Path

run_input = json.loads(Path(os.environ["SKILL_RUNNER_INPUT_FILE"]).read_text())
text = run_input["input"]["text"]
result = {{"summary": text.strip().split(".")[0][:200], "words": len(text.split())}}
Path(os.environ["SKILL_RUNNER_RESULT_FILE"]).write_text(json.dumps(result))
'''
CODE = '''"""{name}: a skill.json code skill (see docs/skills.md, skill.json skills)."""


def execute(input, ctx):
    text = input["text"]
    ctx.log("summarizing", len(text), "characters")
    return {{"summary": text.strip().split(".")[0][:200], "words": len(text.split())}}
'''


TEST_TEXT = "Skills are folders. They run anywhere."
TEST_DATA = {"summary": "Skills are folders", "words": 6}


def _test_file(kind: str) -> str:
    """tests/skill-test.json: one case `skill-runner test` plays as written; a prompt skill's
    case scripts the model's answer (docs/skills.md, Start, check, run)."""
    case: dict[str, object] = {
        "name": "a summary and the word count",
        "input": {"text": TEST_TEXT},
        "expect": {"status": "succeeded", "data": TEST_DATA},
    }
    if kind == "prompt":
        case["engine"] = "codex"
        case["model"] = {"tool": False, "final_text": json.dumps(TEST_DATA)}
    return _json({"cases": [case]})


class ScaffoldError(ValueError):
    """The name or the place cannot take a new skill; the message says why."""


def new_skill(parent: Path, name: str, kind: str) -> Path:
    """Write a new skill `name` of `kind` under `parent`; its directory."""
    if kind not in KINDS:
        raise ScaffoldError(f"--kind must be one of {', '.join(KINDS)}")
    pattern = _OPENEVO_NAME if kind == "skill.json" else _AGENT_NAME
    if not pattern.fullmatch(name) or len(name) > 64:
        form = "snake_case (word_stats)" if kind == "skill.json" else "lower-case-with-hyphens"
        raise ScaffoldError(f"{name!r} is not a skill name for --kind {kind}: use {form}")
    root = parent / name
    if root.exists():
        raise ScaffoldError(f"{root} already exists")
    files = _openevo(name) if kind == "skill.json" else _agent_skill(name, kind)
    files["tests/skill-test.json"] = _test_file(kind)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def _json(value: object) -> str:
    return json.dumps(value, indent=2) + "\n"


def _agent_skill(name: str, kind: str) -> dict[str, str]:
    entrypoint: dict[str, object] = {"type": "prompt"}
    files = {"SKILL.md": SKILL_MD.format(name=name)}
    if kind == "script":
        entrypoint = {"type": "script", "script": {"command": "python scripts/run.py"}}
        files["scripts/run.py"] = SCRIPT.format(name=name)
    runner = {
        "id": name,
        "version": "0.1.0",
        "execution_modes": ["auto"],
        "entrypoint": entrypoint,
        "schemas": {
            "input": "assets/input.schema.json",
            "parameter": "assets/parameter.schema.json",
            "output": "assets/output.schema.json",
        },
        "automation": {"timeout_sec": 300, "network": "off", "fs_scope": "workspace_only"},
    }
    return {
        **files,
        "assets/runner.json": _json(runner),
        "assets/input.schema.json": _json(INPUT),
        "assets/parameter.schema.json": _json(PARAMETER),
        "assets/output.schema.json": _json(OUTPUT),
    }


def _openevo(name: str) -> dict[str, str]:
    spec = {
        "name": name,
        "description": f"Say in one sentence what {name} does",
        "category": "general",
        "input": {
            "type": "object",
            "properties": {"text": {"type": "string", "description": "the text to work on"}},
            "required": ["text"],
        },
        "output": {
            "type": "object",
            "properties": {"summary": {"type": "string"}, "words": {"type": "number"}},
            "required": ["summary", "words"],
        },
        "mode": "code",
        "version": "0.1.0",
    }
    return {"skill.json": _json(spec), "index.py": CODE.format(name=name)}
