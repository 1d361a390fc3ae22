"""Output fields of Skill-Runner's `x-type` `artifact-manifest` (a JSON file naming a dynamic set
of files) and `file` (an artifact field by another name), through a real worker."""

from __future__ import annotations

import io
import json
import textwrap
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def backend():
    return "sqlite"  # where the worker finds and puts files does not depend on the database


def write_skill(skills: Path, skill_id: str, output: dict, script: str) -> None:
    root = skills / skill_id
    (root / "assets").mkdir(parents=True)
    (root / "scripts").mkdir()
    (root / "SKILL.md").write_text(f"---\nname: {skill_id}\ndescription: manifests\n---\nRun.\n")
    runner = {
        "id": skill_id,
        "version": "1.0.0",
        "execution_modes": ["auto"],
        "entrypoint": {"type": "script", "script": {"command": "python scripts/run.py"}},
    }
    (root / "assets/runner.json").write_text(json.dumps(runner))
    (root / "assets/output.schema.json").write_text(json.dumps(output))
    (root / "scripts/run.py").write_text(textwrap.dedent(script))


MANIFEST_OUTPUT = {
    "type": "object",
    "properties": {
        "files": {"type": "string", "x-type": "artifact-manifest", "x-role": "listing"},
        "note": {"type": "string"},
    },
    "required": ["files"],
}
WRITER = """
    import json, os
    from pathlib import Path
    run = Path(os.environ["SKILL_RUNNER_RUN_DIR"])
    (run / "result/files").mkdir(parents=True)
    (run / "result/files/a.txt").write_text("in result")
    (run / "out").mkdir()
    (run / "out/b.txt").write_text("elsewhere in the run")
    (run / "artifacts/c.txt").write_text("in artifacts")
    listing = {
        "a": "result/files/a.txt",
        "b": str(run / "out/b.txt"),
        "c": str(run / "artifacts/c.txt"),
        "up": "../../etc/hostname",
        "gone": "out/missing.txt",
        "nested": {"x": "out/b.txt"},
    }
    (run / "result/files.json").write_text(json.dumps(listing))
    print(json.dumps({"files": str(run / "result/files.json"), "note": "done"}))
"""


def test_a_manifests_files_become_the_runs_artifacts(module_stack):
    stack = module_stack
    write_skill(stack.settings.skills_dir, "manifest-writer", MANIFEST_OUTPUT, WRITER)
    rid = stack.client.post("/v1/jobs", json={"skill_id": "manifest-writer", "input": {}}).json[
        "request_id"
    ]
    status = stack.wait(rid)
    assert status["status"] == "succeeded", status["error"]
    result = stack.client.get(f"/v1/jobs/{rid}/result").json["result"]
    assert result["data"] == {"files": "result/files.json", "note": "done"}  # made run-relative
    run_dir = stack.settings.runs_dir / status["run_id"]
    assert json.loads((run_dir / "result/files.json").read_text()) == {
        "a": "result/files/a.txt",
        "b": "artifacts/out/b.txt",  # copied where downloads and the bundle reach it
        "c": "artifacts/c.txt",
    }
    listed = stack.client.get(f"/v1/jobs/{rid}/artifacts").json["artifacts"]
    roles = {a["path"]: a["role"] for a in listed}
    assert roles == {
        "artifacts/c.txt": "c",
        "artifacts/out/b.txt": "b",
        "result/files/a.txt": "a",
        "result/files.json": "listing",
    }
    for entry in listed:
        assert stack.client.get(entry["url"]).status_code == 200, entry
    assert stack.client.get(f"/v1/jobs/{rid}/artifacts/result/files/a.txt").data == b"in result"
    bundle = zipfile.ZipFile(io.BytesIO(stack.client.get(f"/v1/jobs/{rid}/bundle").data))
    assert bundle.read("artifacts/out/b.txt") == b"elsewhere in the run"
    assert b'"artifacts/out/b.txt"' in bundle.read("result/files.json")
    warned = [w for w in result["validation_warnings"] if w["code"] == "ARTIFACT_MANIFEST_INVALID"]
    messages = " ".join(w["message"] for w in warned)
    assert len(warned) == 3 and all(k in messages for k in ("'up'", "'gone'", "'nested'"))


