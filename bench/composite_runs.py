"""Shared by the composite figures: a composite run through the service, its children's rows
as the status documents show them, and plain jobs of the same skills posted by a client."""

from __future__ import annotations

import uuid

from bench.codex_throughput import submit_batch
from bench.jobs import parse_time, wait_terminal
from bench.stack import Stack


def run_composite(stack: Stack, skill_id: str) -> tuple[dict, list[dict]]:
    """One composite run (a unique input: no cache hit): its status document and its
    children's, in step order."""
    client = stack.client()
    resp = client.post("/v1/jobs", {"skill_id": skill_id, "input": {"nonce": uuid.uuid4().hex}})
    if resp.status != 200:
        raise RuntimeError(f"POST /v1/jobs: {resp.status} {resp.body}")
    rid = resp.body["request_id"]
    parent = wait_terminal(client, [rid])[rid]
    if parent["status"] != "succeeded":
        raise RuntimeError(f"{skill_id} ended {parent['status']}: {parent.get('error')}")
    steps = client.get(f"/v1/jobs/{rid}/result").body["result"]["steps"]
    children = [client.get(f"/v1/jobs/{s['request_id']}").body for s in steps]
    return parent, children


def plain_batch(stack: Stack, skill_id: str, inputs: list[dict]) -> list[dict]:
    """The same skill as plain jobs, all posted at once; their status documents."""
    _, ids = submit_batch(stack, len(inputs), lambda i: {"skill_id": skill_id, "input": inputs[i]})
    statuses = wait_terminal(stack.client(), ids)
    return [statuses[rid] for rid in ids]


def span(doc: dict, start: str = "started_at", end: str = "finished_at") -> float:
    return parse_time(doc[end]) - parse_time(doc[start])


def nonce() -> str:
    return uuid.uuid4().hex
