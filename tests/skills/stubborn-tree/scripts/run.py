"""Fork `children` sleepers plus one that ignores SIGTERM and forks a grandchild; record every
pid in raw/child_pids.txt; then sleep (past the skill's timeout)."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

STUBBORN = ("import signal, subprocess, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
            "g = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); "
            "print(g.pid, flush=True); time.sleep(600)")

params = json.loads(Path(os.environ["SKILL_RUNNER_INPUT_FILE"]).read_text())["parameter"]
with open(Path(os.environ["SKILL_RUNNER_ARTIFACTS_DIR"]) / "calls.txt", "a") as fh:
    fh.write(f"{os.getpid()}\n")
kids = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        for _ in range(params["children"])]
stubborn = subprocess.Popen([sys.executable, "-c", STUBBORN], stdout=subprocess.PIPE, text=True)
grandchild = int(stubborn.stdout.readline())
pids = [k.pid for k in kids] + [stubborn.pid, grandchild]
(Path(os.environ["SKILL_RUNNER_RUN_DIR"]) / "raw" / "child_pids.txt").write_text(
    "\n".join(str(p) for p in pids))
time.sleep(params["sleep"])
Path(os.environ["SKILL_RUNNER_RESULT_FILE"]).write_text(json.dumps({"pid": os.getpid()}))
