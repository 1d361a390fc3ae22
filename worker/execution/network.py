"""Where a boxed process of a run may connect (runner_core.egress): the plan its egress proxy
follows, and how a refusal is reported."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from runner_core import run_env
from runner_core.egress import EgressPlan, Endpoint, parse_endpoint
from runner_core.error_codes import ErrorCode
from runner_core.metrics import record_egress_refused
from runner_core.results import run_warning
from runner_core.sandbox import Box
from runner_core.skills.model import Automation
from worker.execution.contexts import EntryContext


def egress_plan(
    entry: EntryContext, engine: str | None, providers: set[Endpoint] | None = None
) -> EgressPlan | None:
    """Where a process of the run may connect when its box holds it: an engine CLI its
    provider (`providers`: runner_core.egress.provider_endpoints) and the skill's allowlist, unless the skill
    asks for the open network (`on`) or the operator keeps engines open; a script step with
    `allowlist` the hosts it names. Each also the Host Bridge its request names, when the
    operator allows that endpoint (bridge_endpoint). None: as the box's `network` says (open,
    or none at all)."""
    automation = _automation(entry)
    if automation.network == "on":
        return None
    if engine is not None:
        if entry.settings.engine_network == "open":
            return None
        allowed = set(providers or ())
    elif automation.network == "allowlist":
        allowed = set()
    else:  # a script with network off: its own loopback only, and its request's bridge
        bridge = bridge_endpoint(entry)
        return None if bridge is None else EgressPlan(frozenset({bridge}), _refusals(entry, engine))
    for item in (*automation.allowlist, *entry.settings.egress_allow):
        endpoint = parse_endpoint(item)
        if endpoint is not None:
            allowed.add(endpoint)
    bridge = bridge_endpoint(entry)
    if bridge is not None:
        allowed.add(bridge)
    return EgressPlan(frozenset(allowed), _refusals(entry, engine))


def bridge_endpoint(entry: EntryContext) -> Endpoint | None:
    """The endpoint the run's ZOTERO_BRIDGE_ENDPOINT names, when the operator lists it in
    SKILL_RUNNER_BRIDGE_ALLOW; else None. Only the operator opens a host: a request naming
    any other (the metadata service, the broker on loopback) opens nothing."""
    url = run_env.endpoint_url(entry.variables())
    endpoint = parse_endpoint(url) if url else None
    if endpoint is None:
        return None
    allowed = {parse_endpoint(item) for item in entry.settings.bridge_allow}
    return endpoint if endpoint in allowed else None


def bridge_warning(
    entry: EntryContext, box: Box | None, engine: str | None
) -> dict[str, Any] | None:
    """NETWORK_REFUSED when the run's request names a Host Bridge its box will not open (the
    operator does not list it): the skill's calls to it fail, and this says why at once."""
    url = run_env.endpoint_url(entry.variables())
    named = parse_endpoint(url) if url else None
    if named is None or box is None or box.bwrap is None or bridge_endpoint(entry) is not None:
        return None
    settings = entry.settings
    if _automation(entry).network == "on":
        return None  # the open network: nothing is cut
    if engine is not None and settings.engine_network == "open":
        return None
    return run_warning(
        ErrorCode.NETWORK_REFUSED,
        f"the run's box does not open the Host Bridge at {named} that its request names "
        f"({run_env.ENDPOINT_NAME}): SKILL_RUNNER_BRIDGE_ALLOW does not list it",
        {"host": named.host, "port": named.port, "variable": run_env.ENDPOINT_NAME},
    )


def _automation(entry: EntryContext) -> Automation:
    """The skill's automation block; its `network: on` taken as `off` when the operator
    forbids that (SKILL_RUNNER_NETWORK_ON)."""
    manifest = entry.pkg.manifest
    automation = manifest.automation if manifest is not None else Automation()
    if automation.network == "on" and entry.settings.network_on == "forbid":
        automation = replace(automation, network="off")
    return automation


REPORTED_REFUSALS = 20  # distinct endpoints a run's events name; a loop of refusals adds none


def _refusals(entry: EntryContext, engine: str | None) -> Callable[[Endpoint], None]:
    """A refusal is a count in /metrics and, the first time the run tries that endpoint (of at
    most REPORTED_REFUSALS), a `diagnostic.warning` event: a run's code trying millions of
    hosts must not write millions of events."""
    reported: set[tuple[str, int]] = set()

    def refused(endpoint: Endpoint) -> None:
        record_egress_refused(engine, endpoint.host)
        key = (endpoint.host, endpoint.port)
        if entry.events is None or key in reported or len(reported) > REPORTED_REFUSALS:
            return
        reported.add(key)
        if len(reported) > REPORTED_REFUSALS:  # once: the last event of its kind in this run
            message = (
                f"the run's network box refused connections to more than {REPORTED_REFUSALS} "
                "endpoints; further ones are not reported"
            )
            details: dict[str, Any] = {"engine": engine, "reported": REPORTED_REFUSALS}
        else:
            message = f"the run's network box refused a connection to {endpoint}"
            details = {"host": endpoint.host, "port": endpoint.port, "engine": engine}
        entry.events.emit(
            "diagnostic.warning", run_warning(ErrorCode.NETWORK_REFUSED, message, details)
        )

    return refused
