"""The cache key of a run from its skill package and its request's values: computed by the API
when a job is created (or its upload comes) and again by the worker from the skill it actually
runs, so a result is cached under the key of the files that produced it."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from runner_core.cache import cache_key, skill_fingerprint
from runner_core.engines.config import EngineConfigError, load_engine_config
from runner_core.runtime_options import RuntimeOptions
from runner_core.skills import SkillPackage
from runner_core.skills.memo import memo_signature, tree_signature
from runner_core.skills.registry import SkillRegistry


def key_for(
    pkg: SkillPackage,
    engine: str | None,
    model: str | None,
    parameter: dict[str, Any],
    inline: dict[str, Any],
    upload_hashes: dict[str, str],
    options: RuntimeOptions,
    workspace: str | None,
    skills_dir: Path,
) -> str:
    """Hash of the skill's files, engine (+ its merged config), model, values and uploads;
    `workspace`: the token of the earlier run whose workspace (and output) the run reuses;
    `skills_dir`: where a composite's callees are installed."""
    engine_config: dict[str, Any] = {"debug": options.debug}
    if options.is_interactive:  # its prompt asks, its output follows the user's answers
        engine_config["execution_mode"] = "interactive"  # (auto keys stay as they were)
    if engine and pkg.loaded_manifest.entrypoint.type != "script":
        try:
            config = load_engine_config(
                engine,
                skill_dir=pkg.root,
                user={"model": model, f"{engine}_config": options.engine_config(engine)},
            )
        except EngineConfigError:
            config = {}
        # Secrets must not shape the key; everything that changes behaviour must.
        engine_config["engine"] = {k: v for k, v in config.items() if k not in ("api_key", "env")}
    return cache_key(
        fingerprint=with_callees(pkg, skills_dir),
        engine=engine or "script",
        model=model,
        parameter=parameter,
        inline_input=inline,
        upload_hashes=upload_hashes,
        engine_config=engine_config,
        workspace=workspace,
    )


_fingerprints: dict[str, tuple[tuple, str]] = {}


def fingerprint(pkg: SkillPackage) -> str:
    """skill_fingerprint of the package's files, recomputed only when they changed. A package
    the skill memo handed out this request comes with its signature: no second tree walk."""
    root = str(pkg.root)
    signature = memo_signature(pkg) or tree_signature(pkg.root)
    hit = _fingerprints.get(root)
    if hit and hit[0] == signature:
        return hit[1]
    value = skill_fingerprint(pkg.root)
    if tree_signature(pkg.root) == signature:  # not edited while it was hashed
        if len(_fingerprints) > 512:
            _fingerprints.clear()
        _fingerprints[root] = (signature, value)
    return value


def with_callees(pkg: SkillPackage, skills_dir: Path) -> str:
    """The fingerprint of a skill and, for a composite, of every skill it calls (transitively):
    a composite's result changes when a skill it calls is updated."""
    spec = pkg.openevo
    if spec is None or not spec.callees():
        return fingerprint(pkg)
    registry = SkillRegistry(skills_dir)
    parts, seen, todo = [fingerprint(pkg)], {pkg.id}, list(spec.callees())
    while todo:
        name = todo.pop(0)
        if name in seen:
            continue
        seen.add(name)
        callee = registry.get(name)
        parts.append(f"{name}:{fingerprint(callee) if callee else 'missing'}")
        if callee is not None and callee.openevo is not None:
            todo += callee.openevo.callees()
    return hashlib.sha256("|".join(parts).encode("utf-8")).hexdigest()
