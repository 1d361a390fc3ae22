"""The result cache: a request whose key matches a succeeded run is bound to it
without touching a worker. Failed runs are never cached; `runtime_options.no_cache` opts out."""

from __future__ import annotations

import hashlib
from typing import Any

from sqlalchemy import Connection, Row, bindparam, select

from api import context
from runner_core.cache import cache_key, skill_fingerprint
from runner_core.engines.config import EngineConfigError, load_engine_config
from runner_core.runtime_options import RuntimeOptions
from runner_core.skills import SkillPackage
from runner_core.skills.memo import memo_signature, tree_signature
from runner_core.skills.registry import SkillRegistry
from runner_core.statuses import RunStatus
from runner_core.store.models import Run


def cache_usable(options: RuntimeOptions) -> bool:
    """Interactive runs and requests that opt out are never served from the cache."""
    return not options.no_cache and options.execution_mode == "auto"


def key_for(
    pkg: SkillPackage,
    engine: str | None,
    model: str | None,
    parameter: dict[str, Any],
    inline: dict[str, Any],
    upload_hashes: dict[str, str],
    options: RuntimeOptions,
    workspace: str | None = None,
) -> str:
    """Hash of the skill's files, engine (+ its merged config), model, values and uploads;
    `workspace`: the token of the earlier run whose workspace (and output) the run reuses."""
    engine_config: dict[str, Any] = {"debug": options.debug}
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
        fingerprint=with_callees(pkg),
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


def with_callees(pkg: SkillPackage) -> str:
    """The fingerprint of a skill and, for a composite, of every skill it calls (transitively):
    a composite's result changes when a skill it calls is updated."""
    spec = pkg.openevo
    if spec is None or not spec.callees():
        return fingerprint(pkg)
    registry = SkillRegistry(context.settings().skills_dir)
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


_runs = Run.__table__
# built once: a cache miss (most requests) costs one small indexed query, a hit the same
# query returning the row, no ORM load
_NEWEST_SUCCEEDED = (
    select(_runs)
    .where(
        _runs.c.cache_key == bindparam("key_"),
        _runs.c.status == RunStatus.SUCCEEDED,
        _runs.c.owner.is_not_distinct_from(bindparam("owner_", type_=_runs.c.owner.type)),
    )
    .order_by(_runs.c.finished_at.desc())
    .limit(1)
)


def find_cached(conn: Connection, key: str, owner: str | None = None) -> Row | None:
    """The newest succeeded run with this key of the same owner (token name), if any (its
    row): a cache hit never hands one client's run, logs and files to another."""
    return conn.execute(_NEWEST_SUCCEEDED, {"key_": key, "owner_": owner}).first()
