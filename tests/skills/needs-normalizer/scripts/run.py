import json
import os
from pathlib import Path

mode = json.loads(Path(os.environ["SKILL_RUNNER_INPUT_FILE"]).read_text())["parameter"]["mode"]
if mode != "no_report":
    (Path(os.environ["SKILL_RUNNER_ARTIFACTS_DIR"]) / "report.txt").write_text("report")
count = "three" if mode == "broken" else "3"
Path(os.environ["SKILL_RUNNER_RESULT_FILE"]).write_text(json.dumps({"count": count, "mode": mode}))
