"""Read everything a secret could be read from and store it in artifacts/found.txt (and print
it): the test looks for its fake secrets there, in the logs, events and bundles."""
import json
import os
from pathlib import Path

run_dir = Path(os.environ["SKILL_RUNNER_RUN_DIR"])
found: list[str] = [f"[own env] {k}={v}" for k, v in os.environ.items()]


def read(label: str, path: Path | str) -> None:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        found.append(f"[{label}] unreadable: {type(exc).__name__}")
        return
    found.append(f"[{label}] " + data.replace(b"\0", b"\n").decode("utf-8", "replace"))


# the run directory, engine homes and hidden files included
for current, _dirs, files in os.walk(run_dir):
    for name in files:
        path = Path(current) / name
        if "artifacts" not in path.parts and path.stat().st_size < 1_000_000:
            read(f"run file {path.relative_to(run_dir)}", path)
# every parent, up to the first
parents, pid = [], os.getppid()
while pid > 1:
    parents.append(pid)
    for what in ("environ", "cmdline"):
        read(f"parent {pid} {what}", f"/proc/{pid}/{what}")
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        pid = int(stat.rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError):
        break
# every process this user can see
for entry in Path("/proc").iterdir():
    if entry.name.isdigit() and int(entry.name) != os.getpid():
        read(f"process {entry.name} environ", entry / "environ")
# the service log, where it is by default (<data dir>/logs)
logs = run_dir.parent.parent / "logs"
for log_file in sorted(logs.glob("*.log*")) if logs.is_dir() else []:
    read(f"service log {log_file.name}", log_file)
for worker_log in sorted(run_dir.parent.parent.glob("worker-*.log")):
    read(f"worker output {worker_log.name}", worker_log)

text = "\n".join(found)
(Path(os.environ["SKILL_RUNNER_ARTIFACTS_DIR"]) / "found.txt").write_text(text)
print(text)
Path(os.environ["SKILL_RUNNER_RESULT_FILE"]).write_text(
    json.dumps({"sources": len(found), "parents": parents})
)
