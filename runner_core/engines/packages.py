"""Which npm package ships each engine's CLI (deploy/engines/package.json pins them).

The matrix command (tests/engines/matrix.py) installs these side by side and POST
/v1/engines/{engine}/upgrade installs one into the service's engines folder. Kilo's package is
its platform binary, which npm does not link into `.bin`: `linked_binary` says where it is.
"""

from __future__ import annotations

ENGINE_PACKAGES: dict[str, str] = {
    "codex": "@openai/codex",
    "gemini": "@google/gemini-cli",
    "opencode": "opencode-ai",
    "kilo": "@kilocode/cli-linux-x64",
    "claude": "@anthropic-ai/claude-code",
    "qwen": "@qwen-code/qwen-code",
}
# engine -> its binary inside its package, linked into node_modules/.bin by hand
UNLINKED_BINARIES: dict[str, str] = {"kilo": "bin/kilo"}


def package_of(engine: str) -> str | None:
    """The npm package of `engine`'s CLI (None: it has none, e.g. a retired engine)."""
    return ENGINE_PACKAGES.get(engine)
