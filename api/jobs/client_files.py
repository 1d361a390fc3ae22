"""A run's file tree and one file's preview in the shape Skill-Runner's clients read
(`/v1/jobs/{id}/files`, `/file?path=`), from the management routes' own tree and preview (the
same hidden entries, path checks and size caps)."""

from __future__ import annotations

from typing import Any

from api.jobs.conversation import files_body, preview_body
from api.jobs.rows import JobRow


def client_files(job: JobRow) -> dict[str, Any]:
    """`{request_id, run_id, entries: [{path, name, is_dir, depth, size}]}`."""
    tree = files_body(job)
    entries = [
        {
            "path": e["path"],
            "name": e["path"].rsplit("/", 1)[-1],
            "is_dir": e["type"] == "dir",
            "depth": e["path"].count("/"),
            "size": e["size"],
        }
        for e in tree["entries"]
    ]
    return {
        "request_id": job.request_id,
        "run_id": job.run_id,
        "entries": entries,
        "truncated": tree["truncated"],
    }


def client_preview(job: JobRow, path: str) -> dict[str, Any]:
    """`{request_id, run_id, path, preview: {mode, content, size, meta, detected_format}}`:
    mode `text` for text and JSON (JSON also as `json_pretty`), `binary` for anything else."""
    shown = preview_body(job, path)
    kind, text = shown.get("kind"), shown.get("text")
    readable = kind in ("text", "json") and text is not None
    preview = {
        "mode": "text" if readable else "binary",
        "content": text if readable else None,
        "size": shown.get("size"),
        "meta": f"{shown.get('mime')}, {shown.get('size')} bytes"
        + (", cut short" if shown.get("truncated") else ""),
        "detected_format": "json"
        if kind == "json"
        else ("markdown" if path.endswith(".md") else kind),
    }
    if kind == "json":
        preview["json_pretty"] = text
    if kind == "image":
        preview["data_url"] = shown.get("data_url")
    return {"request_id": job.request_id, "run_id": job.run_id, "path": path, "preview": preview}
