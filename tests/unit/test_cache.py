from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from runner_core.cache import cache_key, canonical_json, skill_fingerprint


@pytest.fixture
def skill_dir(tmp_path: Path) -> Path:
    root = tmp_path / "demo"
    (root / "assets").mkdir(parents=True)
    (root / "scripts").mkdir()
    (root / "SKILL.md").write_text("---\nname: demo\n---\nDo it.\n")
    runner = {
        "id": "demo",
        "schemas": {
            "input": "assets/input.schema.json",
            "parameter": "assets/parameter.schema.json",
            "output": "schemas/out.json",
        },
    }
    (root / "assets" / "runner.json").write_text(json.dumps(runner))
    (root / "assets" / "input.schema.json").write_text("{}")
    (root / "assets" / "parameter.schema.json").write_text('{"type": "object"}')
    (root / "schemas").mkdir()
    (root / "schemas" / "out.json").write_text('{"type": "object"}')
    (root / "assets" / "codex_config.toml").write_text("model = 'x'\n")
    (root / "assets" / "gemini_settings.json").write_text("{}")
    (root / "assets" / "template.txt").write_text("unrelated")
    return root


BASE: dict[str, Any] = {
    "fingerprint": "f" * 64,
    "engine": "codex",
    "model": "gpt-5@high",
    "parameter": {"divisor": 1, "opts": {"a": 1, "b": [1, 2]}},
    "inline_input": {"text": "hi"},
    "upload_hashes": {"input_file": "a" * 64},
    "engine_config": {"sandbox": "workspace-write"},
}


def test_fingerprint_is_stable_across_calls(skill_dir: Path) -> None:
    assert skill_fingerprint(skill_dir) == skill_fingerprint(skill_dir)


@pytest.mark.parametrize(
    "rel",
    [
        "SKILL.md",
        "assets/runner.json",
        "assets/input.schema.json",
        "schemas/out.json",
        "assets/codex_config.toml",
        "assets/gemini_settings.json",
    ],
)
def test_fingerprint_changes_when_a_tracked_file_changes(skill_dir: Path, rel: str) -> None:
    before = skill_fingerprint(skill_dir)
    with open(skill_dir / rel, "a") as fh:
        fh.write(" ")
    assert skill_fingerprint(skill_dir) != before


def test_fingerprint_changes_when_a_script_changes(skill_dir: Path) -> None:
    before = skill_fingerprint(skill_dir)
    (skill_dir / "scripts").mkdir(exist_ok=True)
    (skill_dir / "scripts" / "run.py").write_text("print(1)")
    assert skill_fingerprint(skill_dir) != before


def test_fingerprint_ignores_bytecode_caches(skill_dir: Path) -> None:
    before = skill_fingerprint(skill_dir)
    (skill_dir / "__pycache__").mkdir()
    (skill_dir / "__pycache__" / "x.pyc").write_bytes(b"\0")
    assert skill_fingerprint(skill_dir) == before


def test_fingerprint_includes_file_names(skill_dir: Path) -> None:
    before = skill_fingerprint(skill_dir)
    (skill_dir / "assets" / "codex_config.toml").rename(skill_dir / "assets" / "iflow_config.toml")
    assert skill_fingerprint(skill_dir) != before


def test_fingerprint_changes_when_a_tracked_file_appears(skill_dir: Path) -> None:
    before = skill_fingerprint(skill_dir)
    (skill_dir / "assets" / "iflow_settings.json").write_text("{}")
    assert skill_fingerprint(skill_dir) != before


def test_fingerprint_does_not_read_schemas_outside_the_skill(
    tmp_path: Path, skill_dir: Path
) -> None:
    outside = tmp_path / "outside.json"
    outside.write_text("{}")
    runner = json.loads((skill_dir / "assets" / "runner.json").read_text())
    runner["schemas"]["output"] = "../outside.json"
    (skill_dir / "assets" / "runner.json").write_text(json.dumps(runner))
    before = skill_fingerprint(skill_dir)
    outside.write_text('{"changed": true}')
    assert skill_fingerprint(skill_dir) == before


def test_fingerprint_tolerates_broken_runner_json(skill_dir: Path) -> None:
    (skill_dir / "assets" / "runner.json").write_text("{not json")
    assert len(skill_fingerprint(skill_dir)) == 64


def test_cache_key_is_independent_of_dict_order() -> None:
    shuffled = {
        "engine_config": {"sandbox": "workspace-write"},
        "upload_hashes": {"input_file": "a" * 64},
        "inline_input": {"text": "hi"},
        "parameter": {"opts": {"b": [1, 2], "a": 1}, "divisor": 1},
        "model": "gpt-5@high",
        "engine": "codex",
        "fingerprint": "f" * 64,
    }
    assert cache_key(**shuffled) == cache_key(**BASE)
    assert len(cache_key(**BASE)) == 64


@pytest.mark.parametrize(
    "field,value",
    [
        ("fingerprint", "e" * 64),
        ("engine", "gemini"),
        ("model", None),
        ("parameter", {"divisor": 2, "opts": {"a": 1, "b": [1, 2]}}),
        ("parameter", {"divisor": 1, "opts": {"a": 1, "b": [2, 1]}}),
        ("inline_input", {"text": "hi!"}),
        ("upload_hashes", {"input_file": "b" * 64}),
        ("upload_hashes", {"other_name": "a" * 64}),
        ("engine_config", None),
        ("engine_config", {"sandbox": "read-only"}),
    ],
)
def test_cache_key_changes_with_any_field(field: str, value: Any) -> None:
    assert cache_key(**{**BASE, field: value}) != cache_key(**BASE)


def test_cache_key_engine_config_defaults_to_none() -> None:
    without = {k: v for k, v in BASE.items() if k != "engine_config"}
    assert cache_key(**without) == cache_key(**{**BASE, "engine_config": None})


def test_canonical_json_refuses_nan() -> None:
    with pytest.raises(ValueError):
        canonical_json({"x": float("nan")})
