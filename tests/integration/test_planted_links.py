"""A run's processes may plant symlinks where the worker later writes its records (result/,
raw/, manifest.json, events.jsonl): the worker must write in the run, never through them."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

PLANTER = textwrap.dedent(
    """
    import json, os, shutil, sys
    from pathlib import Path
    run = Path(os.environ["SKILL_RUNNER_RUN_DIR"])
    outside = Path(json.loads(Path(os.environ["SKILL_RUNNER_INPUT_FILE"]).read_text())
                   ["input"]["outside"])
    os.symlink(outside / "validation.txt", run / "result/validation.json")
    os.symlink(outside / "result.txt", run / "result/result.json.tmp")
    os.symlink(outside / "manifest.txt", run / "manifest.json.tmp")
    (run / "events.jsonl").unlink()
    os.symlink(outside / "events.txt", run / "events.jsonl")
    shutil.rmtree(run / "raw", ignore_errors=True)
    os.symlink(outside / "raw", run / "raw")
    print(json.dumps({"ok": True}))
    """
)


@pytest.fixture(scope="module")
def backend():
    return "sqlite"  # what the worker writes where does not depend on the database


def write_skill(skills: Path, skill_id: str, script: str) -> None:
    """A script skill `skill_id` running `script`, an inline `outside` in, `{ok}` out."""
    root = skills / skill_id
    (root / "assets").mkdir(parents=True)
    (root / "scripts").mkdir()
    (root / "SKILL.md").write_text(
        f"---\nname: {skill_id}\ndescription: a test of runner paths\n---\nRun it.\n"
    )
    (root / "assets/runner.json").write_text(
        json.dumps(
            {
                "id": skill_id,
                "version": "1.0.0",
                "execution_modes": ["auto"],
                "entrypoint": {"type": "script", "script": {"command": "python scripts/run.py"}},
                "schemas": {
                    "input": "assets/input.schema.json",
                    "parameter": "assets/parameter.schema.json",
                    "output": "assets/output.schema.json",
                },
            }
        )
    )
    inline = {"type": "string", "x-input-source": "inline"}
    schemas = {
        "input": {"type": "object", "properties": {"outside": inline}, "required": ["outside"]},
        "parameter": {"type": "object", "properties": {}},
        "output": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
    }
    for name, schema in schemas.items():
        (root / f"assets/{name}.schema.json").write_text(json.dumps(schema))
    (root / "scripts/run.py").write_text(script)


def test_links_planted_at_runner_paths_are_not_written_through(module_stack, tmp_path):
    stack = module_stack
    write_skill(stack.settings.skills_dir, "link-planter", PLANTER)
    outside = tmp_path / "outside"
    (outside / "raw").mkdir(parents=True)
    victims = {name: outside / name for name in ("validation.txt", "result.txt", "manifest.txt")}
    for victim in victims.values():
        victim.write_text("untouched")
    rid = stack.client.post(
        "/v1/jobs", json={"skill_id": "link-planter", "input": {"outside": str(outside)}}
    ).json["request_id"]
    status = stack.wait(rid)
    assert status["status"] == "succeeded", status["error"]
    assert {n: v.read_text() for n, v in victims.items()} == dict.fromkeys(victims, "untouched")
    assert not (outside / "events.txt").exists() and list((outside / "raw").iterdir()) == []
    run_dir = stack.settings.runs_dir / status["run_id"]
    for record in ("result/validation.json", "result/result.json", "manifest.json", "raw"):
        assert not (run_dir / record).is_symlink(), record
    result = stack.client.get(f"/v1/jobs/{rid}/result").json["result"]
    assert result["data"] == {"ok": True}
    assert json.loads((run_dir / "result/validation.json").read_text())["ok"] is True


def test_a_folder_made_at_the_result_files_name_does_not_fail_the_run(module_stack):
    """A skill that made result/result.json a folder (and printed its result) still gets its
    result document written there, not INTERNAL_ERROR."""
    stack = module_stack
    code = 'import os; os.mkdir(os.environ["SKILL_RUNNER_RESULT_FILE"]); print(\'{"ok": true}\')'
    write_skill(stack.settings.skills_dir, "result-folder", code)
    rid = stack.client.post(
        "/v1/jobs", json={"skill_id": "result-folder", "input": {"outside": ""}}
    ).json["request_id"]
    status = stack.wait(rid)
    assert status["status"] == "succeeded", status["error"]
    assert stack.client.get(f"/v1/jobs/{rid}/result").json["result"]["data"] == {"ok": True}


def test_a_skipped_artifact_link_is_a_warning_naming_its_path(module_stack):
    """The warning's details say which link (its code and message are the warning's own)."""
    stack = module_stack
    code = (
        "import os; os.symlink('/etc/hostname', os.environ['SKILL_RUNNER_ARTIFACTS_DIR'] + "
        "'/escape'); print('{\"ok\": true}')"
    )
    write_skill(stack.settings.skills_dir, "artifact-link", code)
    rid = stack.client.post(
        "/v1/jobs", json={"skill_id": "artifact-link", "input": {"outside": ""}}
    ).json["request_id"]
    assert stack.wait(rid)["status"] == "succeeded"
    warnings = stack.client.get(f"/v1/jobs/{rid}/result").json["result"]["validation_warnings"]
    [escape] = [w for w in warnings if w["code"] == "ARTIFACT_SYMLINK_ESCAPE"]
    assert escape["details"] == {"path": "artifacts/escape"}


READ_PLANTER = textwrap.dedent(
    """
    import json, os, shutil, sys
    from pathlib import Path
    run = Path(os.environ["SKILL_RUNNER_RUN_DIR"])
    outside = Path(json.loads(Path(os.environ["SKILL_RUNNER_INPUT_FILE"]).read_text())
                   ["input"]["outside"])
    for name in ("stdout.txt", "stderr.txt"):
        (run / "logs" / name).unlink()
        os.symlink(outside / "key.txt", run / "logs" / name)
    shutil.rmtree(run / "bundle", ignore_errors=True)
    os.symlink(outside, run / "bundle")
    os.symlink("../.home", run / "artifacts/home")
    os.symlink("../opencode.json", run / "artifacts/config.json")
    print(json.dumps({"ok": True}))
    """
)


def test_links_planted_where_the_api_reads_lead_nowhere(module_stack, tmp_path):
    """Logs, the stored bundle and artifacts: a run's links to a file of the service (or to
    its own engine home) are not read through by the API."""
    stack = module_stack
    write_skill(stack.settings.skills_dir, "read-planter", READ_PLANTER)
    outside = tmp_path / "keys"
    outside.mkdir()
    secret = "the-service-key-0123456789"
    for name in ("key.txt", "run_bundle.zip", "run_bundle_debug.zip"):
        (outside / name).write_text(secret)
    rid = stack.client.post(
        "/v1/jobs", json={"skill_id": "read-planter", "input": {"outside": str(outside)}}
    ).json["request_id"]
    status = stack.wait(rid)
    # its printed output went to the log it unlinked: the worker reads no output through the
    # link in its place (that would have made the key the run's result)
    assert status["status"] == "failed", status
    assert status["error"]["code"] == "OUTPUT_VALIDATION_FAILED"
    assert secret not in json.dumps(status)
    paths = ("result", "logs", "logs/range?stream=stdout", "logs/range?stream=stderr")
    for path in (*paths, "bundle", "bundle/debug", "artifacts"):
        resp = stack.client.get(f"/v1/jobs/{rid}/{path}")
        assert resp.status_code == 200, (path, resp.status_code)
        assert secret.encode() not in resp.get_data(), path
    assert stack.client.get(f"/v1/jobs/{rid}/artifacts/config.json").status_code in (400, 404)
    assert (outside / "run_bundle.zip").read_text() == secret
