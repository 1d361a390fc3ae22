"""The one exception the SDK raises: the service's error body, or a transport failure; and the
command line's for a file it was told to write and cannot."""

from __future__ import annotations

import os
from typing import Any

# Codes the client itself uses when no error body came back from the service.
CONNECTION_FAILED = "CONNECTION_FAILED"  # no answer: refused, reset, timed out
UNEXPECTED_RESPONSE = "UNEXPECTED_RESPONSE"  # an answer that is not the API's error body


class SkillRunnerError(Exception):
    """A refused request (`status` >= 400 with the service's `{code, message, details,
    request_id}`) or a request that got no usable answer (`status` None)."""

    def __init__(
        self,
        status: int | None,
        code: str,
        message: str,
        details: dict[str, Any] | None = None,
        request_id: str | None = None,
    ) -> None:
        super().__init__(f"{status or '-'} {code}: {message}")
        self.status, self.code, self.message = status, code, message
        self.details = details or {}
        self.request_id = request_id

    @property
    def body(self) -> dict[str, Any]:
        """The error as the service sends it."""
        return {
            "error": {
                "code": self.code,
                "message": self.message,
                "details": self.details,
                "request_id": self.request_id,
            }
        }

    def explained(self) -> str:
        """The message, followed by the service's per-field errors (`details.errors`) that it
        does not already name: "input does not match the skill's input schema" says no more."""
        errors = self.details.get("errors")
        if not isinstance(errors, list):
            return self.message
        listed = [
            f"{e.get('path') or '(root)'}: {e['message']}"
            for e in errors
            if isinstance(e, dict) and e.get("message") and str(e["message"]) not in self.message
        ]
        return f"{self.message}: {'; '.join(listed)}" if listed else self.message

    @classmethod
    def from_response(cls, status: int, body: Any, text: str) -> SkillRunnerError:
        """From an error answer; one that is not the API's body keeps its first 500 chars."""
        error = body.get("error") if isinstance(body, dict) else None
        if isinstance(error, dict) and "code" in error:
            return cls(
                status,
                str(error["code"]),
                str(error.get("message", "")),
                error.get("details") or {},
                error.get("request_id"),
            )
        return cls(status, UNEXPECTED_RESPONSE, not_the_api(status, text))


def not_the_api(status: int, text: str, what: str = "") -> str:
    """The message of an answer that is not the API's (a proxy's, another server's): its status
    and the start of its body, so an empty body still says what came back."""
    text = text.strip()
    return f"HTTP {status}{what}: {text[:500]}" if text else f"HTTP {status} with an empty body"


class OutputNotWritable(ValueError):
    """A path given to the command line cannot be written: one line naming it and the reason
    (a ValueError, so the command line exits 2 as for any bad argument)."""

    def __init__(self, path: str | os.PathLike[str], exc: OSError) -> None:
        super().__init__(f"cannot write {os.fspath(path)}: {exc.strerror or exc}")
