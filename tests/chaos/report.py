"""What the chaos scenario checks once every run has ended, read as a client reads it (the API)
plus the ledger of executions the chaos-ledger skill keeps outside the service."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from runner_core.statuses import TERMINAL_STATUSES
from tests.chaos.load import Load, call, ledger_counts


@dataclass
class Report:
    jobs: int = 0  # jobs the clients made
    accepted: int = 0  # answered 200 with a request id
    refused: int = 0  # never accepted (refused, or no answer within the give-up time)
    lost: list[str] = field(default_factory=list)  # accepted, but missing or not terminal
    wrong: list[str] = field(default_factory=list)  # succeeded with data not from its input
    statuses: Counter = field(default_factory=Counter)
    errors: Counter = field(default_factory=Counter)  # error codes of the failed runs
    executions: int = 0  # ledger lines of accepted script jobs
    repeated: int = 0  # executions beyond the first (a declared retry allows one)
    over_limit: list[str] = field(default_factory=list)  # more executions than 1 + retries
    beyond_claims: list[str] = field(default_factory=list)  # more executions than claims
    unaccepted_executions: int = 0  # ledger files of jobs no 200 named
    post_errors: dict[str, int] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)  # run id -> "skill code: message"

    def lines(self) -> list[str]:
        return [
            f"jobs {self.jobs}, accepted {self.accepted}, refused {self.refused}, "
            f"lost {len(self.lost)}, wrong results {len(self.wrong)}",
            f"statuses {dict(self.statuses)}; failure codes {dict(self.errors)}",
            f"executions {self.executions}, repeated {self.repeated}, over the declared retries "
            f"{len(self.over_limit)}, beyond the claims {len(self.beyond_claims)}, "
            f"of jobs never accepted {self.unaccepted_executions}",
            f"POSTs answered with an error or not at all: {self.post_errors}",
        ]


def verify(base_url: str, load: Load, ledger: Path, retries: int) -> Report:
    accepted = load.accepted()
    report = Report(jobs=len(load.jobs), accepted=len(accepted), refused=len(load.refused))
    report.post_errors = dict(load.post_errors)
    counts = ledger_counts(ledger)
    for job in accepted:
        rid = job.request_id
        assert rid is not None
        status, doc = call(base_url, "GET", f"/v1/jobs/{rid}")
        if status != 200 or doc["status"] not in TERMINAL_STATUSES:
            report.lost.append(f"{rid} ({status}: {doc and doc.get('status')})")
            continue
        report.statuses[doc["status"]] += 1
        if doc["status"] == "succeeded":
            _, result = call(base_url, "GET", f"/v1/jobs/{rid}/result")
            if result["result"]["data"] != job.expect:
                report.wrong.append(f"{rid}: {result['result']['data']} != {job.expect}")
        elif doc.get("error"):
            report.errors[doc["error"]["code"]] += 1
            report.failed[doc["run_id"]] = (
                f"{job.body['skill_id']} {doc['error']['code']}: {doc['error'].get('message')}"
            )
        if job.body["skill_id"] != "chaos-ledger":
            continue
        runs = counts.pop(rid, 0)
        report.executions += runs
        report.repeated += max(0, runs - 1)
        if runs > 1 + retries:
            report.over_limit.append(f"{rid}: {runs} executions")
        if runs > doc["attempt"]:
            report.beyond_claims.append(f"{rid}: {runs} executions, {doc['attempt']} claims")
        if doc["status"] == "succeeded" and runs == 0:
            report.wrong.append(f"{rid}: succeeded without executing")
    report.unaccepted_executions = sum(counts.values())
    return report
