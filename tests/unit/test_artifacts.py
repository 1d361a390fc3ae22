from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import pytest

from runner_core.artifacts import (
    OTHER_WRITES_LIMIT,
    ArtifactSpec,
    artifact_fields,
    guess_mime,
    index_artifacts,
    other_writes,
    resolve_artifact_path,
    write_manifest,
)

OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "digest_path": {
            "type": "string",
            "x-type": "artifact",
            "x-role": "digest",
            "x-filename": "digest.md",
        },
        "primes.md": {"type": "string", "x-type": "artifact"},
        "metadata": {"type": "object"},
    },
    "required": ["digest_path", "metadata"],
}


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    root = tmp_path / "run"
    (root / "artifacts" / "sub").mkdir(parents=True)
    return root


def test_artifact_fields_registers_marked_properties_with_defaults() -> None:
    assert artifact_fields(OUTPUT_SCHEMA) == [
        ArtifactSpec(role="digest", pattern="digest.md", mime=None, required=True),
        ArtifactSpec(role="output", pattern="primes.md", mime=None, required=False),
    ]


def test_artifact_fields_of_schema_without_properties_is_empty() -> None:
    assert artifact_fields({"type": "object"}) == []


# OUTPUT_SCHEMA's artifact fields, each written as a local $ref (both spellings of the folder)
REF_OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "digest_path": {"$ref": "#/$defs/digest"},
        "primes.md": {"$ref": "#/definitions/artifact"},
        "metadata": {"type": "object"},
    },
    "$defs": {
        "digest": {
            "type": "string",
            "x-type": "artifact",
            "x-role": "digest",
            "x-filename": "digest.md",
        }
    },
    "definitions": {"artifact": {"type": "string", "x-type": "artifact"}},
    "required": ["digest_path", "metadata"],
}


def test_artifact_fields_written_as_refs_are_registered_like_inline_ones() -> None:
    assert artifact_fields(REF_OUTPUT_SCHEMA) == artifact_fields(OUTPUT_SCHEMA)


def test_an_artifact_field_written_as_a_ref_is_indexed_and_required(run_dir: Path) -> None:
    contract = artifact_fields(REF_OUTPUT_SCHEMA)
    assert [s.role for s in index_artifacts(run_dir, contract).missing_required] == ["digest"]
    (run_dir / "artifacts" / "digest.md").write_text("# digest\n")
    manifest = index_artifacts(run_dir, contract)
    [entry] = manifest.artifacts
    assert (entry.path, entry.role, entry.required) == ("artifacts/digest.md", "digest", True)
    assert manifest.missing_required == []


def test_index_lists_every_file_with_matching_sha256(run_dir: Path) -> None:
    (run_dir / "artifacts" / "digest.md").write_text("# digest\n")
    (run_dir / "artifacts" / "sub" / "data.bin").write_bytes(b"\x00\x01\x02")
    manifest = index_artifacts(run_dir, artifact_fields(OUTPUT_SCHEMA))
    by_path = {a.path: a for a in manifest.artifacts}
    assert sorted(by_path) == ["artifacts/digest.md", "artifacts/sub/data.bin"]
    for rel, entry in by_path.items():
        assert entry.sha256 == hashlib.sha256((run_dir / rel).read_bytes()).hexdigest()
        assert entry.size == (run_dir / rel).stat().st_size
    assert by_path["artifacts/digest.md"].role == "digest"
    assert by_path["artifacts/digest.md"].required is True
    assert by_path["artifacts/digest.md"].mime == "text/markdown"
    assert by_path["artifacts/sub/data.bin"].role == "output"
    assert by_path["artifacts/sub/data.bin"].filename == "data.bin"
    assert by_path["artifacts/sub/data.bin"].mime == "application/octet-stream"
    assert manifest.missing_required == []


def test_run_relative_pattern_from_runner_json_matches(run_dir: Path) -> None:
    (run_dir / "artifacts" / "notes.md").write_text("n")
    contract = [
        ArtifactSpec(
            role="notes_md", pattern="artifacts/notes.md", mime="text/x-notes", required=True
        )
    ]
    [entry] = index_artifacts(run_dir, contract).artifacts
    assert (entry.role, entry.mime, entry.required) == ("notes_md", "text/x-notes", True)


def test_an_x_filename_matches_its_file_in_either_unicode_form() -> None:
    nfc, nfd = "r\u00e9sum\u00e9.pdf", "re\u0301sume\u0301.pdf"
    assert ArtifactSpec(role="cv", pattern=nfc).matches(f"artifacts/{nfd}")
    assert ArtifactSpec(role="cv", pattern=nfd).matches(f"artifacts/{nfc}")


def test_missing_required_artifact_is_reported(run_dir: Path) -> None:
    manifest = index_artifacts(run_dir, artifact_fields(OUTPUT_SCHEMA))
    assert manifest.artifacts == []
    assert [s.role for s in manifest.missing_required] == ["digest"]
    assert manifest.to_dict()["missing_required"] == [
        {"role": "digest", "pattern": "digest.md", "mime": None, "required": True}
    ]


def test_index_without_artifacts_dir_is_empty(tmp_path: Path) -> None:
    assert index_artifacts(tmp_path, []).artifacts == []


