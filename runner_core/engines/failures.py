"""Typed engine failures shared by the adapters: a CLI that is not installed, a failed model
call (with the HTTP status pulled out of the CLI's error text) and a bad exit."""

from __future__ import annotations

import json
import re
from typing import Any

from runner_core.engines.base import EngineError, ProcessResult
from runner_core.engines.invocation import (
    BIN_DIR_ENV,
    REPO_BIN_DIR,
    REPO_ROOT,
    binary_env,
    resolve_binary,
)
from runner_core.error_codes import ErrorCode

# "status 429", "status: 429", "API Error: 429": a number named as the status wins over
# any other 4xx/5xx number in the text (a port, a count).
_NAMED_STATUS = re.compile(r"(?:status|API Error:?)\s*(\d{3})", re.IGNORECASE)
_ERROR_STATUS = re.compile(r"\b([45]\d\d)\b")


def http_status(text: str) -> int | None:
    """The HTTP status a CLI's error text names, else the first 4xx/5xx number in it."""
    match = _NAMED_STATUS.search(text) or _ERROR_STATUS.search(text)
    return int(match.group(1)) if match else None


def provider_error(text: str) -> tuple[str, int | None, dict[str, Any]] | None:
    """(the provider's message, the status its body names, its other fields as details) when
    `text` relays a provider's JSON error body (`{"error": {"message", "code", ...}}`, maybe
    inside the CLI's own words, e.g. ``[API Error: {...}]``); None when it holds none."""
    start = text.find("{")
    try:
        body, _ = json.JSONDecoder().raw_decode(text, start) if start != -1 else (None, 0)
    except ValueError:
        return None
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict) or not error.get("message"):
        return None
    code = error.get("code")
    status = int(str(code)) if str(code).isdigit() else None
    details = {
        f"provider_{key}": error[key]
        for key in ("type", "code", "status", "param")
        if error.get(key) not in (None, "") and not (key == "code" and status is not None)
    }
    return str(error["message"]), status, details


def missing_cli_error(binary: str) -> EngineError:
    """The typed error for a CLI that is not installed."""
    return EngineError(
        ErrorCode.CLI_NOT_INSTALLED,
        f"{binary} not found at ${binary_env(binary)}, in ${BIN_DIR_ENV}, "
        f"{REPO_BIN_DIR.relative_to(REPO_ROOT)} or PATH (run deploy/install-engines.sh)",
        {"binary": binary},
    )


def api_error(message: str, status: int | None = None, **details: Any) -> EngineError:
    """A failed model call: MODEL_API_ERROR with the HTTP status when known. A key that the
    provider refuses (401/403) is an API error too; AUTH_MISSING means no key was configured."""
    extra = {"status": status} if status is not None else {}
    return EngineError(ErrorCode.MODEL_API_ERROR, message, {**extra, **details})


def exit_error(result: ProcessResult, binary: str, stderr: str) -> EngineError | None:
    """The error of a run whose output held no typed error: missing CLI, kill or non-zero exit."""
    if result.exit_code == 0:
        return None
    if resolve_binary(binary) is None or result.exit_code == 127:
        return missing_cli_error(binary)
    tail = stderr.strip()[-2000:]
    reason = "timed out" if result.timed_out else "canceled" if result.canceled else None
    message = f"{binary} {reason}" if reason else f"{binary} exited with {result.exit_code}"
    return EngineError(
        ErrorCode.ENGINE_FAILED,
        f"{message}: {tail}" if tail else message,
        {"exit_code": result.exit_code, "timed_out": result.timed_out, "canceled": result.canceled},
    )


def process_error(
    result: ProcessResult, binary: str, stderr: str, *, printed: bool
) -> EngineError | None:
    """`exit_error`, or CLI_NOT_INSTALLED for a clean exit that printed nothing (`printed`
    False) when the binary cannot be found."""
    if result.exit_code != 0:
        return exit_error(result, binary, stderr)
    if not printed and resolve_binary(binary) is None:
        return missing_cli_error(binary)
    return None
