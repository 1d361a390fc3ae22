"""The API's routes as the OpenAPI document describes them: every (path, method), its tag,
its responses and, for the routes every kind of run shares, its summary. The run routes are
registered from one table for jobs and one-off runs; this pins what clients see of them."""

from __future__ import annotations

UNPROCESSABLE = "#/components/responses/UNPROCESSABLE_ENTITY"

# (path, method) -> (tag, {status: schema of the 200, or the 422's $ref})
OPERATIONS = {
    ("/healthz", "get"): ("health", {"200": "Health", "503": "Health"}),
    ("/v1/engines", "get"): ("engines", {"200": "EngineSummary[]"}),
    ("/v1/engines/{engine}", "get"): ("engines", {"200": "EngineDetail"}),
    ("/v1/engines/{engine}/models", "get"): ("engines", {"200": "EngineModels"}),
    ("/v1/engines/{engine}/upgrade", "get"): ("engines", {"200": "EngineUpgrade"}),
    ("/v1/engines/{engine}/upgrade", "post"): (
        "engines",
        {"202": "EngineUpgrade", "422": "#/components/responses/UNPROCESSABLE_ENTITY"},
    ),
    ("/v1/skills/{skill_id}", "delete"): ("skills", {"200": "SkillDeleted"}),
    ("/v1/management/audit", "get"): ("management", {"200": "AuditPage", "422": UNPROCESSABLE}),
    ("/v1/jobs", "get"): ("jobs", {"200": "JobList", "422": UNPROCESSABLE}),
    ("/v1/jobs", "post"): ("jobs", {"200": "JobCreated", "422": UNPROCESSABLE}),
    ("/v1/jobs/cleanup", "post"): ("cleanup", {"200": "CleanupResult", "422": UNPROCESSABLE}),
    ("/v1/memory", "get"): ("memory", {"200": "MemoryList", "422": UNPROCESSABLE}),
    ("/v1/memory/{key}", "get"): ("memory", {"200": "MemoryEntry"}),
    ("/v1/memory/{key}", "delete"): ("memory", {"200": "Forgotten"}),
    ("/v1/sessions/{session_id}", "get"): (
        "memory",
        {"200": "SessionHistory", "422": UNPROCESSABLE},
    ),
    ("/v1/sessions/{session_id}", "delete"): ("memory", {"200": "SessionCleared"}),
    ("/v1/jobs/{request_id}", "get"): ("jobs", {"200": "JobStatus", "422": UNPROCESSABLE}),
    ("/v1/jobs/{request_id}/artifacts", "get"): ("run_files", {"200": "ArtifactManifest"}),
    ("/v1/jobs/{request_id}/artifacts/{path}", "get"): ("run_files", {"200": "*/*"}),
    ("/v1/jobs/{request_id}/bundle", "get"): ("run_files", {"200": "application/zip"}),
    ("/v1/jobs/{request_id}/cancel", "post"): ("jobs", {"200": "CancelResult"}),
    ("/v1/jobs/{request_id}/interaction/pending", "get"): ("jobs", {"200": "PendingInteraction"}),
    ("/v1/jobs/{request_id}/events", "get"): (
        "jobs",
        {"200": "text/event-stream", "422": UNPROCESSABLE},
    ),
    ("/v1/jobs/{request_id}/webhooks", "get"): ("jobs", {"200": "WebhookLog"}),
    ("/v1/jobs/{request_id}/events/history", "get"): (
        "jobs",
        {"200": "EventHistory", "422": UNPROCESSABLE},
    ),
    ("/v1/jobs/{request_id}/interaction/reply/files", "post"): (
        "jobs",
        {"200": "ReplyResult"},
    ),
    ("/v1/jobs/{request_id}/interaction/reply", "post"): (
        "jobs",
        {"200": "ReplyResult", "422": UNPROCESSABLE},
    ),
    ("/v1/jobs/{request_id}/logs", "get"): ("jobs", {"200": "JobLogs"}),
    ("/v1/jobs/{request_id}/logs/range", "get"): (
        "jobs",
        {"200": "LogRange", "422": UNPROCESSABLE},
    ),
    ("/v1/jobs/{request_id}/bundle/debug", "get"): ("run_files", {"200": "application/zip"}),
    ("/v1/jobs/{request_id}/chat", "get"): (
        "jobs",
        {"200": "text/event-stream", "422": UNPROCESSABLE},
    ),
    ("/v1/jobs/{request_id}/chat/history", "get"): (
        "jobs",
        {"200": "EventHistory", "422": UNPROCESSABLE},
    ),
    ("/v1/jobs/{request_id}/file", "get"): (
        "jobs",
        {"200": "ClientFilePreview", "422": UNPROCESSABLE},
    ),
    ("/v1/jobs/{request_id}/files", "get"): ("jobs", {"200": "ClientRunFiles"}),
    ("/v1/temp-skill-runs/{request_id}/bundle/debug", "get"): (
        "temp_skill_runs",
        {"200": "application/zip"},
    ),
    ("/v1/temp-skill-runs/{request_id}/chat", "get"): (
        "temp_skill_runs",
        {"200": "text/event-stream", "422": UNPROCESSABLE},
    ),
    ("/v1/temp-skill-runs/{request_id}/chat/history", "get"): (
        "temp_skill_runs",
        {"200": "EventHistory", "422": UNPROCESSABLE},
    ),
    ("/v1/temp-skill-runs/{request_id}/file", "get"): (
        "temp_skill_runs",
        {"200": "ClientFilePreview", "422": UNPROCESSABLE},
    ),
    ("/v1/temp-skill-runs/{request_id}/files", "get"): (
        "temp_skill_runs",
        {"200": "ClientRunFiles"},
    ),
    ("/v1/jobs/{request_id}/result", "get"): ("jobs", {"200": "JobResult", "422": UNPROCESSABLE}),
    ("/v1/jobs/{request_id}/upload", "post"): ("jobs", {"200": "JobUploaded"}),
    ("/v1/management/engines", "get"): ("management", {"200": "EngineList"}),
    ("/v1/management/engines/{engine}", "get"): ("management", {"200": "EngineDetail"}),
    ("/v1/management/runs", "get"): (
        "management",
        {"200": "ManagementRunList", "422": UNPROCESSABLE},
    ),
    ("/v1/management/runtime-options", "get"): ("management", {"200": "RuntimeOptionsInfo"}),
    ("/v1/management/runs/{request_id}", "get"): (
        "management",
        {"200": "RunConversationState"},
    ),
    ("/v1/management/runs/{request_id}/cancel", "post"): ("management", {"200": "CancelResult"}),
    ("/v1/management/runs/{request_id}/events", "get"): (
        "management",
        {"200": "text/event-stream", "422": UNPROCESSABLE},
    ),
    ("/v1/management/runs/{request_id}/events/history", "get"): (
        "management",
        {"200": "EventHistory", "422": UNPROCESSABLE},
    ),
    ("/v1/management/runs/{request_id}/file", "get"): (
        "management",
        {"200": "FilePreview", "422": UNPROCESSABLE},
    ),
    ("/v1/management/runs/{request_id}/files", "get"): ("management", {"200": "RunFiles"}),
    ("/v1/management/runs/{request_id}/logs/range", "get"): (
        "management",
        {"200": "LogRange", "422": UNPROCESSABLE},
    ),
    ("/v1/management/runs/{request_id}/pending", "get"): (
        "management",
        {"200": "PendingInteraction"},
    ),
    ("/v1/management/runs/{request_id}/reply", "post"): (
        "management",
        {"200": "ReplyResult", "422": UNPROCESSABLE},
    ),
    ("/v1/management/skills", "get"): ("management", {"200": "SkillList"}),
    ("/v1/management/skills/{skill_id}", "get"): ("management", {"200": "SkillDetail"}),
    ("/v1/management/skills/{skill_id}/schemas", "get"): ("management", {"200": "SkillSchemas"}),
    ("/v1/skill-packages", "post"): ("skill_packages", {"200": "InstallStatus"}),
    ("/v1/skill-packages/{install_id}", "get"): ("skill_packages", {"200": "InstallStatus"}),
    ("/v1/skills", "get"): ("skills", {"200": "SkillSummary[]", "422": UNPROCESSABLE}),
    ("/v1/skills/{skill_id}", "get"): ("skills", {"200": "SkillDetail"}),
    ("/v1/temp-skill-runs", "post"): ("temp_skill_runs", {"200": "TempRunCreated"}),
    ("/v1/temp-skill-runs/{request_id}", "get"): (
        "temp_skill_runs",
        {"200": "JobStatus", "422": UNPROCESSABLE},
    ),
    ("/v1/temp-skill-runs/{request_id}/artifacts", "get"): (
        "temp_skill_runs",
        {"200": "ArtifactManifest"},
    ),
    ("/v1/temp-skill-runs/{request_id}/artifacts/{path}", "get"): (
        "temp_skill_runs",
        {"200": "*/*"},
    ),
    ("/v1/temp-skill-runs/{request_id}/bundle", "get"): (
        "temp_skill_runs",
        {"200": "application/zip"},
    ),
    ("/v1/system/handshake", "post"): (
        "system",
        {"200": "HandshakeResponse", "422": UNPROCESSABLE},
    ),
    ("/v1/system/ping", "get"): ("system", {"204": "none"}),
    ("/v1/temp-skill-runs/{request_id}/cancel", "post"): (
        "temp_skill_runs",
        {"200": "CancelResult"},
    ),
    ("/v1/temp-skill-runs/{request_id}/logs", "get"): ("temp_skill_runs", {"200": "JobLogs"}),
    ("/v1/temp-skill-runs/{request_id}/events", "get"): (
        "temp_skill_runs",
        {"200": "text/event-stream", "422": UNPROCESSABLE},
    ),
    ("/v1/temp-skill-runs/{request_id}/events/history", "get"): (
        "temp_skill_runs",
        {"200": "EventHistory", "422": UNPROCESSABLE},
    ),
    ("/v1/temp-skill-runs/{request_id}/interaction/pending", "get"): (
        "temp_skill_runs",
        {"200": "PendingInteraction"},
    ),
    ("/v1/temp-skill-runs/{request_id}/interaction/reply/files", "post"): (
        "temp_skill_runs",
        {"200": "ReplyResult"},
    ),
    ("/v1/temp-skill-runs/{request_id}/interaction/reply", "post"): (
        "temp_skill_runs",
        {"200": "ReplyResult", "422": UNPROCESSABLE},
    ),
    ("/v1/temp-skill-runs/{request_id}/logs/range", "get"): (
        "temp_skill_runs",
        {"200": "LogRange", "422": UNPROCESSABLE},
    ),
    ("/v1/temp-skill-runs/{request_id}/result", "get"): (
        "temp_skill_runs",
        {"200": "JobResult", "422": UNPROCESSABLE},
    ),
    ("/v1/temp-skill-runs/{request_id}/upload", "post"): (
        "temp_skill_runs",
        {"200": "JobUploaded"},
    ),
}

