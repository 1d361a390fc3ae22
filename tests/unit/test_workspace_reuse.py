"""runner_core.workspace_reuse: what a run takes over from the run whose workspace it reuses,
the result namespaces, and the paths a file binding may name."""

from __future__ import annotations

import json
import os

import pytest

from runner_core.inputs import InputError, resolve_inputs
from runner_core.workspace_reuse import (
    ReuseError,
    copy_to_namespace,
    parse_reuse,
    reserve_namespace,
    result_json_path,
    safe_segment,
    source_file,
    take_over,
)


def write(root, rel, text="x"):
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_take_over_copies_the_workspace_but_not_the_runs_records(tmp_path):
    src, dest = tmp_path / "src", tmp_path / "dest"
    for rel in (
        "artifacts/a.md",
        "uploads/in.txt",
        "notes.txt",
        "result/result.json",
        "result/one.1/result.json",
        "logs/stdout.txt",
        "raw/engine_output.txt",
        "bundle/run_bundle.zip",
        "input.json",
        "resolved_input.json",
        "manifest.json",
        ".codex-home/auth.json",
        ".skill/one/SKILL.md",
        "artifacts/.hidden/x",
    ):
        write(src, rel)
    write(dest, "uploads/in.txt", "mine")  # the new run's own input stays
    assert take_over(src, dest) == 3  # uploads/in.txt was there
    taken = sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file())
    assert taken == ["artifacts/a.md", "notes.txt", "result/one.1/result.json", "uploads/in.txt"]
    assert (dest / "uploads/in.txt").read_text() == "mine"
    # its own copies: a write in place (no new file) leaves the earlier run's artifact as it was
    with open(dest / "artifacts/a.md", "r+") as fh:
        fh.write("y")
    assert (src / "artifacts/a.md").read_text() == "x"


def test_take_over_skips_what_is_no_regular_file(tmp_path):
    src, dest = tmp_path / "src", tmp_path / "dest"
    write(src, "artifacts/a.md")
    os.mkfifo(src / "artifacts/pipe")  # a copy would hang reading it
    os.symlink("/etc/hostname", src / "artifacts/link")
    os.mkfifo(src / "top-pipe")
    assert take_over(src, dest) == 1
    assert sorted(os.listdir(dest / "artifacts")) == ["a.md"] and not (dest / "top-pipe").exists()


def test_namespaces_count_up_per_skill_and_the_highest_is_the_runs_own(tmp_path):
    run = tmp_path / "run"
    write(run, "result/result.json", "{}")
    assert result_json_path(run, "pick/title") == run / "result/result.json"
    assert reserve_namespace(run / "result", "pick/title").name == "pick-title.1"
    write(run, "result/other.4/result.json")
    assert reserve_namespace(run / "result", "pick/title").name == "pick-title.2"
    copy_to_namespace(run, "pick/title", {"status": "succeeded"})
    path = result_json_path(run, "pick/title")
    assert path == run / "result/pick-title.2/result.json"
    assert json.loads(path.read_text()) == {"status": "succeeded"}
    assert safe_segment("--") == "skill"


@pytest.mark.parametrize(
    "rel, message",
    [
        ("../x", "inside the run"),
        ("/etc/passwd", "inside the run"),
        ("a//b", "inside the run"),
        (".codex/auth.json", "hidden"),
        ("artifacts/.env", "hidden"),
        ("logs/stderr.txt", "records"),
        ("artifacts/none.txt", "no such file"),
        ("artifacts", "no such file"),
    ],
)
def test_source_file_refuses_paths_out_of_the_workspace(tmp_path, rel, message):
    write(tmp_path, "logs/stderr.txt")
    with pytest.raises(ReuseError, match=message) as info:
        source_file(tmp_path, rel)
    assert info.value.status == 422


@pytest.mark.parametrize("target", ["../.codex-home/auth.json", "../opencode.json"])
def test_source_file_refuses_a_link_to_an_engine_homes_file(tmp_path, target):
    write(tmp_path, ".codex-home/auth.json")
    write(tmp_path, "opencode.json")
    (tmp_path / "artifacts").mkdir()
    os.symlink(target, tmp_path / "artifacts" / "key.txt")
    with pytest.raises(ReuseError, match="hidden") as info:
        source_file(tmp_path, "artifacts/key.txt")
    assert info.value.status == 422


def test_parse_reuse():
    assert parse_reuse({}) is None and parse_reuse({"workspace": {"mode": "new"}}) is None
    reuse = parse_reuse({"workspace": {"mode": "REUSE", "request_id": " r1 "}})
    assert reuse is not None and reuse.request_id == "r1" and reuse.bindings == ()
    binding = {"input_key": "k", "source_request_id": "r", "source_path": "a", "target_path": "t"}
    for bad in (
        {"mode": "new", "file_bindings": [binding]},
        {
            "mode": "reuse",
            "request_id": "r",
            "file_bindings": [binding, {**binding, "target_path": "u"}],
        },
        {
            "mode": "reuse",
            "request_id": "r",
            "file_bindings": [binding, {**binding, "input_key": "j"}],
        },
        {"mode": "reuse", "request_id": "r", "file_bindings": [{**binding, "source_path": " "}]},
    ):
        with pytest.raises(ReuseError):
            parse_reuse({"workspace": bad})


def test_a_bound_file_input_resolves_to_its_file_under_uploads(tmp_path):
    schema = {
        "type": "object",
        "properties": {"doc": {"type": "string", "x-input-source": "file"}},
        "required": ["doc"],
    }
    uploads = tmp_path / "uploads"
    write(uploads, "inputs/doc/a.md", "# hi")
    resolved = resolve_inputs(
        schema, {}, uploads, {"doc": "inputs/doc/a.md"}, {}, {"doc": "inputs/doc/a.md"}
    )
    assert resolved.input == {"doc": str((uploads / "inputs/doc/a.md").resolve())}
    # not bound, its upload's path (the clients' form): the same file
    assert resolve_inputs(schema, {}, uploads, {"doc": "inputs/doc/a.md"}, {}).input == (
        resolved.input
    )
    with pytest.raises(InputError):  # not bound, not a path of the key: sent inline, refused
        resolve_inputs(schema, {}, uploads, {"doc": "a.md"}, {})
    with pytest.raises(InputError):  # bound to a path out of uploads: missing
        resolve_inputs(schema, {}, uploads, {"doc": "../x"}, {}, {"doc": "../x"})


def test_take_over_writes_through_no_folder_link_a_retried_run_left(tmp_path):
    src, dest, outside = tmp_path / "src", tmp_path / "dest", tmp_path / "outside"
    write(src, "data/a.csv")
    outside.mkdir()
    dest.mkdir()
    os.symlink(outside, dest / "data")  # the first attempt's process left it
    assert take_over(src, dest) == 1
    assert list(outside.iterdir()) == []
    assert not (dest / "data").is_symlink() and (dest / "data/a.csv").is_file()
