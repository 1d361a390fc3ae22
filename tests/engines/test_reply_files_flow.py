"""A reply made of files on a real interactive codex run (REST -> Redis -> worker -> codex ->
fake LLM): the files land in the run, the next turn's message names them, the run succeeds."""

from __future__ import annotations

import io
import json

from tests.engines.test_interactive_jobs import DONE, TERMINAL_STATUSES, service, start, wait

__all__ = ["service"]  # the module-scoped worker + fake LLM of the interactive tests


def test_files_answer_a_question_and_the_next_turn_reads_their_paths(service):
    client = service["client"]
    rid = start(service)
    status = wait(service, rid)
    assert status["status"] == "waiting_user", status
    iid = status["pending_interaction_id"]
    meta = {
        "interaction_id": iid,
        "message": "use this",
        "bindings": [{"slot": "paper", "file_index": 0}],
    }
    answer = client.post(
        f"/v1/jobs/{rid}/interaction/reply/files",
        data={"metadata": json.dumps(meta), "files": [(io.BytesIO(b"%PDF-1.7 x"), "my paper.pdf")]},
        content_type="multipart/form-data",
    )
    assert answer.status_code == 200, answer.json
    status = wait(service, rid, TERMINAL_STATUSES)
    assert status["status"] == "succeeded", status
    assert client.get(f"/v1/jobs/{rid}/result").json["result"]["data"] == DONE
    path = f"uploads/interaction-{iid}/paper/my paper.pdf"
    asked = [r.raw for r in service["llm"].requests if path in r.raw]
    assert asked, "no model request named the stored file"
    files = {e["path"] for e in client.get(f"/v1/jobs/{rid}/files").json["entries"]}
    assert path in files