RUN_ROUTE_SUMMARIES = {
    (
        "/v1/jobs/{request_id}",
        "get",
    ): "Status and summary of a job; `wait_sec` waits (long poll) for the run to end.",
    (
        "/v1/jobs/{request_id}/bundle",
        "get",
    ): "Download the run bundle zip (result + artifacts + manifest; whole run with debug).",
    (
        "/v1/jobs/{request_id}/cancel",
        "post",
    ): "Cancel an active run; a finished run answers accepted=false.",
    (
        "/v1/jobs/{request_id}/logs",
        "get",
    ): "Snapshot of the prompt, stdout and stderr (last 2 MiB of each).",
    (
        "/v1/jobs/{request_id}/logs/range",
        "get",
    ): "A byte range of one log (stdout, stderr or prompt), at most 1 MiB: follow a run by\n"
    "asking again from the last answer's `byte_to` until its status is terminal and\n"
    "`byte_to` reaches `size`.",
    (
        "/v1/jobs/{request_id}/result",
        "get",
    ): "The final structured result (valid against the skill's output schema); 409 while\n"
    "the run is active, unless it ends within `wait_sec`.",
    (
        "/v1/jobs/{request_id}/upload",
        "post",
    ): "Upload the input zip (multipart field `file`, or a raw application/zip body).",
    (
        "/v1/temp-skill-runs/{request_id}",
        "get",
    ): "Status and summary of a one-off run; `wait_sec` waits (long poll) for its end.",
    (
        "/v1/temp-skill-runs/{request_id}/bundle",
        "get",
    ): "Download the run bundle zip (409 RUN_NOT_FINISHED while it runs).",
    (
        "/v1/temp-skill-runs/{request_id}/cancel",
        "post",
    ): "Cancel an active one-off run; a finished run answers accepted=false.",
    (
        "/v1/temp-skill-runs/{request_id}/logs",
        "get",
    ): "Snapshot of the prompt, stdout and stderr (last 2 MiB of each).",
    (
        "/v1/temp-skill-runs/{request_id}/logs/range",
        "get",
    ): "A byte range of one log (as /v1/jobs/{request_id}/logs/range).",
    (
        "/v1/temp-skill-runs/{request_id}/result",
        "get",
    ): "The final structured result (409 RUN_NOT_FINISHED while it runs, unless it ends\n"
    "within `wait_sec`).",
    (
        "/v1/temp-skill-runs/{request_id}/upload",
        "post",
    ): "Upload the input zip (multipart field `file`, or a raw application/zip body).",
}


