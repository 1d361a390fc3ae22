import json
import os
import subprocess
import sys
import time
from pathlib import Path

started = time.time()
ctx = json.loads(Path(os.environ["SKILL_RUNNER_INPUT_FILE"]).read_text())
params = ctx["parameter"]
with open(Path(os.environ["SKILL_RUNNER_ARTIFACTS_DIR"]) / "calls.txt", "a") as fh:
    fh.write(f"{os.getpid()}\n")
# Children that would outlive us if the runner did not kill the whole process group.
kids = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        for _ in range(params["children"])]
pids = Path(os.environ["SKILL_RUNNER_RUN_DIR"]) / "raw" / "child_pids.txt"
pids.write_text("\n".join(str(k.pid) for k in kids))
# Children that leave the process group (a session of their own, as daemons do).
escaped = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                            start_new_session=True) for _ in range(params.get("escapes", 0))]
(Path(os.environ["SKILL_RUNNER_RUN_DIR"]) / "raw" / "escaped_pids.txt").write_text(
    "\n".join(str(e.pid) for e in escaped))
# Progress on stdout: `ticks` lines spread over the sleep (multi-byte text on purpose).
ticks, pad = params.get("ticks", 0), "." * params.get("tick_bytes", 0)
for i in range(ticks):
    print(f"tick {i} \u2713 étape{pad}", flush=True)
    time.sleep(params["sleep"] / ticks)
time.sleep(params["sleep"] if not ticks else 0)
# When this process really ran, for tests of the running limits.
(Path(os.environ["SKILL_RUNNER_RUN_DIR"]) / "raw" / "interval.txt").write_text(
    f"{started} {time.time()}")
Path(os.environ["SKILL_RUNNER_RESULT_FILE"]).write_text(json.dumps({"pid": os.getpid()}))
