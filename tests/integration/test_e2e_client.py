"""The example client (e2e_client) against the real service: gunicorn + a Celery worker, codex
talking to the fake LLM. Through the client's own pages: a script skill run with a file upload,
an interactive run answered from its reply form, a refused value shown on the form; each run's
recording written (create, upload, reply, result_read) and stepped through on the replay page."""

from __future__ import annotations

import hashlib
import io
import json
import re
from dataclasses import asdict

import pytest

from e2e_client.app import create_app
from fake_llm import FakeLLM
from runner_core.engines import get_adapter
from tests.engines.harness import fake_engine_config, require_binary
from tests.engines.test_interactive_jobs import ASKS_THEN_FINISHES
from tests.helpers import wait_for
from tests.integration.served import served_stack
from tests.integration.services import broker_settings

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def e2e(tmp_path_factory):
    """The example client's Flask app (in this process) on a served service."""
    require_binary(get_adapter("codex"))
    root = tmp_path_factory.mktemp("e2e-client")
    script_file = root / "llm-script.json"
    script_file.write_text(json.dumps(asdict(ASKS_THEN_FINISHES)))
    with FakeLLM(script_file) as llm, broker_settings(root) as settings:
        config_dir = fake_engine_config(root / "engine-config", llm)
        with served_stack(settings, SKILL_RUNNER_ENGINE_CONFIG_DIR=str(config_dir)) as served:
            app = create_app(served.base_url, recordings_dir=root / "recordings")
            yield app.test_client(), root / "recordings"


def page_until(client, url: str, marker: str, timeout: float = 90.0) -> str:
    """The page's HTML once it holds `marker` (the run page reloads itself the same way)."""
    seen = {}

    def holds() -> bool:
        seen["html"] = client.get(url).get_data(as_text=True)
        return marker in seen["html"]

    wait_for(holds, timeout, 0.3, f"{marker!r} on {url}")
    return seen["html"]


def recording_of(folder, request_id: str) -> dict:
    (path,) = folder.glob(f"*-{request_id}.json")
    return json.loads(path.read_text()) | {"name": path.name}


def test_a_script_skill_runs_with_an_upload_and_is_recorded(e2e):
    client, folder = e2e
    listing = client.get("/").get_data(as_text=True)
    assert "demo-prime-number" in listing and "pick-title" in listing
    form = client.get("/skills/demo-prime-number").get_data(as_text=True)
    assert 'name="file:input_file"' in form and 'accept=".txt"' in form
    assert "<option >auto</option>" in form or ">auto</option>" in form
    numbers = b"30\n"
    answer = client.post(
        "/skills/demo-prime-number/run",
        data={
            "parameter:divisor": "3",
            "execution_mode": "auto",
            "no_cache": "on",
            "file:input_file": (io.BytesIO(numbers), "numbers.txt"),
        },
        content_type="multipart/form-data",
    )
    assert answer.status_code == 302, answer.get_data(as_text=True)
    rid = answer.headers["Location"].rsplit("/", 1)[1]
    html = page_until(client, f"/runs/{rid}", 'class="badge st-succeeded"')
    assert "&#34;status&#34;: &#34;succeeded&#34;" in html or '"status": "succeeded"' in html
    doc = recording_of(folder, rid)
    assert (
        doc["format"] == "skill-runner-e2e-recording/1" and doc["skill_id"] == "demo-prime-number"
    )
    assert [s["action"] for s in doc["steps"]] == ["create", "upload", "result_read"]
    create, upload, result = doc["steps"]
    assert create["request"]["parameter"] == {"divisor": 3}
    assert create["request"]["runtime_options"] == {"execution_mode": "auto", "no_cache": True}
    assert create["response"]["request_id"] == rid
    sent = upload["request"]["files"]["input_file"]
    assert sent["filename"] == "numbers.txt"
    assert sent["sha256"] == hashlib.sha256(numbers).hexdigest()
    assert result["response"]["result"]["status"] == "succeeded"
    client.get(f"/runs/{rid}")  # read again: recorded once
    assert len(recording_of(folder, rid)["steps"]) == 3

    replay = client.get(f"/recordings/{doc['name']}?step=2").get_data(as_text=True)
    assert "Step 2 of 3: upload" in replay
    assert "?step=1" in replay and "?step=3" in replay and "numbers.txt" in replay
    last = client.get(f"/recordings/{doc['name']}?step=99").get_data(as_text=True)
    assert "Step 3 of 3: result_read" in last and 'id="next"' not in last
    assert doc["name"] in client.get("/recordings").get_data(as_text=True)
    assert client.get("/recordings/..%2Fsecret.json").status_code == 404


def test_an_interactive_run_is_answered_from_the_reply_form(e2e):
    client, folder = e2e
    form = client.get("/skills/pick-title").get_data(as_text=True)
    assert '<select id="engine" name="engine">' in form and "interactive" in form
    models = client.get("/engines/codex/models").get_json()
    assert models["engine"] == "codex" and models["models"]
    answer = client.post(
        "/skills/pick-title/run",
        data={
            "input:text": "hello",
            "engine": "codex",
            "execution_mode": "interactive",
            "no_cache": "on",
        },
    )
    assert answer.status_code == 302, answer.get_data(as_text=True)
    rid = answer.headers["Location"].rsplit("/", 1)[1]
    html = page_until(client, f"/runs/{rid}", 'id="reply"')
    assert "Which title" in html and 'class="badge st-waiting_user"' in html
    interaction_id = re.search(r'name="interaction_id" value="(\d+)"', html).group(1)
    choice = re.search(r"name=\"choice\" value='([^']*)'>The bold one<", html).group(1)
    replied = client.post(
        f"/runs/{rid}/reply",
        data={"interaction_id": interaction_id, "kind": "choose_one", "choice": choice},
    )
    assert replied.status_code == 302
    html = page_until(client, f"/runs/{rid}", 'class="badge st-succeeded"')
    assert "TITLE-B-7" in html and 'id="reply"' not in html
    assert "thread.started" in html  # the end of codex's stdout, read by range
    doc = recording_of(folder, rid)
    assert [s["action"] for s in doc["steps"]] == ["create", "reply", "result_read"]
    reply = doc["steps"][1]
    assert reply["request"]["response"] == json.loads(choice)
    assert reply["request"]["idempotency_key"] == f"e2e-{rid}-{interaction_id}"
    assert reply["response"]["accepted"] is True
    assert "TITLE-B-7" in json.dumps(doc["steps"][2]["response"])
    replay = client.get(f"/recordings/{doc['name']}?step=2").get_data(as_text=True)
    assert "Step 2 of 3: reply" in replay


def test_a_refused_value_is_shown_on_the_form_and_nothing_recorded(e2e):
    client, folder = e2e
    before = sorted(p.name for p in folder.glob("*.json"))
    answer = client.post(
        "/skills/demo-prime-number/run",
        data={"parameter:divisor": "0", "execution_mode": "auto"},
    )
    assert answer.status_code == 400
    html = answer.get_data(as_text=True)
    assert "SCHEMA_VALIDATION_FAILED" in html and "minimum" in html
    assert 'value="0"' in html  # the form keeps what was typed
    bad = client.post("/skills/demo-prime-number/run", data={"parameter:divisor": "x"})
    assert bad.status_code == 400 and "divisor" in bad.get_data(as_text=True)
    assert sorted(p.name for p in folder.glob("*.json")) == before
    assert client.get("/skills/no-such-skill").status_code == 404
