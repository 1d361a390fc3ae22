"""N1: read the raw result, turn a numeric string count into an integer."""
import json
import os
from pathlib import Path

result = Path(os.environ["SKILL_RUNNER_RESULT_FILE"])
data = json.loads(result.read_text())
if isinstance(data.get("count"), str) and data["count"].isdigit():
    data["count"] = int(data["count"])
result.write_text(json.dumps(data))
