"""Write artifacts/big.bin of parameter.size_mib MiB of incompressible bytes, in 1 MiB blocks."""

import json
import os
from pathlib import Path

params = json.loads(Path(os.environ["SKILL_RUNNER_INPUT_FILE"]).read_text())["parameter"]
size = int(params["size_mib"]) * 2**20
block = os.urandom(2**20)
target = Path(os.environ["SKILL_RUNNER_ARTIFACTS_DIR"]) / "big.bin"
with target.open("wb") as fh:
    written = 0
    while written < size:
        chunk = block[: size - written]
        fh.write(chunk)
        written += len(chunk)
Path(os.environ["SKILL_RUNNER_RESULT_FILE"]).write_text(
    json.dumps({"bytes": written, "file": "artifacts/big.bin"})
)
