"""Skill packages for tests: a small script skill built in memory, zipped as an upload would be."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

from tests.helpers import upload_body, zip_bytes

RUN_PY = """\
import json, os, time
from pathlib import Path

ctx = json.loads(Path(os.environ["SKILL_RUNNER_INPUT_FILE"]).read_text())
if ctx["parameter"].get("wait_for_go"):
    go = Path(os.environ["SKILL_RUNNER_RUN_DIR"]) / "go"
    deadline = time.monotonic() + 60
    while not go.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
out = {"message": Path("assets/message.txt").read_text().strip(),
       "text": ctx["input"].get("text")}
notes = ctx["input"].get("notes")
if notes:
    out["notes"] = Path(notes).read_text().strip()
if ctx["parameter"].get("import_module"):
    module = __import__(ctx["parameter"]["import_module"])
    out["imported"] = getattr(module, "VALUE", module.__name__)
Path(os.environ["SKILL_RUNNER_RESULT_FILE"]).write_text(json.dumps(out))
"""


def echo_skill(
    skill_id: str = "pkg-echo",
    version: str = "1.0.0",
    message: str = "hello",
    *,
    prefix: str = "",
    file_input: bool = False,
    runner: dict | None = None,
    dependencies: list[str] | None = None,
) -> dict[str, str]:
    """The files of a script skill that returns `message` (read from its own assets)."""
    inputs = {"text": {"type": "string", "x-input-source": "inline"}}
    if file_input:
        inputs["notes"] = {"type": "string", "extensions": [".txt"]}
    manifest = {
        "id": skill_id,
        "version": version,
        "execution_modes": ["auto"],
        "entrypoint": {"type": "script", "script": {"command": "python scripts/run.py"}},
        "schemas": {
            "input": "assets/input.schema.json",
            "parameter": "assets/parameter.schema.json",
            "output": "assets/output.schema.json",
        },
        "automation": {"timeout_sec": 120},
    }
    if dependencies:
        manifest["runtime"] = {"language": "python", "dependencies": dependencies}
    manifest.update(runner or {})
    files = {
        "SKILL.md": f'---\nname: {skill_id}\ndescription: "Echo a message shipped in the '
        f'package. Used by the package tests."\n---\n\n# {skill_id}\n\nRun scripts/run.py.\n',
        "assets/runner.json": json.dumps(manifest, indent=2),
        "assets/input.schema.json": json.dumps(
            {"type": "object", "properties": inputs, "required": ["notes"] if file_input else []}
        ),
        "assets/parameter.schema.json": json.dumps(
            {
                "type": "object",
                "properties": {
                    "wait_for_go": {"type": "boolean", "default": False},
                    "import_module": {"type": "string"},
                },
            }
        ),
        "assets/output.schema.json": json.dumps(
            {
                "type": "object",
                "properties": {
                    "message": {"type": "string"},
                    "text": {"type": ["string", "null"]},
                    "notes": {"type": "string"},
                    "imported": {"type": "string"},
                },
                "required": ["message"],
            }
        ),
        "assets/message.txt": message,
        "scripts/run.py": RUN_PY,
    }
    return {prefix + name: content for name, content in files.items()}


def package_upload(files: dict[str, str], field: str = "package") -> dict:
    """Multipart `data=` for the Flask test client."""
    return upload_body(files, field, "skill.zip")


def build_wheel(dest: Path, name: str, version: str = "0.1.0", value: str = "from-wheel") -> Path:
    """A pure-Python wheel of one module `name` with `VALUE = value`, built without any tool."""
    dist = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": f'VALUE = "{value}"\n',
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{path},sha256={digest.decode()},{len(text.encode())}")
    files[f"{dist}/RECORD"] = "\n".join(record + [f"{dist}/RECORD,,"]) + "\n"
    dest.mkdir(parents=True, exist_ok=True)
    wheel = dest / f"{name}-{version}-py3-none-any.whl"
    wheel.write_bytes(zip_bytes(files))
    return wheel
