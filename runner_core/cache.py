"""Cache keys for run results.

A finished run can be reused for a new request when the skill, the engine set-up and every
input are the same. The key is a sha256 over canonical JSON, so dict ordering never matters,
and the skill contributes a fingerprint of the files that shape its behaviour.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

_KEY_VERSION = 1  # bump when the key's inputs change so old entries stop matching
_CHUNK = 64 * 1024
_IGNORED_PARTS = {"__pycache__", ".git", ".DS_Store"}


def skill_fingerprint(skill_dir: Path) -> str:
    """sha256 over SKILL.md, assets/runner.json, schemas and engine config files, names included."""
    skill_dir = Path(skill_dir).resolve()
    digest = hashlib.sha256(f"skill-fingerprint-v{_KEY_VERSION}\0".encode())
    for rel in sorted(_fingerprint_files(skill_dir)):
        path = skill_dir / rel
        # Name and size frame each file so moving bytes between files changes the digest.
        digest.update(f"{rel}\0{path.stat().st_size}\0".encode())
        with open(path, "rb") as fh:
            while chunk := fh.read(_CHUNK):
                digest.update(chunk)
    return digest.hexdigest()


def cache_key(
    *,
    fingerprint: str,
    engine: str,
    model: str | None,
    parameter: dict[str, Any],
    inline_input: dict[str, Any],
    upload_hashes: dict[str, str],
    engine_config: dict[str, Any] | None = None,
    workspace: str | None = None,
) -> str:
    """sha256 of the canonical JSON of every input that can change a run's result;
    `workspace` (a reused workspace's token) only when there is one, so other keys stay."""
    payload = {
        "v": _KEY_VERSION,
        "fingerprint": fingerprint,
        "engine": engine,
        "model": model,
        "parameter": parameter,
        "inline_input": inline_input,
        "upload_hashes": upload_hashes,
        "engine_config": engine_config,
        **({"workspace": workspace} if workspace is not None else {}),
    }
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()


def canonical_json(value: Any) -> str:
    """Compact, key-sorted JSON; NaN and non-JSON types are refused rather than guessed."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def _fingerprint_files(skill_dir: Path) -> set[str]:
    """Skill-relative POSIX paths of every file that can change a run: SKILL.md, assets,
    scripts, templates, references (caches and VCS folders excluded), plus declared schemas."""
    candidates = [
        p
        for p in skill_dir.rglob("*")
        if not (set(p.relative_to(skill_dir).parts) & _IGNORED_PARTS)
    ]
    candidates.extend(
        skill_dir / rel for rel in _declared_schemas(skill_dir / "assets" / "runner.json")
    )
    found: set[str] = set()
    for path in candidates:
        if path.is_symlink() and not path.resolve().is_relative_to(skill_dir):
            continue  # a link out of the skill must not pull host files into the key
        real = path.resolve()
        if real.is_file() and real.is_relative_to(skill_dir):
            found.add(
                path.relative_to(skill_dir).as_posix()
                if not path.is_symlink()
                else real.relative_to(skill_dir).as_posix()
            )
    return found


def _declared_schemas(runner_json: Path) -> list[str]:
    """Schema paths from runner.json's "schemas" block; an unreadable manifest declares none."""
    try:
        schemas = json.loads(runner_json.read_text(encoding="utf-8")).get("schemas") or {}
    except (OSError, ValueError, AttributeError, RecursionError):
        return []
    if not isinstance(schemas, dict):
        return []
    return [p for p in schemas.values() if isinstance(p, str)]
