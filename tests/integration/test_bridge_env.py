"""A request's runtime_options.env reaches its run: a script skill standing in for the Zotero
plugin's bridge skills reads ZOTERO_BRIDGE_ENDPOINT and ZOTERO_BRIDGE_TOKEN and calls a tiny
HTTP server standing in for the Host Bridge, with the run's box on (the operator lists the
bridge in SKILL_RUNNER_BRIDGE_ALLOW; the skill's network is off) and off. The token reaches
the bridge, and none of the run's logs, events, files or bundles."""

from __future__ import annotations

import http.server
import io
import json
import textwrap
import threading
import zipfile
from pathlib import Path

import pytest

from runner_core.sandbox import find_bwrap
from tests.integration.services import STACK_ENV, api_stack, broker_settings

pytestmark = pytest.mark.integration
TOKEN = "bridge-token-8e3a1c5f7b9d"
CALLER = textwrap.dedent(
    """
    import json, os, sys, urllib.request
    url = os.environ.get("ZOTERO_BRIDGE_ENDPOINT", "")
    token = os.environ.get("ZOTERO_BRIDGE_TOKEN", "")
    print("calling the bridge with", token, file=sys.stderr)  # masked in the run's logs
    try:
        ask = urllib.request.Request(url + "/status", headers={"Authorization": "Bearer " + token})
        with urllib.request.urlopen(ask, timeout=5) as resp:
            answer = resp.read().decode()
    except Exception as exc:
        answer = "unreachable: " + type(exc).__name__
    print(json.dumps({"answer": answer, "token_length": len(token)}))
    """
)


class Bridge(http.server.BaseHTTPRequestHandler):
    heard: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        Bridge.heard.append(self.headers.get("Authorization", ""))
        body = b"zotero says hi"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args) -> None:
        pass


def serve() -> tuple[http.server.HTTPServer, int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Bridge)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]


@pytest.fixture(scope="module")
def bridges():
    """(the listed bridge's port, another local service's port the operator did not list)."""
    listed, other = serve(), serve()
    yield listed[1], other[1]
    for server, _port in (listed, other):
        server.shutdown()


@pytest.fixture(scope="module", params=["off", "auto"], ids=["box-off", "box-on"])
def stack(request, tmp_path_factory, bridges):
    if request.param == "auto" and find_bwrap() is None:
        pytest.fail("bubblewrap must work here: deploy/install-sandbox.sh installs it")
    root = tmp_path_factory.mktemp(f"bridge-{request.param}")
    with (
        broker_settings(root, "sqlite", **STACK_ENV) as settings,
        api_stack(settings, "sqlite") as stack,
    ):
        write_caller(settings.skills_dir)
        stack.start_worker(
            extra_env={
                "SKILL_RUNNER_SANDBOX": request.param,
                "SKILL_RUNNER_BRIDGE_ALLOW": f"127.0.0.1:{bridges[0]}",
            }
        )
        stack.box = request.param
        yield stack


def write_caller(skills: Path) -> None:
    root = skills / "bridge-caller"
    (root / "assets").mkdir(parents=True)
    (root / "scripts").mkdir()
    (root / "SKILL.md").write_text("---\nname: bridge-caller\ndescription: bridge\n---\nRun.\n")
    runner = {
        "id": "bridge-caller",
        "version": "1.0.0",
        "execution_modes": ["auto"],
        "entrypoint": {"type": "script", "script": {"command": "python scripts/run.py"}},
        "schemas": {n: f"assets/{n}.schema.json" for n in ("input", "parameter", "output")},
    }
    (root / "assets/runner.json").write_text(json.dumps(runner))
    output = {
        "type": "object",
        "properties": {"answer": {"type": "string"}, "token_length": {"type": "integer"}},
        "required": ["answer", "token_length"],
    }
    for name, schema in {"input": {"type": "object"}, "parameter": {"type": "object"}}.items():
        (root / f"assets/{name}.schema.json").write_text(json.dumps(schema))
    (root / "assets/output.schema.json").write_text(json.dumps(output))
    (root / "scripts/run.py").write_text(CALLER)


