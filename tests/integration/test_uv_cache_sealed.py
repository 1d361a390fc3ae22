"""uv's cache is shared by every run: a skill's script reads the packages it holds and cannot
change them, so one skill cannot plant code in what another skill's runs import."""

from __future__ import annotations

import json

import pytest

from tests.integration.test_skill_packages import PROBE_MODULE, install
from tests.packages import build_wheel, echo_skill

pytestmark = pytest.mark.integration

# imports the dependency, then tries to rewrite it (and to add a file beside it)
PLANT = f"""
import json, os
from pathlib import Path
import {PROBE_MODULE} as dep
found = {{"value": dep.VALUE}}
for target, mode in ((dep.__file__, "a"), (Path(dep.__file__).with_name("extra.py"), "w")):
    try:
        with open(target, mode) as out:
            out.write("\\nVALUE = 'planted'\\n")
        found[str(target)] = "written"
    except OSError as exc:
        found[str(target)] = exc.strerror
Path(os.environ["SKILL_RUNNER_RESULT_FILE"]).write_text(json.dumps({{"message": json.dumps(found)}}))
"""


@pytest.fixture(scope="module")
def backend():
    return "sqlite"  # the cache is the same whatever the database


def test_a_skill_cannot_change_the_packages_of_uvs_shared_cache(bare_stack, tmp_path):
    wheels = tmp_path / "wheels"
    build_wheel(wheels, PROBE_MODULE, value="from-the-wheel")
    bare_stack.start_worker(
        extra_env={"UV_FIND_LINKS": str(wheels), "UV_NO_INDEX": "1", "UV_OFFLINE": "1"}
    )
    files = echo_skill("pkg-plant", dependencies=[f"{PROBE_MODULE}==0.1.0"])
    files["scripts/run.py"] = PLANT
    install(bare_stack, files)
    seen = []
    for n in range(2):  # the second run imports what the first one left
        rid = bare_stack.client.post(
            "/v1/jobs",
            json={
                "skill_id": "pkg-plant",
                "input": {"text": str(n)},
                "runtime_options": {"no_cache": True},
            },
        ).json["request_id"]
        status = bare_stack.wait(rid, timeout=120)
        assert status["status"] == "succeeded", bare_stack.client.get(f"/v1/jobs/{rid}/logs").json
        result = bare_stack.client.get(f"/v1/jobs/{rid}/result").json["result"]
        seen.append(json.loads(result["data"]["message"]))
    assert [found.pop("value") for found in seen] == ["from-the-wheel"] * 2
    assert [set(found.values()) for found in seen] == [{"Read-only file system"}] * 2
