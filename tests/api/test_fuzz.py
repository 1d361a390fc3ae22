"""The API under fuzzing: schemathesis generates requests from the served OpenAPI document
for every operation, on a server with and one without an API token; no answer is a 5xx, and
every answer's status code, content type, headers and body are the ones the document declares
(a status not listed is held to the `default` error body). A request id in a path is, in part
of the examples, one of a few real jobs (waiting for its upload, queued, finished with files),
so the fuzzer gets past the 404s."""

from __future__ import annotations

import hypothesis
import pytest
import schemathesis
from hypothesis import strategies as st
from schemathesis.checks import positive_data_acceptance
from sqlalchemy import update

from api import create_app
from runner_core.error_codes import CATALOGUE
from runner_core.store.models import Request, Run, utcnow
from tests.helpers import migrated_settings, upload_body

pytestmark = pytest.mark.fuzz

TOKEN = "fuzz-token-0123456789abcdef"
EXAMPLES = 12  # per operation and server: the tier stays a few minutes long


def real_jobs(client, app) -> list[str]:
    """Request ids of a job waiting for its upload, a queued one and a finished one."""
    waiting, finished = (
        client.post(
            "/v1/jobs", json={"skill_id": "demo-prime-number", "parameter": {"divisor": 2}}
        ).json["request_id"]
        for _ in range(2)
    )
    client.post(f"/v1/jobs/{finished}/upload", data=upload_body({"input_file.txt": "100\n"}))
    queued = client.post(
        "/v1/jobs", json={"skill_id": "fenced-json", "input": {"text": "hi"}}
    ).json["request_id"]
    with app.extensions["db"]() as session:
        run_id = session.get(Request, finished).run_id
        session.execute(
            update(Run).where(Run.id == run_id).values(status="succeeded", finished_at=utcnow())
        )
        session.commit()
    root = app.config["SETTINGS"].runs_dir / run_id
    for rel, text in {
        "result/result.json": '{"status": "succeeded", "data": {"n": 1}}',
        "artifacts/notes.md": "# notes\n",
        "logs/stdout.txt": "line one\nline two\n",
        "logs/stderr.txt": "",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return [waiting, queued, finished]


@pytest.fixture(params=["open", "token"])
def served(request, tmp_path, skills_root, queue):
    """(schema, headers, request ids) of a served app without or with an API token."""
    env = {"SKILL_RUNNER_API_TOKEN": TOKEN} if request.param == "token" else {}
    settings = migrated_settings(tmp_path, **env)
    app = create_app({"SETTINGS": settings, "QUEUE": queue, "TESTING": True})
    headers = {"Authorization": f"Bearer {TOKEN}"} if env else {}
    client = app.test_client()
    client.environ_base.update({"HTTP_AUTHORIZATION": headers.get("Authorization", "")})
    jobs = real_jobs(client, app)
    yield schemathesis.openapi.from_wsgi("/openapi.json", app), headers, jobs
    app.extensions["db"].kw["bind"].dispose()


def error_code_is_catalogued(ctx, response, case) -> None:
    """An error answer names a code of the catalogue (docs/api.md's table)."""
    if response.status_code >= 400 and "json" in response.headers.get("content-type", [""])[0]:
        code = response.json()["error"]["code"]
        assert code in CATALOGUE, f"error code {code!r} is not in the catalogue"


def fuzz(operation, headers: dict[str, str], jobs: list[str]) -> None:
    @hypothesis.given(case=operation.as_strategy(), job=st.sampled_from([None, *jobs]))
    @hypothesis.settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=list(hypothesis.HealthCheck),
        derandomize=True,
        database=None,
    )
    def check(case, job) -> None:
        if job and "request_id" in (case.path_parameters or {}):
            case.path_parameters["request_id"] = job
        if isinstance((case.query or {}).get("wait_sec"), int):  # a long poll ends in 1 s
            case.query["wait_sec"] = min(case.query["wait_sec"], 1)
        # A schema-valid request may still be refused for what no schema says (a zip that is
        # none, a cursor this API did not issue): those refusals have tests of their own.
        case.call_and_validate(
            headers=headers,
            excluded_checks=[positive_data_acceptance],
            additional_checks=[error_code_is_catalogued],
        )

    check()


def test_api_answers_as_documented(served):
    """Every operation: no 5xx; status, content type, headers and body as documented."""
    schema, headers, jobs = served
    failures = []
    for result in schema.get_all_operations():
        operation = result.ok()
        try:
            fuzz(operation, headers, jobs)
        except (Exception, BaseExceptionGroup) as exc:  # every operation is tried and reported
            failures.append(f"{operation.label}: {str(exc)[:1500]}")
    assert not failures, "\n\n".join(failures)
