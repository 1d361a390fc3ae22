"""Read the Dockerfile and deploy/compose.yaml the way the tools that run them do, for the tests
that check them without a container engine (tests/component/test_deploy_files.py) and the test that
serves from the image's file set (tests/integration/test_image_layout.py)."""

from __future__ import annotations

import fnmatch
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from runner_core.settings import REPO_ROOT

DOCKERFILE = REPO_ROOT / "Dockerfile"
DOCKERIGNORE = REPO_ROOT / ".dockerignore"
COMPOSE = REPO_ROOT / "deploy" / "compose.yaml"


@dataclass(frozen=True)
class Instruction:
    stage: str  # the current FROM's `AS` name ("" for an unnamed stage)
    keyword: str  # upper case: FROM, COPY, RUN, ...
    args: str  # the rest, continuation lines joined


def instructions(path: Path = DOCKERFILE) -> list[Instruction]:
    """The Dockerfile's instructions in order, comments dropped, `\\` continuations joined."""
    text = re.sub(
        r"\\\n",
        " ",
        "\n".join(
            line for line in path.read_text().splitlines() if not line.lstrip().startswith("#")
        ),
    )
    out, stage = [], ""
    for line in text.splitlines():
        if not line.strip():
            continue
        keyword, _, args = line.strip().partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            words = args.split()
            stage = words[2] if len(words) >= 3 and words[1].upper() == "AS" else ""
        out.append(Instruction(stage, keyword, args.strip()))
    return out


@dataclass(frozen=True)
class Copy:
    sources: list[str]
    dest: str
    from_stage: str | None  # COPY --from=STAGE, else None (the build context)


def copies(items: list[Instruction] | None = None) -> list[tuple[str, Copy]]:
    """(stage, COPY) for every COPY instruction."""
    out = []
    for item in items if items is not None else instructions():
        if item.keyword != "COPY":
            continue
        words = shlex.split(item.args)
        flags = {w.split("=", 1)[0]: w.partition("=")[2] for w in words if w.startswith("--")}
        paths = [w for w in words if not w.startswith("--")]
        out.append((item.stage, Copy(paths[:-1], paths[-1], flags.get("--from"))))
    return out


def context_files() -> list[str]:
    """Repository paths the image takes from the build context (COPY without --from)."""
    return [src for _, copy in copies() if copy.from_stage is None for src in copy.sources]


def ignored(path: str) -> bool:
    """Whether .dockerignore keeps `path` out of the build context (its patterns, simplified
    to what this repository's file uses: names, globs and `**/`)."""
    path = path.rstrip("/")
    for pattern in DOCKERIGNORE.read_text().splitlines():
        pattern = pattern.strip()
        if not pattern or pattern.startswith("#"):
            continue
        bare = pattern.removeprefix("**/")
        parts = Path(path).parts
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        if any(fnmatch.fnmatch(p, pattern) for p in prefixes):
            return True
        if pattern.startswith("**/") and any(fnmatch.fnmatch(part, bare) for part in parts):
            return True
    return False


def interpolate(value: Any, env: dict[str, str]) -> Any:
    """Compose's `${VAR}` / `${VAR:-default}` in every string of a loaded file."""
    if isinstance(value, str):
        return re.sub(
            r"\$\{(\w+)(?::-([^}]*))?\}",
            lambda m: env.get(m.group(1)) or (m.group(2) or ""),
            value,
        )
    if isinstance(value, dict):
        return {k: interpolate(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, env) for v in value]
    return value


def compose_config(env: dict[str, str] | None = None) -> dict[str, Any]:
    """deploy/compose.yaml with its anchors merged and its variables interpolated."""
    return interpolate(yaml.safe_load(COMPOSE.read_text()), env or {})


def service_command(service: dict[str, Any]) -> list[str]:
    command = service.get("command", [])
    return shlex.split(command) if isinstance(command, str) else list(command)