def call(stack, port: int) -> tuple[dict, dict]:
    env = {
        "ZOTERO_BRIDGE_ENDPOINT": f"http://127.0.0.1:{port}/bridge/v1",
        "ZOTERO_BRIDGE_TOKEN": TOKEN,
        "ZOTERO_BRIDGE_CONNECTION_MODE": "local",
    }
    options = {"env": env, "no_cache": True, "debug": True}
    resp = stack.client.post(
        "/v1/jobs", json={"skill_id": "bridge-caller", "runtime_options": options}
    )
    assert resp.status_code == 200, resp.json
    rid = resp.json["request_id"]
    status = stack.wait(rid, timeout=60)
    assert status["status"] == "succeeded", (status.get("error"), status.get("warnings"))
    return status, stack.client.get(f"/v1/jobs/{rid}/result").json["result"]["data"]


def test_the_script_calls_the_bridge_with_the_requests_token(stack, bridges):
    Bridge.heard.clear()
    status, data = call(stack, bridges[0])
    rid = status["request_id"]
    assert data == {"answer": "zotero says hi", "token_length": len(TOKEN)}
    assert [w for w in status["warnings"] if w["code"] == "NETWORK_REFUSED"] == []
    assert Bridge.heard == [f"Bearer {TOKEN}"]
    texts = {
        "logs": stack.client.get(f"/v1/jobs/{rid}/logs").get_data(as_text=True),
        "events": stack.client.get(f"/v1/jobs/{rid}/events/history").get_data(as_text=True),
        "status": stack.client.get(f"/v1/jobs/{rid}").get_data(as_text=True),
    }
    bundle = stack.client.get(f"/v1/jobs/{rid}/bundle")
    with zipfile.ZipFile(io.BytesIO(bundle.data)) as debug_zip:
        texts.update(
            {n: debug_zip.read(n).decode("utf-8", "replace") for n in debug_zip.namelist()}
        )
    run_dir = stack.settings.runs_dir / stack.client.get(f"/v1/jobs/{rid}").json["run_id"]
    for path in run_dir.rglob("*"):
        if path.is_file():
            texts[str(path.relative_to(run_dir))] = path.read_text("utf-8", errors="replace")
    assert "calling the bridge with" in texts["logs"]  # the line is there, the token masked
    assert [name for name, text in texts.items() if TOKEN in text] == []


def test_a_boxed_script_reaches_no_endpoint_the_operator_did_not_list(stack, bridges):
    if stack.box == "off":
        pytest.skip("without the box a run's network is the host's")
    Bridge.heard.clear()
    status, data = call(stack, bridges[1])  # any API client may name any endpoint
    assert data["answer"].startswith("unreachable"), data
    assert Bridge.heard == []
    refused = [w for w in status["warnings"] if w["code"] == "NETWORK_REFUSED"]
    assert [w["details"] for w in refused] == [
        {"host": "127.0.0.1", "port": bridges[1], "variable": "ZOTERO_BRIDGE_ENDPOINT"}
    ]


def test_a_run_whose_variables_are_lost_before_it_starts_fails_saying_so(tmp_path):
    """The request named variables, their file is gone when the worker takes the run: the run
    fails at its start with RUNTIME_ENV_SECRET_MISSING rather than run its script without them."""
    with (
        broker_settings(tmp_path, "sqlite", **STACK_ENV) as settings,
        api_stack(settings, "sqlite") as stack,
    ):
        write_caller(settings.skills_dir)
        options = {"env": {"ZOTERO_BRIDGE_TOKEN": TOKEN}, "no_cache": True}
        resp = stack.client.post(
            "/v1/jobs", json={"skill_id": "bridge-caller", "runtime_options": options}
        )
        assert resp.status_code == 200, resp.json
        rid = resp.json["request_id"]
        (settings.requests_dir / rid / "run_env.json").unlink()  # sent, not yet taken
        stack.start_worker(extra_env={"SKILL_RUNNER_SANDBOX": "off"})
        status = stack.wait(rid, timeout=60)
        assert status["status"] == "failed", status
        assert status["error"]["code"] == "RUNTIME_ENV_SECRET_MISSING"
        assert status["error"]["variables"] == ["ZOTERO_BRIDGE_TOKEN"]
        assert TOKEN not in stack.client.get(f"/v1/jobs/{rid}").get_data(as_text=True)