def test_a_required_manifest_that_is_not_there_fails_the_run(module_stack):
    stack = module_stack
    script = """
        import json
        print(json.dumps({"files": "result/never-written.json"}))
    """
    write_skill(stack.settings.skills_dir, "manifest-missing", MANIFEST_OUTPUT, script)
    rid = stack.client.post("/v1/jobs", json={"skill_id": "manifest-missing", "input": {}}).json[
        "request_id"
    ]
    status = stack.wait(rid)
    assert status["status"] == "failed"
    assert status["error"]["code"] == "ARTIFACT_MISSING"
    assert "files" in status["error"]["message"]


def test_a_manifest_planted_as_a_link_is_not_read(module_stack, tmp_path):
    """The run's manifest could name any file the worker can read through a link."""
    stack = module_stack
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"key": str(tmp_path / "key.txt")}))
    (tmp_path / "key.txt").write_text("secret")
    script = f"""
        import json, os
        from pathlib import Path
        run = Path(os.environ["SKILL_RUNNER_RUN_DIR"])
        os.symlink({str(secret)!r}, run / "result/files.json")
        os.symlink({str(tmp_path / "key.txt")!r}, run / "artifacts/key.txt")
        (run / "result/list.json").write_text(json.dumps({{"k": "artifacts/key.txt"}}))
        print(json.dumps({{"files": "result/files.json"}}))
    """
    write_skill(stack.settings.skills_dir, "manifest-link", MANIFEST_OUTPUT, script)
    rid = stack.client.post("/v1/jobs", json={"skill_id": "manifest-link", "input": {}}).json[
        "request_id"
    ]
    status = stack.wait(rid)
    assert status["status"] == "failed" and status["error"]["code"] == "ARTIFACT_MISSING"
    listed = stack.client.get(f"/v1/jobs/{rid}/artifacts").json["artifacts"]
    assert all("key" not in a["path"] for a in listed)


def test_an_x_type_file_field_is_an_artifact(module_stack):
    stack = module_stack
    output = {
        "type": "object",
        "properties": {"report": {"type": "string", "x-type": "file", "x-role": "report"}},
        "required": ["report"],
    }
    script = """
        import json, os
        from pathlib import Path
        Path(os.environ["SKILL_RUNNER_ARTIFACTS_DIR"], "report").write_text("r")
        print(json.dumps({"report": "artifacts/report"}))
    """
    write_skill(stack.settings.skills_dir, "file-field", output, script)
    rid = stack.client.post("/v1/jobs", json={"skill_id": "file-field", "input": {}}).json[
        "request_id"
    ]
    assert stack.wait(rid)["status"] == "succeeded"
    listed = stack.client.get(f"/v1/jobs/{rid}/artifacts").json["artifacts"]
    assert [(a["path"], a["role"], a["required"]) for a in listed] == [
        ("artifacts/report", "report", True)
    ]


def test_a_listed_file_is_never_copied_through_a_linked_artifacts_folder(module_stack, tmp_path):
    stack = module_stack
    outside = tmp_path / "outside"
    outside.mkdir()
    script = f"""
        import json, os, shutil
        from pathlib import Path
        run = Path(os.environ["SKILL_RUNNER_RUN_DIR"])
        shutil.rmtree(run / "artifacts")
        os.symlink({str(outside)!r}, run / "artifacts")
        (run / "out").mkdir()
        (run / "out/b.txt").write_text("b")
        (run / "result/files.json").write_text(json.dumps({{"b": "out/b.txt"}}))
        print(json.dumps({{"files": "result/files.json"}}))
    """
    write_skill(stack.settings.skills_dir, "manifest-artifacts-link", MANIFEST_OUTPUT, script)
    rid = stack.client.post(
        "/v1/jobs", json={"skill_id": "manifest-artifacts-link", "input": {}}
    ).json["request_id"]
    status = stack.wait(rid)
    assert status["status"] == "succeeded", status["error"]
    assert list(outside.iterdir()) == []
    run_dir = stack.settings.runs_dir / status["run_id"]
    assert (run_dir / "artifacts/out/b.txt").read_text() == "b"
    assert not (run_dir / "artifacts").is_symlink()
