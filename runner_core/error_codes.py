"""Every error and warning code the service emits: where each appears and what it means.

An error code is the `error.code` of a refused request (with its HTTP status) or of a run that
ended (RUN); a warning code is a run's `warnings[].code`. The error table in docs/api.md lists
exactly the error codes below with the same statuses; a unit test holds the two together.
An HTTP error raised by werkzeug with a status api/errors.py does not map is named by werkzeug.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

RUN = "run"  # the code a run ends with (its status and result carry it as `error.code`)
WARNING = "warning"  # the code of one of a run's warnings
UPGRADE = "upgrade"  # the code an engine upgrade ends with (GET /v1/engines/{engine}/upgrade)


class ErrorCode(StrEnum):
    """One code the service emits; the value is the string clients see."""

    INVALID_REQUEST = "INVALID_REQUEST"
    REQUEST_VALIDATION_FAILED = "REQUEST_VALIDATION_FAILED"
    UNAUTHORIZED = "UNAUTHORIZED"
    FORBIDDEN = "FORBIDDEN"
    NOT_FOUND = "NOT_FOUND"
    METHOD_NOT_ALLOWED = "METHOD_NOT_ALLOWED"
    UNSUPPORTED_MEDIA_TYPE = "UNSUPPORTED_MEDIA_TYPE"
    PAYLOAD_TOO_LARGE = "PAYLOAD_TOO_LARGE"
    REQUESTED_RANGE_NOT_SATISFIABLE = "REQUESTED_RANGE_NOT_SATISFIABLE"
    SKILL_NOT_FOUND = "SKILL_NOT_FOUND"
    SKILL_INVALID = "SKILL_INVALID"
    SKILL_ENGINE_UNSUPPORTED = "SKILL_ENGINE_UNSUPPORTED"
    ENGINE_RETIRED = "ENGINE_RETIRED"
    EXECUTION_MODE_UNSUPPORTED = "EXECUTION_MODE_UNSUPPORTED"
    MODEL_UNSUPPORTED = "MODEL_UNSUPPORTED"
    SCHEMA_VALIDATION_FAILED = "SCHEMA_VALIDATION_FAILED"
    INPUT_FILE_AS_INLINE = "INPUT_FILE_AS_INLINE"
    INVALID_CURSOR = "INVALID_CURSOR"
    INVALID_LOG_RANGE = "INVALID_LOG_RANGE"
    INVALID_ARTIFACT_PATH = "INVALID_ARTIFACT_PATH"
    REQUEST_NOT_FOUND = "REQUEST_NOT_FOUND"
    WORKSPACE_SOURCE_NOT_FOUND = "WORKSPACE_SOURCE_NOT_FOUND"
    WORKSPACE_SOURCE_NOT_READY = "WORKSPACE_SOURCE_NOT_READY"
    WORKSPACE_BINDING_INVALID = "WORKSPACE_BINDING_INVALID"
    ARTIFACT_NOT_FOUND = "ARTIFACT_NOT_FOUND"
    RUN_FILE_REFUSED = "RUN_FILE_REFUSED"
    RUN_FILE_NOT_FOUND = "RUN_FILE_NOT_FOUND"
    ENGINE_NOT_FOUND = "ENGINE_NOT_FOUND"
    ENGINE_VERSION_INVALID = "ENGINE_VERSION_INVALID"
    ENGINE_BUSY = "ENGINE_BUSY"
    ENGINE_UPGRADE_IN_PROGRESS = "ENGINE_UPGRADE_IN_PROGRESS"
    ENGINE_NOT_UPGRADABLE = "ENGINE_NOT_UPGRADABLE"
    ENGINE_VERSION_NOT_FOUND = "ENGINE_VERSION_NOT_FOUND"
    ENGINE_UPGRADE_FAILED = "ENGINE_UPGRADE_FAILED"
    INSTALL_NOT_FOUND = "INSTALL_NOT_FOUND"
    MEMORY_NOT_FOUND = "MEMORY_NOT_FOUND"
    RUN_NOT_FINISHED = "RUN_NOT_FINISHED"
    IDEMPOTENCY_KEY_REUSED = "IDEMPOTENCY_KEY_REUSED"
    UPLOAD_IN_PROGRESS = "UPLOAD_IN_PROGRESS"
    UPLOAD_NOT_ALLOWED = "UPLOAD_NOT_ALLOWED"
    UPLOAD_MISSING = "UPLOAD_MISSING"
    UPLOAD_NOT_ZIP = "UPLOAD_NOT_ZIP"
    UPLOAD_UNSAFE_PATH = "UPLOAD_UNSAFE_PATH"
    UPLOAD_SYMLINK = "UPLOAD_SYMLINK"
    UPLOAD_ENCRYPTED = "UPLOAD_ENCRYPTED"
    UPLOAD_ZIP_BOMB = "UPLOAD_ZIP_BOMB"
    UPLOAD_TOO_MANY_ENTRIES = "UPLOAD_TOO_MANY_ENTRIES"
    UPLOAD_DUPLICATE_ENTRY = "UPLOAD_DUPLICATE_ENTRY"
    UPLOAD_DEST_NOT_EMPTY = "UPLOAD_DEST_NOT_EMPTY"
    UPLOAD_TOO_LARGE = "UPLOAD_TOO_LARGE"
    PACKAGE_MISSING = "PACKAGE_MISSING"
    SKILL_PACKAGE_INVALID = "SKILL_PACKAGE_INVALID"
    SKILL_VERSION_NOT_INCREASED = "SKILL_VERSION_NOT_INCREASED"
    SKILL_ID_CONFLICT = "SKILL_ID_CONFLICT"
    QUEUE_FULL = "QUEUE_FULL"
    QUOTA_EXCEEDED = "QUOTA_EXCEEDED"
    DATABASE_UNAVAILABLE = "DATABASE_UNAVAILABLE"
    STORAGE_FULL = "STORAGE_FULL"
    INTERNAL_ERROR = "INTERNAL_ERROR"
    INPUT_FILE_MISSING = "INPUT_FILE_MISSING"
    INPUT_FILE_EXTENSION_NOT_ALLOWED = "INPUT_FILE_EXTENSION_NOT_ALLOWED"
    INPUT_FILE_AMBIGUOUS = "INPUT_FILE_AMBIGUOUS"
    UPLOAD_TIMEOUT = "UPLOAD_TIMEOUT"
    SKILL_SCRIPT_FAILED = "SKILL_SCRIPT_FAILED"
    PROMPT_TEMPLATE_ERROR = "PROMPT_TEMPLATE_ERROR"
    SKILL_MD_TEMPLATE_ERROR = "SKILL_MD_TEMPLATE_ERROR"
    DEPENDENCIES_UNAVAILABLE = "DEPENDENCIES_UNAVAILABLE"
    OUTPUT_VALIDATION_FAILED = "OUTPUT_VALIDATION_FAILED"
    COMPOSITE_STEP_FAILED = "COMPOSITE_STEP_FAILED"
    ARTIFACT_MISSING = "ARTIFACT_MISSING"
    OUTPUT_TOO_LARGE = "OUTPUT_TOO_LARGE"
    ENGINE_FAILED = "ENGINE_FAILED"
    ENGINE_CONFIG_INVALID = "ENGINE_CONFIG_INVALID"
    ENGINE_UNAVAILABLE = "ENGINE_UNAVAILABLE"
    CLI_NOT_INSTALLED = "CLI_NOT_INSTALLED"
    AUTH_MISSING = "AUTH_MISSING"
    MODEL_API_ERROR = "MODEL_API_ERROR"
    TIMEOUT = "TIMEOUT"
    BUDGET_EXCEEDED = "BUDGET_EXCEEDED"
    BUDGET_UNENFORCEABLE = "BUDGET_UNENFORCEABLE"
    RESOURCE_LIMIT_EXCEEDED = "RESOURCE_LIMIT_EXCEEDED"
    CANCELED_BY_USER = "CANCELED_BY_USER"
    CANCELED_BY_PARENT = "CANCELED_BY_PARENT"
    ORCHESTRATOR_RESTART_INTERRUPTED = "ORCHESTRATOR_RESTART_INTERRUPTED"
    QUEUE_NOT_SERVED = "QUEUE_NOT_SERVED"
    SESSION_RESUME_FAILED = "SESSION_RESUME_FAILED"
    RUNTIME_ENV_SECRET_MISSING = "RUNTIME_ENV_SECRET_MISSING"
    INTERACTIVE_MAX_ATTEMPT_EXCEEDED = "INTERACTIVE_MAX_ATTEMPT_EXCEEDED"
    CALLBACK_URL_REFUSED = "CALLBACK_URL_REFUSED"
    RUN_NOT_INTERACTIVE = "RUN_NOT_INTERACTIVE"
    RUN_NOT_WAITING = "RUN_NOT_WAITING"
    INTERACTION_STALE = "INTERACTION_STALE"
    INTERACTION_REPLY_INVALID = "INTERACTION_REPLY_INVALID"
    INTERACTIVE_COMPLETED_WITHOUT_DONE_MARKER = "INTERACTIVE_COMPLETED_WITHOUT_DONE_MARKER"
    INTERACTIVE_ASK_YAML_INVALID = "INTERACTIVE_ASK_YAML_INVALID"
    OUTPUT_NORMALIZED_N0 = "OUTPUT_NORMALIZED_N0"
    OUTPUT_NORMALIZED_N1 = "OUTPUT_NORMALIZED_N1"
    OUTPUT_FALLBACK_N2 = "OUTPUT_FALLBACK_N2"
    OUTPUT_REPAIRED_N3 = "OUTPUT_REPAIRED_N3"
    OUTPUT_RESULT_FILE_INVALID = "OUTPUT_RESULT_FILE_INVALID"
    ARTIFACT_SYMLINK_ESCAPE = "ARTIFACT_SYMLINK_ESCAPE"
    ARTIFACT_SYMLINK_DIR = "ARTIFACT_SYMLINK_DIR"
    ARTIFACT_MANIFEST_INVALID = "ARTIFACT_MANIFEST_INVALID"
    NETWORK_NOT_ENFORCED = "NETWORK_NOT_ENFORCED"
    NETWORK_REFUSED = "NETWORK_REFUSED"
    NETWORK_RESTRICTED = "NETWORK_RESTRICTED"
    RUNTIME_OPTION_IGNORED = "RUNTIME_OPTION_IGNORED"
    MODEL_IGNORED = "MODEL_IGNORED"
    ENGINE_VERSION_UNTESTED = "ENGINE_VERSION_UNTESTED"


@dataclass(frozen=True)
class CodeUse:
    """Where a code appears (HTTP statuses, RUN, WARNING) and what it means, in one line."""

    where: tuple[int | str, ...]
    meaning: str

    @property
    def is_error(self) -> bool:
        return WARNING not in self.where


_C = ErrorCode
CATALOGUE: dict[ErrorCode, CodeUse] = {
    _C.INVALID_REQUEST: CodeUse(
        (400,), "the body is not JSON, or not a request the endpoint reads"
    ),
    _C.REQUEST_VALIDATION_FAILED: CodeUse(
        (422,), "the request does not match the endpoint's fields"
    ),
    _C.UNAUTHORIZED: CodeUse((401,), "an API token is required and the request has no valid one"),
    _C.FORBIDDEN: CodeUse(
        (403,), "the token lacks the route's scope, or a UI session's request came cross-site"
    ),
    _C.NOT_FOUND: CodeUse((404,), "no such route"),
    _C.METHOD_NOT_ALLOWED: CodeUse((405,), "the route does not take this method"),
    _C.UNSUPPORTED_MEDIA_TYPE: CodeUse((415,), "a body of a type the endpoint does not take"),
    _C.PAYLOAD_TOO_LARGE: CodeUse(
        (413,), "a JSON body over the request size limit, or a reply's answer over its length"
    ),
    _C.REQUESTED_RANGE_NOT_SATISFIABLE: CodeUse((416,), "a download's Range is outside the file"),
    _C.SKILL_NOT_FOUND: CodeUse((404, RUN), "no installed skill with that id"),
    _C.SKILL_INVALID: CodeUse((400, RUN), "the skill does not pass its checks"),
    _C.SKILL_ENGINE_UNSUPPORTED: CodeUse((400,), "the skill does not run on that engine"),
    _C.ENGINE_RETIRED: CodeUse((400,), "the engine is retired: nobody can run it any more"),
    _C.EXECUTION_MODE_UNSUPPORTED: CodeUse((400,), "the skill does not declare that mode"),
    _C.MODEL_UNSUPPORTED: CodeUse((400,), "the model is not in the engine's list"),
    _C.SCHEMA_VALIDATION_FAILED: CodeUse(
        (400, RUN), "parameters, input or runtime_options do not match their schema"
    ),
    _C.INPUT_FILE_AS_INLINE: CodeUse((400, RUN), "a file input was given as an inline value"),
    _C.INVALID_CURSOR: CodeUse((400,), "a list cursor this API did not return"),
    _C.INVALID_LOG_RANGE: CodeUse((400,), "byte_to is before byte_from"),
    _C.INVALID_ARTIFACT_PATH: CodeUse((400,), "an artifact path that leaves the run's artifacts"),
    _C.REQUEST_NOT_FOUND: CodeUse((404,), "no job or one-off run with that request_id"),
    _C.WORKSPACE_SOURCE_NOT_FOUND: CodeUse(
        (404,), "runtime_options.workspace names a request that does not exist"
    ),
    _C.WORKSPACE_SOURCE_NOT_READY: CodeUse(
        (409, RUN), "the run whose workspace is reused did not succeed, or its files are gone"
    ),
    _C.WORKSPACE_BINDING_INVALID: CodeUse(
        (422,), "a malformed runtime_options.workspace or one of its file_bindings"
    ),
    _C.ARTIFACT_NOT_FOUND: CodeUse((404,), "no artifact at that path"),
    _C.RUN_FILE_REFUSED: CodeUse(
        (403,), "a run file preview of a path outside the run, through a symlink, or hidden"
    ),
    _C.RUN_FILE_NOT_FOUND: CodeUse((404,), "no file at that path in the run"),
    _C.ENGINE_NOT_FOUND: CodeUse((404,), "no such engine"),
    _C.ENGINE_VERSION_INVALID: CodeUse(
        (400,), "an upgrade's version is neither a semver (1.2.3, 1.2.3-beta.1) nor `latest`"
    ),
    _C.ENGINE_BUSY: CodeUse(
        (409, UPGRADE),
        "runs of the engine are active (409), or running when its upgrade was to start",
    ),
    _C.ENGINE_UPGRADE_IN_PROGRESS: CodeUse((409,), "an upgrade of the engine is queued or running"),
    _C.ENGINE_NOT_UPGRADABLE: CodeUse(
        (409,),
        "the engine's CLI is not in an npm folder the service installs into "
        "(SKILL_RUNNER_<BINARY>_BIN names it), or the engine has no npm package",
    ),
    _C.ENGINE_VERSION_NOT_FOUND: CodeUse((UPGRADE,), "npm has no such version of the package"),
    _C.ENGINE_UPGRADE_FAILED: CodeUse(
        (503, UPGRADE),
        "npm failed, the CLI was missing after it, its worker was lost, or (503) the broker "
        "took no message",
    ),
    _C.INSTALL_NOT_FOUND: CodeUse((404,), "no skill package install with that id"),
    _C.MEMORY_NOT_FOUND: CodeUse((404,), "the caller's skill memory holds no entry with that key"),
    _C.RUN_NOT_FINISHED: CodeUse((409,), "the result or bundle of a run still going"),
    _C.IDEMPOTENCY_KEY_REUSED: CodeUse(
        (409,),
        "an Idempotency-Key sent again with a different request, or a reply's idempotency_key "
        "with a different reply",
    ),
    _C.UPLOAD_IN_PROGRESS: CodeUse((409,), "a second upload while the first is coming in"),
    _C.UPLOAD_NOT_ALLOWED: CodeUse((409,), "the run takes no upload now"),
    _C.UPLOAD_MISSING: CodeUse((400,), "no zip in the upload request"),
    _C.UPLOAD_NOT_ZIP: CodeUse((400,), "the upload is not a valid zip"),
    _C.UPLOAD_UNSAFE_PATH: CodeUse(
        (400,), "an absolute or '..' path in the zip, or one too long or deep to extract"
    ),
    _C.UPLOAD_SYMLINK: CodeUse((400,), "a symlink in the zip"),
    _C.UPLOAD_ENCRYPTED: CodeUse((400,), "an encrypted entry in the zip"),
    _C.UPLOAD_ZIP_BOMB: CodeUse((400,), "an entry expands too far, or beyond its header's size"),
    _C.UPLOAD_TOO_MANY_ENTRIES: CodeUse((400,), "more entries in the zip than the limit"),
    _C.UPLOAD_DUPLICATE_ENTRY: CodeUse(
        (400,), "the same path twice (names compared in Unicode NFC), or a path under a file"
    ),
    _C.UPLOAD_DEST_NOT_EMPTY: CodeUse((400,), "the request holds an earlier upload's files"),
    _C.UPLOAD_TOO_LARGE: CodeUse(
        (413, 400), "the body (413) or its extracted size (400) is over the limit"
    ),
    _C.PACKAGE_MISSING: CodeUse(
        (400,), "no package in a skill package request (or in a temp_upload run's upload)"
    ),
    _C.SKILL_PACKAGE_INVALID: CodeUse((400,), "the skill package fails validation"),
    _C.SKILL_VERSION_NOT_INCREASED: CodeUse((400,), "an update to the same or a lower version"),
    _C.SKILL_ID_CONFLICT: CodeUse(
        (409,), "the package's id is taken by an installed skill of the other format"
    ),
    _C.QUEUE_FULL: CodeUse((429,), "too many runs are queued; retry later"),
    _C.QUOTA_EXCEEDED: CodeUse(
        (429,), "the API token's runs spent its quota (tokens-file `quota`) within the window"
    ),
    _C.DATABASE_UNAVAILABLE: CodeUse((503,), "the database does not answer; retry later"),
    _C.STORAGE_FULL: CodeUse((507, RUN), "the data directory's disk is full"),
    _C.INTERNAL_ERROR: CodeUse((500, RUN), "a bug; the server log has the traceback"),
    _C.INPUT_FILE_MISSING: CodeUse(
        (400, RUN), "a required file input (or one named by path in `input`) was not uploaded"
    ),
    _C.INPUT_FILE_EXTENSION_NOT_ALLOWED: CodeUse((RUN,), "an upload's extension is not allowed"),
    _C.INPUT_FILE_AMBIGUOUS: CodeUse((RUN,), "more than one uploaded file matches a field"),
    _C.UPLOAD_TIMEOUT: CodeUse((RUN,), "no upload arrived within the wait"),
    _C.SKILL_SCRIPT_FAILED: CodeUse(
        (RUN,), "the skill's script (of a script or hybrid skill) exited non-zero"
    ),
    _C.PROMPT_TEMPLATE_ERROR: CodeUse((RUN,), "the prompt template does not render"),
    _C.SKILL_MD_TEMPLATE_ERROR: CodeUse((RUN,), "the skill's SKILL.md does not render"),
    _C.DEPENDENCIES_UNAVAILABLE: CodeUse(
        (RUN,), "uv could not provide the skill's runtime dependencies for the engine"
    ),
    _C.OUTPUT_VALIDATION_FAILED: CodeUse((RUN,), "no output passed the output schema"),
    _C.COMPOSITE_STEP_FAILED: CodeUse(
        (RUN,),
        "a composite's step failed (not continueOnError), or a template of a step or of "
        "outputMapping failed; details name the step",
    ),
    _C.ARTIFACT_MISSING: CodeUse((RUN,), "a required artifact was not produced"),
    _C.OUTPUT_TOO_LARGE: CodeUse((RUN,), "the process wrote more than the output limit"),
    _C.ENGINE_FAILED: CodeUse((RUN,), "the engine CLI failed"),
    _C.ENGINE_CONFIG_INVALID: CodeUse(
        (400, RUN),
        "the engine's layered configuration is invalid (checked when the job is created too)",
    ),
    _C.ENGINE_UNAVAILABLE: CodeUse((RUN,), "no adapter for the run's engine"),
    _C.CLI_NOT_INSTALLED: CodeUse((RUN,), "the engine's CLI is not installed"),
    _C.AUTH_MISSING: CodeUse((RUN,), "no API key configured for the engine"),
    _C.MODEL_API_ERROR: CodeUse((RUN,), "a model call failed"),
    _C.TIMEOUT: CodeUse((RUN, UPGRADE), "the run (or an engine upgrade) passed its time limit"),
    _C.BUDGET_EXCEEDED: CodeUse(
        (409, RUN),
        "the run reached its budget (tokens or USD): stopped mid-turn, or a reply to a run "
        "that reached it does not raise it",
    ),
    _C.BUDGET_UNENFORCEABLE: CodeUse(
        (400,), "a USD budget for an engine that reports no cost and no price for its model"
    ),
    _C.RESOURCE_LIMIT_EXCEEDED: CodeUse(
        (RUN,), "a process of the run hit its process-count or memory limit"
    ),
    _C.CANCELED_BY_USER: CodeUse(
        (RUN,),
        "the run was canceled (a composite's step: its parent was; the message names the parent)",
    ),
    _C.CANCELED_BY_PARENT: CodeUse(
        (RUN,),
        "a composite's step was canceled because its parent ended (failed, timed out, or "
        "finished without it); details name the parent and its error",
    ),
    _C.ORCHESTRATOR_RESTART_INTERRUPTED: CodeUse((RUN,), "the run's worker died"),
    _C.QUEUE_NOT_SERVED: CodeUse(
        (RUN,), "the run waited past the bound on a queue no live worker consumes"
    ),
    _C.SESSION_RESUME_FAILED: CodeUse(
        (RUN,), "a waiting run had no session to resume, or the CLI could not find it"
    ),
    _C.RUNTIME_ENV_SECRET_MISSING: CodeUse(
        (RUN,), "the request named runtime_options.env variables whose kept values are gone"
    ),
    _C.INTERACTIVE_MAX_ATTEMPT_EXCEEDED: CodeUse(
        (RUN,), "an interactive run reached the skill's max_attempt turns without finishing"
    ),
    _C.CALLBACK_URL_REFUSED: CodeUse(
        (400,), "a callback_url the service will not call (not listed, or a private address)"
    ),
    _C.RUN_NOT_INTERACTIVE: CodeUse((400,), "pending/reply on a run not in interactive mode"),
    _C.RUN_NOT_WAITING: CodeUse((409,), "a reply to a run that is not waiting for one"),
    _C.INTERACTION_STALE: CodeUse((409,), "a reply to a question that is not the pending one"),
    _C.INTERACTION_REPLY_INVALID: CodeUse((400,), "a reply that does not answer the question"),
    _C.INTERACTIVE_COMPLETED_WITHOUT_DONE_MARKER: CodeUse(
        (WARNING,), "an interactive run's output validated without the __SKILL_DONE__ marker"
    ),
    _C.INTERACTIVE_ASK_YAML_INVALID: CodeUse(
        (WARNING,), "the agent's <ASK_USER_YAML> block was unusable; asked as open text"
    ),
    _C.OUTPUT_NORMALIZED_N0: CodeUse((WARNING,), "the output needed syntax-only repair"),
    _C.OUTPUT_NORMALIZED_N1: CodeUse((WARNING,), "the skill's normalizer rewrote the output"),
    _C.OUTPUT_FALLBACK_N2: CodeUse((WARNING,), "the skill's fallback produced the output"),
    _C.OUTPUT_REPAIRED_N3: CodeUse((WARNING,), "the repair step rewrote the output"),
    _C.OUTPUT_RESULT_FILE_INVALID: CodeUse(
        (WARNING,), "the skill's result file did not validate; another output was used"
    ),
    _C.ARTIFACT_SYMLINK_ESCAPE: CodeUse(
        (WARNING,), "an artifact symlink leaves the run directory or does not resolve"
    ),
    _C.ARTIFACT_SYMLINK_DIR: CodeUse((WARNING,), "a symlinked artifact directory, not followed"),
    _C.ARTIFACT_MANIFEST_INVALID: CodeUse(
        (WARNING,),
        "an artifact-manifest field names no JSON object, or an entry no file of the run",
    ),
    _C.NETWORK_NOT_ENFORCED: CodeUse(
        (WARNING,), "the skill's automation.network was not enforced for (part of) the run"
    ),
    _C.NETWORK_REFUSED: CodeUse(
        (WARNING,), "the run's network box refused a connection to a host it may not reach"
    ),
    _C.NETWORK_RESTRICTED: CodeUse(
        (WARNING,), "the skill asked for network: on, which the service forbids: boxed as off"
    ),
    _C.RUNTIME_OPTION_IGNORED: CodeUse(
        (WARNING,), "runtime_options held keys this service does not act on (kept, unused)"
    ),
    _C.MODEL_IGNORED: CodeUse(
        (WARNING,), "the request named a model, and nothing in the run runs on an engine"
    ),
    _C.ENGINE_VERSION_UNTESTED: CodeUse(
        (WARNING,), "an engine upgrade's version is not in the tested matrix (or is `latest`)"
    ),
}
del _C

__all__ = ["CATALOGUE", "RUN", "UPGRADE", "WARNING", "CodeUse", "ErrorCode"]
