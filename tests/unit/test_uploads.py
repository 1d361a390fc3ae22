from __future__ import annotations

import bz2
import hashlib
import json
import struct
import warnings
import zipfile
import zlib
from pathlib import Path

import pytest

from runner_core.uploads import (
    UploadedFile,
    UploadError,
    UploadLimits,
    extract_upload,
    safe_entry_name,
    write_input_manifest,
)


def make_zip(
    path: Path,
    entries: list[tuple[zipfile.ZipInfo | str, bytes]],
    compression: int = zipfile.ZIP_DEFLATED,
) -> Path:
    with zipfile.ZipFile(path, "w", compression=compression) as zf:
        for info, data in entries:
            zf.writestr(info, data)
    return path


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "request"
    root.mkdir()
    return root


def tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


DEFAULT_LIMITS = UploadLimits()


def assert_refused(
    zip_path: Path, workspace: Path, code: str, limits: UploadLimits = DEFAULT_LIMITS
) -> UploadError:
    dest = workspace / "uploads"
    before = tree(workspace.parent)
    with pytest.raises(UploadError) as err:
        extract_upload(zip_path, dest, limits)
    assert err.value.code == code
    assert not dest.exists()
    assert tree(workspace.parent) == before  # no staging leftovers, nothing escaped
    return err.value


def test_extracts_files_and_directories_with_hashes(tmp_path: Path, workspace: Path) -> None:
    src = make_zip(
        tmp_path / "in.zip", [("input_file", b"2 3 5 7"), ("docs/", b""), ("docs/a.txt", b"hello")]
    )
    files = extract_upload(src, workspace / "uploads")
    assert [f.path for f in files] == ["docs/a.txt", "input_file"]
    assert files[1] == UploadedFile("input_file", 7, hashlib.sha256(b"2 3 5 7").hexdigest())
    assert (workspace / "uploads" / "docs" / "a.txt").read_bytes() == b"hello"
    assert tree(workspace) == {
        "uploads",
        "uploads/docs",
        "uploads/docs/a.txt",
        "uploads/input_file",
    }


def test_extracts_into_existing_empty_destination(tmp_path: Path, workspace: Path) -> None:
    (workspace / "uploads").mkdir()
    src = make_zip(tmp_path / "in.zip", [("a.txt", b"x")])
    assert [f.path for f in extract_upload(src, workspace / "uploads")] == ["a.txt"]


def test_refuses_non_empty_destination(tmp_path: Path, workspace: Path) -> None:
    (workspace / "uploads").mkdir()
    (workspace / "uploads" / "old.txt").write_text("old")
    src = make_zip(tmp_path / "in.zip", [("a.txt", b"x")])
    with pytest.raises(UploadError) as err:
        extract_upload(src, workspace / "uploads")
    assert err.value.code == "UPLOAD_DEST_NOT_EMPTY"
    assert tree(workspace / "uploads") == {"old.txt"}


def test_normalises_dot_segments_and_double_slashes(tmp_path: Path, workspace: Path) -> None:
    src = make_zip(tmp_path / "in.zip", [("./a//b.txt", b"x")])
    assert [f.path for f in extract_upload(src, workspace / "uploads")] == ["a/b.txt"]


NFD = "re\u0301sume\u0301.pdf"  # "résumé.pdf" as macOS spells it: e + combining acute
NFC = "r\u00e9sum\u00e9.pdf"


def test_an_nfd_entry_name_is_stored_in_nfc(tmp_path: Path, workspace: Path) -> None:
    src = make_zip(tmp_path / "in.zip", [(f"cafe\u0301/{NFD}", b"cv")])
    files = extract_upload(src, workspace / "uploads")
    assert [f.path for f in files] == [f"caf\u00e9/{NFC}"]
    assert (workspace / "uploads" / "caf\u00e9" / NFC).read_bytes() == b"cv"


def test_refuses_two_entries_whose_names_meet_once_normalised(
    tmp_path: Path, workspace: Path
) -> None:
    src = make_zip(tmp_path / "in.zip", [(NFC, b"one"), (f"./{NFD}", b"two")])
    error = assert_refused(src, workspace, "UPLOAD_DUPLICATE_ENTRY")
    assert error.details == {"entry": NFC, "entries": [NFC, f"./{NFD}"]}
    assert "NFC" in error.message


def test_refuses_non_zip_body(tmp_path: Path, workspace: Path) -> None:
    body = tmp_path / "in.zip"
    body.write_bytes(b"this is not a zip archive at all")
    assert_refused(body, workspace, "UPLOAD_NOT_ZIP")