def _response(doc: dict) -> str:
    if "$ref" in doc:
        return doc["$ref"]
    if "content" not in doc:  # no body
        return "none"
    if "application/json" not in doc["content"]:  # a stream or a file: its media type
        return next(iter(doc["content"]))
    schema = doc["content"]["application/json"]["schema"]
    if schema.get("type") == "array":
        return schema["items"]["$ref"].rsplit("/", 1)[-1] + "[]"
    return schema["$ref"].rsplit("/", 1)[-1]


def _operations(spec: dict) -> dict:
    return {
        (path, method): op
        for path, ops in spec["paths"].items()
        for method, op in ops.items()
        if method != "parameters"
    }


def test_every_route_keeps_its_path_method_tag_and_response_schemas(client):
    operations = _operations(client.get("/openapi.json").json)
    described = {
        key: (
            op["tags"][0],
            {
                status: _response(doc)
                for status, doc in op["responses"].items()
                if status != "default"
            },
        )
        for key, op in operations.items()
    }
    assert described == OPERATIONS


def test_the_shared_run_routes_keep_each_kinds_summary(client):
    operations = _operations(client.get("/openapi.json").json)
    assert {key: operations[key]["summary"] for key in RUN_ROUTE_SUMMARIES} == RUN_ROUTE_SUMMARIES


