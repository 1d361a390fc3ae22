"""Node commands for JavaScript and TypeScript code skills: `node` for index.js, the pinned tsx
runner (deploy/node-runners, installed by deploy/install-node-runners.sh) for index.ts."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

HARNESS_MJS = Path(__file__).with_name("harness.mjs")
REPO_ROOT = Path(__file__).resolve().parents[2]
RUNNERS_BIN = REPO_ROOT / ".node-runners" / "node_modules" / ".bin"


def tsx_binary() -> str:
    """SKILL_RUNNER_TSX, else the project's pinned tsx, else a tsx on PATH."""
    configured = os.environ.get("SKILL_RUNNER_TSX")
    if configured:
        return configured
    local = RUNNERS_BIN / "tsx"
    if local.is_file():
        return str(local)
    return shutil.which("tsx") or "tsx"


def node_command(code_file: str) -> list[str]:
    """argv running `code_file`'s execute through the harness."""
    runner = tsx_binary() if code_file.endswith(".ts") else (shutil.which("node") or "node")
    return [runner, str(HARNESS_MJS), code_file]
