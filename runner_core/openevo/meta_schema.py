"""The meta-schema of skill.json (seed 004, section 8), plus openEvo's pipeline extensions."""

from __future__ import annotations

from typing import Any

DRAFT7 = "http://json-schema.org/draft-07/schema#"

STEP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["step", "skill", "input"],
    "properties": {
        "step": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_-]*$"},
        "skill": {"type": "string"},
        "input": {"type": "object"},
        "condition": {"type": "string"},
        # openEvo's extensions
        "depends": {"type": "array", "items": {"type": "string"}},
        "foreach": {"type": "string"},
        "maxConcurrency": {"type": "integer", "minimum": 1},
        "retry": {"type": "integer", "minimum": 0},
        "retryDelay": {"type": "number", "minimum": 0},
        "timeout": {"type": "number", "exclusiveMinimum": 0},
        "continueOnError": {"type": "boolean"},
    },
}

META_SCHEMA: dict[str, Any] = {
    "$schema": DRAFT7,
    "title": "OpenEvo Skill Definition",
    "type": "object",
    "required": ["name", "description", "category", "input", "output", "mode"],
    "properties": {
        "name": {
            "type": "string",
            "pattern": "^[a-z][a-z0-9_]*$",
            "maxLength": 128,
        },  # a job's skill_id
        "description": {"type": "string", "minLength": 1},
        "category": {"type": "string"},
        "input": {"$ref": DRAFT7},
        "output": {"$ref": DRAFT7},
        "mode": {"type": "string", "enum": ["code", "llm", "composite"]},
        "calls": {"type": "array", "items": {"type": "string"}, "default": []},
        "pipeline": {"type": "array", "items": STEP_SCHEMA},
        "outputMapping": {"type": "object"},
        # a semver (format checked by spec.py), as long as the database keeps
        "version": {"type": "string", "format": "semver", "maxLength": 64, "default": "1.0.0"},
        "tags": {"type": "array", "items": {"type": "string"}, "default": []},
        "author": {"type": "string"},
        "timeout": {"type": "number", "exclusiveMinimum": 0, "default": 30000},
        "retry": {"type": "integer", "minimum": 0, "default": 0},
    },
    "additionalProperties": False,
}