@pytest.mark.parametrize(
    "name",
    ["../evil", "/abs", "a/../../b", "a/..", "C:/win.txt", "c:evil", "..\\evil", "a\\..\\..\\b"],
)
def test_refuses_unsafe_paths(tmp_path: Path, workspace: Path, name: str) -> None:
    src = make_zip(tmp_path / "in.zip", [("good.txt", b"ok"), (zipfile.ZipInfo(name), b"evil")])
    err = assert_refused(src, workspace, "UPLOAD_UNSAFE_PATH")
    assert err.details["entry"] == name
    assert not (tmp_path / "evil").exists()


@pytest.mark.parametrize(
    ("name", "limit", "fits"),
    [
        ("a" * 256, {"max_name_bytes": 255}, "a" * 255),
        ("dir/" + "\u00e9" * 128, {"max_name_bytes": 255}, "dir/" + "\u00e9" * 127 + "a"),
        ("/".join(["d"] * 65), {"max_depth": 64}, "/".join(["d"] * 64)),
        ("d/" * 2000 + "f", {"max_depth": 64}, "d/" * 63 + "f"),
        ("/".join(["a" * 200] * 6), {"max_path_bytes": 1024}, "/".join(["a" * 200] * 5)),
    ],
    ids=["long-name", "long-utf8-name", "too-deep", "far-too-deep", "long-path"],
)
def test_refuses_names_the_file_system_cannot_hold(
    tmp_path: Path, workspace: Path, name: str, limit: dict, fits: str
) -> None:
    """Refused before anything is written; the same name just within the limit is taken."""
    src = make_zip(tmp_path / "in.zip", [("good.txt", b"ok"), (name, b"x")])
    err = assert_refused(src, workspace, "UPLOAD_UNSAFE_PATH")
    assert limit.items() <= err.details.items()
    assert err.details["entry"] == (name if len(name) <= 200 else name[:200] + "...")
    src = make_zip(tmp_path / "fits.zip", [(fits, b"x")])
    assert [f.path for f in extract_upload(src, workspace / "uploads")] == [fits]


def test_refuses_a_path_that_would_not_fit_under_a_deep_destination(tmp_path: Path) -> None:
    workspace = tmp_path.joinpath(*["w" * 250] * 12)  # about 3000 bytes of directories
    workspace.mkdir(parents=True)
    src = make_zip(tmp_path / "in.zip", [("/".join(["b" * 200] * 5), b"x")])
    err = assert_refused(src, workspace, "UPLOAD_UNSAFE_PATH")
    assert 0 < err.details["max_path_bytes"] < 1024


def test_entry_names_with_nul_bytes_are_unsafe() -> None:
    # zipfile truncates names at NUL when reading, so check the name rule directly.
    with pytest.raises(UploadError) as err:
        safe_entry_name("a.txt\x00.exe")
    assert err.value.code == "UPLOAD_UNSAFE_PATH"


def test_refuses_symlink_entries(tmp_path: Path, workspace: Path) -> None:
    link = zipfile.ZipInfo("link")
    link.external_attr = 0o120777 << 16
    src = make_zip(tmp_path / "in.zip", [("good.txt", b"ok"), (link, b"/etc/passwd")])
    assert_refused(src, workspace, "UPLOAD_SYMLINK")


