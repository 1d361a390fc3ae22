import json
import os
import time
from pathlib import Path

# The side effect the chaos test counts: one line per execution, in a file outside the run.
params = json.loads(Path(os.environ["SKILL_RUNNER_INPUT_FILE"]).read_text())["parameter"]
ledger = Path(params["ledger"]) / os.environ["SKILL_RUNNER_REQUEST_ID"]
with open(ledger, "a") as fh:
    fh.write(f"{os.getpid()} {time.time():.3f}\n")
time.sleep(params.get("sleep", 0.2))
n = params["n"]
Path(os.environ["SKILL_RUNNER_RESULT_FILE"]).write_text(json.dumps({"n": n, "double": 2 * n}))
