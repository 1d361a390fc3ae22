"""Installing another version of an engine's CLI into the service's engines folder (POST
/v1/engines/{engine}/upgrade): which versions may be asked for, where they go, and the npm
install itself, under a time limit, its output appended to a log file.

The folder is the npm prefix whose `node_modules/.bin` the runs take their CLIs from
(runner_core.engines.invocation.resolve_binary): the one ``SKILL_RUNNER_ENGINE_BIN_DIR`` names,
else the repository's ``.engines``. `npm install --no-save` keeps the lock's other packages and
leaves package.json as pinned, so `deploy/install-engines.sh --force` goes back to the lock.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from runner_core.engines.invocation import BIN_DIR_ENV, REPO_BIN_DIR, binary_env
from runner_core.engines.packages import UNLINKED_BINARIES, package_of
from runner_core.error_codes import ErrorCode
from runner_core.processes import stop_process_group
from runner_core.semver import MAX_VERSION_CHARS, SEMVER

LATEST = "latest"
# what npm prints when the registry has no such version (or package)
NOT_FOUND_MARKS = ("code ETARGET", "code E404", "notarget No matching version")
KILL_GRACE_SEC = 3.0
LOG_TAIL_BYTES = 8192


def version_error(version: object) -> str | None:
    """Why `version` cannot be asked for (None: it can): a semver such as 1.2.3 or 1.2.3-rc.1,
    or "latest"; never a range, tag, path, URL or anything starting with '-'."""
    if not isinstance(version, str) or not version:
        return "version must be a semver such as 1.2.3, or 'latest'"
    if len(version) > MAX_VERSION_CHARS:
        return f"version is longer than {MAX_VERSION_CHARS} characters"
    if version == LATEST or SEMVER.fullmatch(version):
        return None
    return f"'{version}' is not a semver such as 1.2.3 (or 'latest')"


def engines_prefix(binary: str) -> tuple[Path | None, str | None]:
    """(the npm prefix the service runs `binary` from, None), or (None, why this service cannot
    install it there): an operator who named the CLI's file upgrades it where it lives."""
    chosen = binary_env(binary)
    if os.environ.get(chosen):
        return None, f"{chosen} names the CLI's file: upgrade it where it is installed"
    bin_dir = Path(os.environ[BIN_DIR_ENV]) if os.environ.get(BIN_DIR_ENV) else REPO_BIN_DIR
    if bin_dir.name != ".bin" or bin_dir.parent.name != "node_modules":
        return None, f"{BIN_DIR_ENV} is not the node_modules/.bin folder of an npm prefix"
    return bin_dir.parent.parent, None


def npm_command(prefix: Path, package: str, version: str) -> list[str]:
    """The install of `package`@`version` into `prefix`, its other packages kept as they are."""
    return [
        "npm",
        "install",
        "--no-save",
        "--no-audit",
        "--no-fund",
        "--prefix",
        str(prefix),
        f"{package}@{version}",
    ]


@dataclass(frozen=True)
class InstallOutcome:
    """How an install ended: the version now in the folder, or an error code and message."""

    version_installed: str | None = None
    error_code: ErrorCode | None = None
    message: str | None = None

    @property
    def succeeded(self) -> bool:
        return self.error_code is None

    def error(self) -> dict[str, str] | None:
        if self.error_code is None:
            return None
        return {"code": self.error_code, "message": self.message or ""}


def install_version(
    engine: str, binary: str, version: str, prefix: Path, log_path: Path, timeout_sec: float
) -> InstallOutcome:
    """npm-install `version` of `engine`'s package into `prefix`, its output appended to
    `log_path`; the npm process group is killed when it passes `timeout_sec` or this call is
    interrupted (a worker's soft time limit)."""
    package = package_of(engine)
    if package is None:
        return InstallOutcome(None, ErrorCode.ENGINE_NOT_UPGRADABLE, f"{engine} has no package")
    argv = npm_command(prefix, package, version)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    prefix.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        log.write(("$ " + " ".join(argv) + "\n").encode())
        log.flush()
        start = log.tell()
        try:
            code = _run(argv, log, timeout_sec)
        except OSError as exc:
            return InstallOutcome(None, ErrorCode.ENGINE_UPGRADE_FAILED, f"npm: {exc}")
    if code is None:
        return InstallOutcome(
            None, ErrorCode.TIMEOUT, f"npm install ran past {timeout_sec:g} s and was killed"
        )
    if code != 0:
        return _npm_failure(code, _read_from(log_path, start), package, version)
    return _installed(engine, binary, package, prefix)


def _run(argv: list[str], log, timeout_sec: float) -> int | None:
    """The exit code of `argv` (output to `log`), or None when it ran past `timeout_sec`."""
    proc = subprocess.Popen(
        argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
    )
    try:
        return proc.wait(timeout=timeout_sec)
    except subprocess.TimeoutExpired:
        return None
    finally:
        if proc.poll() is None:
            stop_process_group(proc, KILL_GRACE_SEC)


def _npm_failure(code: int, output: str, package: str, version: str) -> InstallOutcome:
    if any(mark in output for mark in NOT_FOUND_MARKS):
        return InstallOutcome(
            None, ErrorCode.ENGINE_VERSION_NOT_FOUND, f"npm has no version {version} of {package}"
        )
    last = [line for line in output.splitlines() if "error" in line.lower()][-3:]
    detail = ("; " + " | ".join(last)) if last else ""
    return InstallOutcome(None, ErrorCode.ENGINE_UPGRADE_FAILED, f"npm exited {code}{detail}")


def _installed(engine: str, binary: str, package: str, prefix: Path) -> InstallOutcome:
    """After npm succeeded: the CLI linked where runs look for it, and the version installed."""
    modules = prefix / "node_modules"
    unlinked = UNLINKED_BINARIES.get(engine)
    link = modules / ".bin" / binary
    if unlinked and (modules / package / unlinked).exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        link.unlink(missing_ok=True)
        link.symlink_to(os.path.relpath(modules / package / unlinked, link.parent))
    if not (link.is_file() and os.access(link, os.X_OK)):
        return InstallOutcome(
            None, ErrorCode.ENGINE_UPGRADE_FAILED, f"npm succeeded but {link} is not there"
        )
    try:
        installed = json.loads((modules / package / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError) as exc:
        return InstallOutcome(None, ErrorCode.ENGINE_UPGRADE_FAILED, f"no version read: {exc}")
    return InstallOutcome(str(installed))


def _read_from(path: Path, offset: int) -> str:
    with open(path, "rb") as handle:
        handle.seek(offset)
        return handle.read().decode("utf-8", "replace")


def log_tail(path: Path, max_bytes: int = LOG_TAIL_BYTES) -> str:
    """The last `max_bytes` of a log (from a line start when cut), empty when there is none."""
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - max_bytes))
            data = handle.read()
    except OSError:
        return ""
    if size > max_bytes and b"\n" in data:
        data = data.split(b"\n", 1)[1]
    return data.decode("utf-8", "replace")
