from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path

import pytest

from runner_core.bundles import bundle_members, bundle_path, stream_bundle


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    root = tmp_path / "run"
    files = {
        "input.json": '{"skill_id": "demo"}',
        "logs/prompt.txt": "prompt",
        "logs/stdout.txt": "out",
        "logs/stderr.txt": "err",
        "raw/engine_output.txt": "raw",
        "uploads/input_file": "2 3 5",
        "result/result.json": '{"status": "succeeded"}',
        "artifacts/primes.md": "# primes",
        "artifacts/sub/data.bin": "\x00\x01",
        "manifest.json": '{"artifacts": []}',
        ".gemini/skills/demo/SKILL.md": "skill",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


CONTENT = ["artifacts/primes.md", "artifacts/sub/data.bin", "manifest.json", "result/result.json"]


def names(zip_path: Path) -> list[str]:
    with zipfile.ZipFile(zip_path) as zf:
        return sorted(zf.namelist())


def build_bundle(run_dir: Path, debug: bool) -> Path:
    """Stream the bundle once, as the first download does (it stores it); its stored path."""
    for _chunk in stream_bundle(run_dir, debug):
        pass
    return bundle_path(run_dir, debug)


def test_normal_bundle_holds_result_artifacts_and_manifest(run_dir: Path) -> None:
    path = build_bundle(run_dir, debug=False)
    assert path == run_dir / "bundle" / "run_bundle.zip"
    assert names(path) == CONTENT
    with zipfile.ZipFile(path) as zf:
        assert zf.read("artifacts/primes.md") == b"# primes"
        assert zf.testzip() is None


def test_debug_bundle_holds_whole_run_dir_except_bundle(run_dir: Path) -> None:
    build_bundle(run_dir, debug=False)  # an earlier bundle must not end up inside the debug one
    path = build_bundle(run_dir, debug=True)
    assert path == run_dir / "bundle" / "run_bundle_debug.zip"
    members = names(path)
    assert {
        "logs/prompt.txt",
        "logs/stdout.txt",
        "logs/stderr.txt",
        "input.json",
        "raw/engine_output.txt",
        "uploads/input_file",
        ".gemini/skills/demo/SKILL.md",
    } <= set(members)
    assert set(CONTENT) <= set(members)
    assert not any(m.startswith("bundle/") for m in members)


def test_manifest_lists_each_file_with_size_and_sha256(run_dir: Path) -> None:
    build_bundle(run_dir, debug=False)
    body = json.loads((run_dir / "bundle" / "manifest.json").read_text())
    assert [f["path"] for f in body["files"]] == CONTENT
    for entry in body["files"]:
        data = (run_dir / entry["path"]).read_bytes()
        assert entry["size"] == len(data)
        assert entry["sha256"] == hashlib.sha256(data).hexdigest()


def test_debug_manifest_is_written_separately(run_dir: Path) -> None:
    build_bundle(run_dir, debug=True)
    body = json.loads((run_dir / "bundle" / "manifest_debug.json").read_text())
    assert "logs/stdout.txt" in [f["path"] for f in body["files"]]
    assert not (run_dir / "bundle" / "manifest.json").exists()


def test_stream_bundle_without_store_writes_nothing(run_dir: Path) -> None:
    data = b"".join(stream_bundle(run_dir, debug=False, store=False))
    assert not (run_dir / "bundle").exists()
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert sorted(zf.namelist()) == CONTENT


def test_streamed_bytes_are_stored_as_the_bundle_with_its_manifest(run_dir: Path) -> None:
    data = b"".join(stream_bundle(run_dir, debug=False))
    assert (run_dir / "bundle" / "run_bundle.zip").read_bytes() == data
    body = json.loads((run_dir / "bundle" / "manifest.json").read_text())
    assert [f["path"] for f in body["files"]] == CONTENT
    assert sorted(p.name for p in (run_dir / "bundle").iterdir()) == [
        "manifest.json",
        "run_bundle.zip",
    ]


def test_a_stream_cut_short_stores_nothing(run_dir: Path) -> None:
    (run_dir / "artifacts" / "big.bin").write_bytes(bytes(range(256)) * 40_000)
    stream = stream_bundle(run_dir, debug=False)
    next(stream)
    stream.close()  # the client went away
    assert list((run_dir / "bundle").iterdir()) == []


def test_symlinks_leaving_the_run_dir_are_not_followed(tmp_path: Path, run_dir: Path) -> None:
    (tmp_path / "secret.txt").write_text("secret")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "x.txt").write_text("x")
    (run_dir / "artifacts" / "leak.txt").symlink_to(tmp_path / "secret.txt")
    (run_dir / "artifacts" / "leakdir").symlink_to(tmp_path / "outside")
    (run_dir / "logs" / "leak.txt").symlink_to(tmp_path / "secret.txt")
    for debug in (False, True):
        members = [m.path for m in bundle_members(run_dir, debug)]
        assert not any("leak" in m for m in members)


def test_symlink_inside_run_dir_is_bundled_under_its_own_name(run_dir: Path) -> None:
    (run_dir / "artifacts" / "copy.md").symlink_to(run_dir / "artifacts" / "primes.md")
    with zipfile.ZipFile(build_bundle(run_dir, debug=False)) as zf:
        assert zf.read("artifacts/copy.md") == b"# primes"


def test_bundle_of_run_without_outputs_is_an_empty_zip(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "stderr.txt").write_text("boom")
    assert names(build_bundle(tmp_path, debug=False)) == []


@pytest.mark.parametrize("fails", ["copy", "manifest"])
def test_a_store_that_fails_still_sends_the_whole_zip_and_keeps_nothing(
    run_dir, monkeypatch, fails
):
    import errno

    from runner_core import bundles

    if fails == "copy":  # every write of the stored copy: ENOSPC
        monkeypatch.setattr(
            bundles, "_open_copy", lambda _tmp: open("/dev/full", "wb", buffering=0)
        )
    else:

        def no_space(*_args):
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(bundles, "_write_text", no_space)
    data = b"".join(stream_bundle(run_dir, debug=False))
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert zf.testzip() is None and sorted(zf.namelist()) == sorted(CONTENT)
    out = run_dir / "bundle"
    assert not out.exists() or sorted(p.name for p in out.iterdir()) == []  # no zip, no temp
    monkeypatch.undo()
    assert b"".join(stream_bundle(run_dir, debug=False)) and sorted(
        p.name for p in (run_dir / "bundle").iterdir()
    ) == ["manifest.json", "run_bundle.zip"]
