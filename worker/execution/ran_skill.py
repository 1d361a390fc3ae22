"""What a claimed run actually runs: the skill installed when it starts, which an install
after the job was created may have replaced. Its version and the cache key of its files are
recorded on the run, so its result is never served for a key of other files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from runner_core.run_key import key_for
from runner_core.runtime_options import RuntimeOptions
from runner_core.settings import Settings
from runner_core.skills import SkillPackage
from runner_core.store.models import Run


def ran_key(settings: Settings, run: Run, pkg: SkillPackage) -> str | None:
    """The cache key of `run` with the installed skill `pkg` it runs (its root the installed
    folder, as the API's key takes it); the run's own key when it has none or brought its
    own package (a one-off run's cannot change)."""
    if run.cache_key is None or run.kind != "job":
        return run.cache_key
    options = RuntimeOptions.from_dict(run.runtime_options)
    reused = (run.runtime_options or {}).get("workspace")
    # a composite's engine is its llm steps', kept in its request (the API keyed it so)
    payload = getattr(run, "request_payload", None) or {}
    return key_for(
        pkg,
        run.engine or payload.get("engine"),
        run.model,
        run.parameter or {},
        run.input or {},
        upload_hashes(settings.requests_dir / run.request_id / "input_manifest.json"),
        options,
        reused.get("cache_token") if isinstance(reused, dict) else None,
        settings.skills_dir,
    )


def upload_hashes(manifest: Path) -> dict[str, str]:
    """{path: sha256} of the uploaded files, as input_manifest.json lists them ({} if none)."""
    try:
        files: Any = json.loads(manifest.read_text(encoding="utf-8")).get("files") or []
    except FileNotFoundError:
        return {}
    return {f["path"]: f["sha256"] for f in files}