def test_symlink_outside_run_dir_is_skipped_with_warning(tmp_path: Path, run_dir: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("secret")
    (run_dir / "artifacts" / "leak.txt").symlink_to(secret)
    (run_dir / "artifacts" / "leakdir").symlink_to(tmp_path)
    manifest = index_artifacts(run_dir, [])
    assert manifest.artifacts == []
    assert {w["path"] for w in manifest.warnings} == {"artifacts/leak.txt", "artifacts/leakdir"}
    assert all(w["code"] == "ARTIFACT_SYMLINK_ESCAPE" for w in manifest.warnings)


def test_a_dangling_symlink_is_skipped_with_a_warning(run_dir: Path) -> None:
    """A link that does not resolve is reported, not dropped silently: a required artifact
    written as one would fail ARTIFACT_MISSING with nothing saying why."""
    (run_dir / "artifacts" / "report.md").symlink_to(run_dir / "artifacts" / "gone.md")
    manifest = index_artifacts(run_dir, [ArtifactSpec("report", "report.md", required=True)])
    assert manifest.artifacts == [] and [s.pattern for s in manifest.missing_required] == [
        "report.md"
    ]
    assert [(w["code"], w["path"]) for w in manifest.warnings] == [
        ("ARTIFACT_SYMLINK_ESCAPE", "artifacts/report.md")
    ]


def test_an_artifacts_folder_replaced_by_a_link_is_not_followed_and_said(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "report.md").write_text("r")
    run = tmp_path / "run"
    run.mkdir()
    (run / "artifacts").symlink_to(elsewhere)
    manifest = index_artifacts(run, [ArtifactSpec("report", "report.md", required=True)])
    assert manifest.artifacts == [] and len(manifest.missing_required) == 1
    assert [(w["code"], w["path"]) for w in manifest.warnings] == [
        ("ARTIFACT_SYMLINK_DIR", "artifacts")
    ]


def test_symlink_inside_run_dir_is_indexed(run_dir: Path) -> None:
    (run_dir / "result").mkdir()
    (run_dir / "result" / "out.json").write_text("{}")
    (run_dir / "artifacts" / "out.json").symlink_to(run_dir / "result" / "out.json")
    [entry] = index_artifacts(run_dir, []).artifacts
    assert (entry.path, entry.mime, entry.size) == ("artifacts/out.json", "application/json", 2)


def test_write_manifest_writes_run_manifest_json(run_dir: Path) -> None:
    (run_dir / "artifacts" / "primes.md").write_text("2 3 5")
    manifest = index_artifacts(run_dir, artifact_fields(OUTPUT_SCHEMA))
    path = write_manifest(run_dir, manifest)
    assert path == run_dir / "manifest.json"
    body = json.loads(path.read_text())
    assert body["artifacts"][0]["path"] == "artifacts/primes.md"
    assert body["artifacts"][0]["path_rel"] == "artifacts/primes.md"  # the spec's name
    assert set(body["artifacts"][0]) == {
        "role",
        "path",
        "path_rel",
        "filename",
        "mime",
        "size",
        "sha256",
        "required",
    }
    assert body == manifest.to_dict()


def test_guess_mime_falls_back_to_octet_stream() -> None:
    assert guess_mime("a.md") == "text/markdown"
    assert guess_mime("a.JSON") == "application/json"
    assert guess_mime("noext") == "application/octet-stream"


def test_resolve_artifact_path_returns_file_inside_run_dir(run_dir: Path) -> None:
    (run_dir / "artifacts" / "a.md").write_text("x")
    assert (
        resolve_artifact_path(run_dir, "artifacts/a.md")
        == (run_dir / "artifacts" / "a.md").resolve()
    )


@pytest.mark.parametrize(
    "rel",
    [
        "../secret.txt",
        "artifacts/../../secret.txt",
        "/etc/passwd",
        "C:/x",
        "..\\secret.txt",
        "",
        ".",
        "a\x00b",
    ],
)
def test_resolve_artifact_path_refuses_traversal(run_dir: Path, rel: str) -> None:
    with pytest.raises(ValueError):
        resolve_artifact_path(run_dir, rel)


def test_resolve_artifact_path_refuses_symlink_escape(tmp_path: Path, run_dir: Path) -> None:
    (tmp_path / "secret.txt").write_text("secret")
    (run_dir / "artifacts" / "leak").symlink_to(tmp_path / "secret.txt")
    with pytest.raises(ValueError):
        resolve_artifact_path(run_dir, "artifacts/leak")


def test_writes_outside_the_outputs_are_listed_once_the_run_started(tmp_path):
    """seed 003 §4: a skill writes artifacts/ and result/; anything else it wrote is listed."""
    run = tmp_path
    for old in ("notes/before.txt", "uploads/input.txt", "logs/stdout.txt"):
        (run / old).parent.mkdir(parents=True, exist_ok=True)
        (run / old).write_text("x")
    os.utime(run / "notes" / "before.txt", (1, 1))  # e.g. a file of a reused workspace
    started = time.time() - 1
    for new in ("out/answer.json", "stray.txt", "artifacts/a.md", "result/result.json"):
        (run / new).parent.mkdir(parents=True, exist_ok=True)
        (run / new).write_text("abc")
    (run / ".codex-home").mkdir()
    (run / ".codex-home" / "session.jsonl").write_text("{}")
    (run / "link").symlink_to("/etc")
    listed, more = other_writes(run, started)
    assert [w["path"] for w in listed] == ["link", "out/answer.json", "stray.txt"]
    assert listed[1]["size"] == 3 and more is False


def test_other_writes_stop_at_the_limit(tmp_path):
    (tmp_path / "junk").mkdir()
    for i in range(OTHER_WRITES_LIMIT + 5):
        (tmp_path / "junk" / f"{i:04d}").write_text("")
    listed, more = other_writes(tmp_path, 0)
    assert len(listed) == OTHER_WRITES_LIMIT and more is True