@pytest.mark.parametrize(
    "names",
    [
        ["a.txt", "a.txt"],
        ["a.txt", "./a.txt"],
        ["d/x", "d//x"],
        ["a", "a/b"],
        ["a/b", "a"],
        ["a", "a/"],
    ],
)
def test_refuses_duplicate_names_after_normalisation(
    tmp_path: Path, workspace: Path, names: list[str]
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about the exact duplicate, as it should
        src = make_zip(tmp_path / "in.zip", [(zipfile.ZipInfo(n), b"x") for n in names])
    assert_refused(src, workspace, "UPLOAD_DUPLICATE_ENTRY")


def test_refuses_encrypted_entries(tmp_path: Path, workspace: Path) -> None:
    src = make_zip(
        tmp_path / "in.zip", [("secret.txt", b"x" * 100)], compression=zipfile.ZIP_STORED
    )
    # zipfile cannot write encrypted archives, so set the flag bit in both headers by hand.
    raw = bytearray(src.read_bytes())
    for signature, flag_offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        at = raw.find(signature)
        flags = struct.unpack_from("<H", raw, at + flag_offset)[0]
        struct.pack_into("<H", raw, at + flag_offset, flags | 0x1)
    src.write_bytes(bytes(raw))
    assert_refused(src, workspace, "UPLOAD_ENCRYPTED")


def test_encrypted_flag_in_central_directory_is_refused(tmp_path: Path, workspace: Path) -> None:
    src = tmp_path / "in.zip"
    with zipfile.ZipFile(src, "w") as zf:
        zf.writestr("secret.txt", b"x")
        # writestr clears flag_bits; setting it afterwards lands in the central directory.
        zf.getinfo("secret.txt").flag_bits |= 0x1
    assert_refused(src, workspace, "UPLOAD_ENCRYPTED")


def test_refuses_too_many_entries(tmp_path: Path, workspace: Path) -> None:
    src = make_zip(tmp_path / "in.zip", [(f"f{i}.txt", b"x") for i in range(6)])
    assert_refused(src, workspace, "UPLOAD_TOO_MANY_ENTRIES", UploadLimits(max_entries=5))


def test_refuses_total_size_over_limit(tmp_path: Path, workspace: Path) -> None:
    src = make_zip(tmp_path / "in.zip", [("a.bin", b"a" * 600), ("b.bin", b"b" * 600)])
    assert_refused(src, workspace, "UPLOAD_TOO_LARGE", UploadLimits(max_total_bytes=1000))


def test_refuses_highly_compressible_entry_as_zip_bomb(tmp_path: Path, workspace: Path) -> None:
    src = tmp_path / "bomb.zip"
    with zipfile.ZipFile(src, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        with zf.open("zeros.bin", "w") as entry:
            for _ in range(50):
                entry.write(bytes(1024 * 1024))
    err = assert_refused(src, workspace, "UPLOAD_ZIP_BOMB", UploadLimits(max_ratio=50))
    assert err.details["entry"] == "zeros.bin"


def test_small_compressible_files_skip_the_ratio_check(tmp_path: Path, workspace: Path) -> None:
    src = make_zip(tmp_path / "in.zip", [("blank.txt", b" " * 4000)])
    assert [
        f.size for f in extract_upload(src, workspace / "uploads", UploadLimits(max_ratio=2))
    ] == [4000]


def test_refuses_entry_whose_header_lies_about_its_size(tmp_path: Path, workspace: Path) -> None:
    src = make_zip(tmp_path / "in.zip", [("a.txt", b"a" * 5000)], compression=zipfile.ZIP_STORED)
    raw = bytearray(src.read_bytes())
    # Shrink the declared uncompressed size in the central directory only.
    at = raw.find(b"PK\x01\x02")
    struct.pack_into("<I", raw, at + 24, 10)
    src.write_bytes(bytes(raw))
    # zipfile stops at the declared size and then fails the CRC check: a corrupt archive.
    err = assert_refused(src, workspace, "UPLOAD_NOT_ZIP")
    assert err.details["entry"] == "a.txt"


def test_write_input_manifest_lists_files(tmp_path: Path) -> None:
    files = [UploadedFile("b.txt", 1, "bb"), UploadedFile("a.txt", 2, "aa")]
    write_input_manifest(files, tmp_path / "input_manifest.json")
    body = json.loads((tmp_path / "input_manifest.json").read_text())
    assert body == {
        "files": [
            {"path": "a.txt", "size": 2, "sha256": "aa"},
            {"path": "b.txt", "size": 1, "sha256": "bb"},
        ]
    }


@pytest.mark.parametrize("method", [zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA])
def test_refuses_entries_compressed_other_than_deflate(
    tmp_path: Path, workspace: Path, method: int
) -> None:
    # zipfile inflates these without a bound on a read: a few KB can take gigabytes of memory
    src = make_zip(tmp_path / "in.zip", [("a.txt", b"a" * 100)], compression=method)
    err = assert_refused(src, workspace, "UPLOAD_NOT_ZIP")
    assert err.details == {"entry": "a.txt", "compress_type": method}


def test_a_bzip2_entry_lying_about_its_size_is_refused_before_it_is_read(
    tmp_path: Path, workspace: Path
) -> None:
    data = bz2.compress(b"\0" * 50_000_000)  # 50 MB in about 50 bytes
    src = make_zip(tmp_path / "in.zip", [("a.txt", b"x")], compression=zipfile.ZIP_STORED)
    raw = src.read_bytes()
    local, central = raw.find(b"PK\x03\x04"), raw.find(b"PK\x01\x02")
    # rebuild with the bzip2 data under headers claiming 1 byte, a zero (its CRC right): read,
    # it would have been taken after inflating all 50 MB at once
    out = bytearray(raw[: local + 30 + 5]) + data
    cd = bytearray(raw[central : raw.find(b"PK\x05\x06")])
    crc = zlib.crc32(b"\0")
    struct.pack_into("<H", out, local + 8, zipfile.ZIP_BZIP2)
    struct.pack_into("<II", out, local + 14, crc, len(data))
    struct.pack_into("<H", cd, 10, zipfile.ZIP_BZIP2)
    struct.pack_into("<II", cd, 16, crc, len(data))
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 1, 1, len(cd), len(out), 0)
    src.write_bytes(bytes(out + cd + end))
    assert_refused(src, workspace, "UPLOAD_NOT_ZIP")
