"""Every process of a run gets its request's variables (runner_core.run_env): the watch each
one is started with carries them, and a boxed one may reach the Host Bridge its request names
only when the operator lists that endpoint (worker.execution.network)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace

from runner_core import run_env
from runner_core.egress import Endpoint
from runner_core.engines.base import CommandSpec
from runner_core.inputs import ResolvedInputs
from runner_core.settings import load_settings
from runner_core.skills.loader import load_skill
from runner_core.workspace import RunPaths
from tests.helpers import TEST_SKILLS
from worker.execution.contexts import EntryContext
from worker.execution.network import egress_plan
from worker.execution.supervisor import Watch, run_command

BRIDGE = {"ZOTERO_BRIDGE_ENDPOINT": "http://10.0.0.7:23119/bridge/v1", "ZOTERO_BRIDGE_TOKEN": "t"}


def entry(tmp_path: Path, skill: str, **env: str) -> EntryContext:
    settings = load_settings({"SKILL_RUNNER_DATA_DIR": str(tmp_path / "data"), **env})
    run_env.write(settings.requests_dir / "req-1", BRIDGE)
    names = {name: {"redacted": True} for name in BRIDGE}
    run = SimpleNamespace(
        id="run-1", request_id="req-1", engine=None, runtime_options={"env": names}
    )
    paths = RunPaths(tmp_path / "run")
    paths.root.mkdir()
    pkg = load_skill(TEST_SKILLS / skill)
    return EntryContext(
        run,
        paths,
        pkg,
        ResolvedInputs({}, {}),
        settings,
        lambda _pkg: Watch(),  # type: ignore[arg-type]
    )


def test_each_process_of_the_run_is_started_with_its_requests_variables(tmp_path):
    ctx = entry(tmp_path, "box-probe")
    for watch in (ctx.watch(), ctx.watch(engine=True)):
        assert watch.env == BRIDGE
    script = 'echo "$ZOTERO_BRIDGE_TOKEN $ZOTERO_BRIDGE_SCOPE"'
    # the service's own variables for the process win over the request's
    spec = CommandSpec(["/bin/sh", "-c", script], tmp_path, {"PATH": "/usr/bin:/bin"})
    spec = dataclasses.replace(spec, env={**spec.env, "ZOTERO_BRIDGE_TOKEN": "service"})
    watch = dataclasses.replace(ctx.watch(), env={**BRIDGE, "ZOTERO_BRIDGE_SCOPE": "s"})
    result = run_command(spec, tmp_path / "out.txt", tmp_path / "err.txt", watch)
    assert result.exit_code == 0
    assert (tmp_path / "out.txt").read_text() == "service s\n"


def test_a_run_whose_requests_variables_are_lost_fails_at_its_start(tmp_path):
    from worker.execution.contexts import run_variables
    from worker.execution.failures import RunFailed

    ctx = entry(tmp_path, "box-probe")
    (ctx.settings.requests_dir / "req-1" / run_env.FILE).unlink()
    for start in (ctx.watch, lambda: run_variables(ctx.settings, ctx.run)):
        try:
            start()
        except RunFailed as exc:
            assert exc.code == "RUNTIME_ENV_SECRET_MISSING"
            assert exc.details == {"variables": sorted(BRIDGE)}
            assert "t" not in exc.message.split()  # names, never values
        else:
            raise AssertionError("the run went on without its variables")
    quiet = dataclasses.replace(ctx, run=SimpleNamespace(request_id="req-1", runtime_options={}))
    assert quiet.variables() == {}  # a request that named none needs no file


def test_a_script_without_network_reaches_the_bridge_only_when_the_operator_lists_it(tmp_path):
    assert egress_plan(entry(tmp_path / "a", "box-probe"), None) is None
    listed = entry(tmp_path / "b", "box-probe", SKILL_RUNNER_BRIDGE_ALLOW="10.0.0.7:23119")
    plan = egress_plan(listed, None)
    assert plan is not None and plan.allowed == {Endpoint("10.0.0.7", 23119)}
    other = entry(tmp_path / "c", "box-probe", SKILL_RUNNER_BRIDGE_ALLOW="10.0.0.8:23119")
    assert egress_plan(other, None) is None


def test_an_engine_reaches_its_provider_and_the_listed_bridge(tmp_path):
    listed = entry(tmp_path, "echo-prompt", SKILL_RUNNER_BRIDGE_ALLOW="10.0.0.7:23119")
    provider = Endpoint("api.openai.com", 443)
    plan = egress_plan(listed, "codex", {provider})
    assert plan is not None and plan.allowed == {provider, Endpoint("10.0.0.7", 23119)}


def test_a_bridge_the_box_does_not_open_is_a_warning_of_the_run(tmp_path):
    from runner_core.sandbox import Box, Limits
    from worker.execution.network import bridge_warning

    box = Box(Limits(2**30, 64, 256), bwrap="/opt/bwrap", run_dir=tmp_path, network=False)
    unlisted = entry(tmp_path / "a", "box-probe")
    warning = bridge_warning(unlisted, box, None)
    assert warning is not None and warning["code"] == "NETWORK_REFUSED"
    assert warning["details"] == {
        "host": "10.0.0.7",
        "port": 23119,
        "variable": "ZOTERO_BRIDGE_ENDPOINT",
    }
    assert "SKILL_RUNNER_BRIDGE_ALLOW" in warning["message"]
    assert "ZOTERO_BRIDGE_TOKEN" not in warning["message"]
    assert bridge_warning(unlisted, None, None) is None  # no box: the host's network
    listed = entry(tmp_path / "b", "box-probe", SKILL_RUNNER_BRIDGE_ALLOW="10.0.0.7:23119")
    assert bridge_warning(listed, box, None) is None


def test_a_composites_step_gets_the_variables_of_its_parents_request(tmp_path, monkeypatch):
    from worker import context
    from worker.composite.children import new_child

    settings = load_settings({"SKILL_RUNNER_DATA_DIR": str(tmp_path / "data")})
    monkeypatch.setattr(context, "settings", lambda: settings)
    run_env.write(settings.requests_dir / "parent-req", BRIDGE)
    parent = SimpleNamespace(id="parent-run", request_id="parent-req", owner=None)
    child = new_child(parent, "step-1", str(TEST_SKILLS / "box-probe"), {})  # type: ignore[arg-type]
    assert run_env.read(settings.requests_dir / child.new.request_id) == BRIDGE
    quiet = SimpleNamespace(id="other-run", request_id="other-req", owner=None)
    child = new_child(quiet, "step-1", str(TEST_SKILLS / "box-probe"), {})  # type: ignore[arg-type]
    assert not (settings.requests_dir / child.new.request_id).exists()
