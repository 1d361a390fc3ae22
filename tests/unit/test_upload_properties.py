"""Properties of upload handling, over archives and upload folders Hypothesis makes up: zip
extraction never writes outside its destination (traversal, absolute paths, backslashes,
symlink entries, duplicates, entries nested under files, high compression ratios) and leaves
nothing when it refuses; the upload matcher picks exactly the file the documented rule names,
and never one outside the uploads folder."""

from __future__ import annotations

import os
import stat
import tempfile
import warnings
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runner_core.error_codes import ErrorCode
from runner_core.inputs import InputError, match_upload
from runner_core.uploads import UploadError, UploadLimits, extract_upload, safe_entry_name

PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SEGMENTS = st.sampled_from(["a", "b", "c.txt", "..", ".", "", "x y", "é", "C:", "\\", "..\\a"])
NAMES = st.one_of(
    st.lists(SEGMENTS, min_size=1, max_size=4).map("/".join),
    st.lists(SEGMENTS, min_size=1, max_size=3).map(lambda s: "/" + "/".join(s)),
    st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=12),
)
ENTRY = st.tuples(
    NAMES,
    st.binary(max_size=64),
    st.sampled_from(["file", "dir", "symlink"]),
)


def write_zip(path: Path, entries: list[tuple[str, bytes, str]]) -> None:
    with warnings.catch_warnings(), zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        warnings.simplefilter("ignore")  # duplicate names are what some examples are about
        for name, data, kind in entries:
            info = zipfile.ZipInfo(name + ("/" if kind == "dir" and not name.endswith("/") else ""))
            if kind == "symlink":
                info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, b"" if kind == "dir" else data)


def files_under(root: Path) -> dict[str, bytes]:
    """Every path under `root` (links included, not followed), relative, with file contents."""
    found = {}
    for current, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(current) / name
            rel = path.relative_to(root).as_posix()
            found[rel] = path.read_bytes() if path.is_file() and not path.is_symlink() else b""
    return found


def expected_outcome(archive: Path) -> dict[str, bytes] | None:
    """The files a correct extraction of `archive` writes, or None when it must be refused:
    a name that is no relative path inside, a symlink, or two entries for one path."""
    files: dict[str, bytes] = {}
    dirs: set[str] = set()
    with zipfile.ZipFile(archive) as zf:
        for info in zf.infolist():
            try:
                safe = safe_entry_name(info.filename)
            except UploadError:
                return None
            if stat.S_ISLNK(info.external_attr >> 16):
                return None
            parents = {"/".join(safe.split("/")[:i]) for i in range(1, safe.count("/") + 1)}
            if safe in files or (safe in dirs and not info.is_dir()) or parents & set(files):
                return None
            if info.is_dir():
                dirs.add(safe)
            else:
                files[safe] = zf.read(info)
            dirs |= parents
    return files


@PROPERTY
@given(entries=st.lists(ENTRY, max_size=6))
def test_extraction_writes_inside_its_destination_or_nothing(entries):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "outside").mkdir()
        write_zip(root / "upload.zip", entries)
        dest = root / "request" / "uploads"
        expected = expected_outcome(root / "upload.zip")
        try:
            extracted = extract_upload(root / "upload.zip", dest)
        except UploadError as exc:
            assert expected is None, (entries, exc)
            assert not dest.exists()
        else:
            assert expected is not None, entries
            written = {k: v for k, v in files_under(dest).items() if (dest / k).is_file()}
            assert written == expected
            assert {f.path for f in extracted} == set(expected)
            assert not any((dest / k).is_symlink() for k in files_under(dest))
        # nothing anywhere else: no staging directory left, nothing beside the destination
        request = root / "request"
        left = sorted(p.name for p in request.iterdir()) if request.exists() else []
        assert left in ([], ["uploads"])
        assert files_under(root / "outside") == {}
        assert {p.name for p in root.iterdir()} <= {"outside", "request", "upload.zip"}


@PROPERTY
@given(
    size=st.integers(min_value=0, max_value=200_000),
    ratio=st.floats(min_value=1.0, max_value=100.0),
    pattern=st.sampled_from([b"\0", b"ab", bytes(range(256))]),
)
def test_an_entry_above_the_ratio_is_refused_and_one_below_is_extracted(size, ratio, pattern):
    data = (pattern * (size // len(pattern) + 1))[:size]
    limits = UploadLimits(max_ratio=ratio, ratio_min_bytes=4096)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_zip(root / "upload.zip", [("big.bin", data, "file")])
        compressed = zipfile.ZipFile(root / "upload.zip").getinfo("big.bin").compress_size
        bomb = size >= limits.ratio_min_bytes and size > ratio * max(compressed, 1)
        try:
            extract_upload(root / "upload.zip", root / "uploads", limits)
        except UploadError as exc:
            assert bomb and exc.code == ErrorCode.UPLOAD_ZIP_BOMB
            assert not (root / "uploads").exists()
        else:
            assert not bomb
            assert (root / "uploads" / "big.bin").read_bytes() == data


KEYS = st.sampled_from(["input_file", "doc", "a.b", "*", "[x]", "../up", "sub/doc", "doc?"])
EXTENSIONS = st.lists(
    st.sampled_from([".txt", ".md", ".json", ".TXT", ""]), max_size=3, unique=True
)
FILE_NAMES = st.lists(
    st.sampled_from(
        [
            "input_file",
            "input_file.txt",
            "input_file.md",
            "input_file.csv",
            "doc",
            "doc.txt",
            "doc.json",
            "doc.tar.gz",
            "a.b",
            "a.b.txt",
            "ab",
            "x",
            "x.txt",
            "*.txt",
            "other.txt",
        ]
    ),
    max_size=6,
    unique=True,
)


@settings(max_examples=300, deadline=None)
@given(key=KEYS, extensions=EXTENSIONS, names=FILE_NAMES, outside=st.booleans())
def test_the_matcher_picks_exactly_what_the_rule_names(key, extensions, names, outside):
    """The file named `key` or `key<ext>` for an allowed ext; two of them: ambiguous; none but
    a `key.<other>`: extension refused; else none. Never a file outside the uploads folder."""
    with tempfile.TemporaryDirectory() as tmp:
        uploads = Path(tmp) / "uploads"
        uploads.mkdir()
        for name in names:
            (uploads / name).write_text(name)
        if outside:  # what "../up" and "sub/doc" would reach
            (Path(tmp) / "up").write_text("outside")
            (Path(tmp) / "up.txt").write_text("outside")
        candidates = [n for n in names if n == key or n in {key + e for e in extensions}]
        others = [n for n in names if n.startswith(key + ".") and n not in candidates]
        if "/" in key:
            candidates, others = [], []  # a field name is never a path
        try:
            found = match_upload(uploads, key, extensions)
        except InputError as exc:
            if len(candidates) > 1:
                assert exc.code == ErrorCode.INPUT_FILE_AMBIGUOUS
            else:
                assert not candidates and others
                assert exc.code == ErrorCode.INPUT_FILE_EXTENSION_NOT_ALLOWED
                assert exc.details["files"] == sorted(others)
            return
        assert len(candidates) <= 1 and (candidates or not others)
        if candidates:
            assert found == uploads / candidates[0]
            assert found.resolve().parent == uploads.resolve()
        else:
            assert found is None


@pytest.mark.parametrize("key", ["../up", "sub/../../up", "/etc/passwd"])
def test_a_field_name_that_is_a_path_matches_nothing(tmp_path, key):
    (tmp_path / "uploads").mkdir()
    (tmp_path / "up").write_text("outside")
    assert match_upload(tmp_path / "uploads", key, [".txt", ""]) is None