def test_timestamps_are_documented_as_plain_strings(client):
    schemas = client.get("/openapi.json").json["components"]["schemas"]
    assert schemas["JobStatus"]["properties"]["created_at"] == {"type": "string"}
    assert schemas["JobStatus"]["properties"]["queued_at"] == {"type": "string", "nullable": True}
    assert schemas["JobStatus"]["properties"]["warnings"] == {"type": "array", "items": {}}
    assert schemas["InstallStatus"]["properties"]["finished_at"] == {
        "type": "string",
        "nullable": True,
    }


def test_pages_of_jobs_document_their_items_as_job_status(client):
    # the items are written by api/schemas/status_document.py, documented by the schema
    schemas = client.get("/openapi.json").json["components"]["schemas"]
    job_status = {"type": "array", "items": {"$ref": "#/components/schemas/JobStatus"}}
    assert schemas["JobList"]["properties"]["items"] == job_status
    assert schemas["ManagementRunList"]["properties"]["runs"] == job_status
    assert schemas["ManagementRunList"]["properties"]["items"] == job_status


def test_each_route_has_its_own_endpoint(app):
    rules = [rule for rule in app.url_map.iter_rules() if rule.rule.startswith("/v1/")]
    assert len({rule.endpoint for rule in rules}) == len(rules)
