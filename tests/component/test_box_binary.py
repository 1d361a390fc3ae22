"""The run box's bubblewrap (deploy/install-sandbox.sh): built from Debian's source package,
linked statically, and Debian's binary package where the build cannot be done. Needs apt and
Debian's package archive, as the suite's own setup does (tests/run.sh runs the script)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from runner_core.settings import REPO_ROOT

SCRIPT = REPO_ROOT / "deploy" / "install-sandbox.sh"

pytestmark = pytest.mark.skipif(
    shutil.which("apt-get") is None, reason="install-sandbox.sh builds bwrap with apt's sources"
)


def interpreter(binary: Path) -> bool:
    """True when the ELF file asks for a dynamic loader (a PT_INTERP program header)."""
    out = subprocess.run(["readelf", "-lW", str(binary)], capture_output=True, text=True)
    return "Requesting program interpreter" in out.stdout


def install(root: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run a copy of the script whose checkout is `root` (its .sandbox/ lands there)."""
    (root / "deploy").mkdir(parents=True)
    shutil.copy2(SCRIPT, root / "deploy" / SCRIPT.name)
    return subprocess.run(
        ["bash", str(root / "deploy" / SCRIPT.name)],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=600,
        check=False,
    )


def boxes(bwrap: Path) -> bool:
    """The box runner_core.sandbox asks for starts and runs a command."""
    argv = [str(bwrap), "--die-with-parent", "--unshare-pid", "--unshare-net", "--cap-drop"]
    argv += ["ALL", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--", "true"]
    return subprocess.run(argv, capture_output=True, check=False).returncode == 0


def test_the_checkouts_bwrap_is_built_from_source_without_a_dynamic_loader():
    bwrap = REPO_ROOT / ".sandbox" / "usr" / "bin" / "bwrap"
    if not bwrap.is_file():
        pytest.fail("no .sandbox/usr/bin/bwrap: tests/run.sh runs deploy/install-sandbox.sh")
    origin = (REPO_ROOT / ".sandbox" / "origin").read_text()
    assert origin.startswith("source "), origin  # the build fell back to Debian's binary
    assert not interpreter(bwrap)
    assert boxes(bwrap)


def test_a_failed_build_falls_back_to_debians_binary(tmp_path):
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "gcc").write_text("#!/bin/sh\necho 'gcc: cannot compile here' >&2\nexit 1\n")
    (fake / "gcc").chmod(0o755)
    done = install(tmp_path / "checkout", {"PATH": f"{fake}:{os.environ['PATH']}"})
    assert done.returncode == 0, done.stderr
    assert "not built from source (gcc: cannot compile here)" in done.stderr
    sandbox = tmp_path / "checkout" / ".sandbox"
    assert (sandbox / "origin").read_text().strip() == "package"
    assert interpreter(sandbox / "usr" / "bin" / "bwrap")  # Debian's: dynamically linked
    assert boxes(sandbox / "usr" / "bin" / "bwrap")
    # installed once: a second call keeps it and does nothing
    script = tmp_path / "checkout" / "deploy" / SCRIPT.name
    again = subprocess.run(["bash", str(script)], capture_output=True, text=True, check=False)
    assert again.returncode == 0 and again.stdout == "" and again.stderr == ""
