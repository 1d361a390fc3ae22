"""Input resolution: strict key matching of uploads, inline values, parameters."""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from copy import deepcopy
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

from runner_core.bounded_cache import BoundedCache
from runner_core.error_codes import ErrorCode
from runner_core.schema_refs import deref, resolved_properties
from runner_core.schema_regex import time_budget
from runner_core.schema_validators import all_errors, new_validator, validator_class
from runner_core.uploads import nfc


class InputError(Exception):
    """Bad input: carries the error code and details the API and the run record show."""

    def __init__(self, code: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details or {}


@dataclass
class ResolvedInputs:
    """The `input` and `parameter` contexts a run executes with."""

    input: dict[str, Any] = field(default_factory=dict)
    parameter: dict[str, Any] = field(default_factory=dict)


TOO_DEEP_TO_VALIDATE = "the value, or the schema through its $ref, nests too deeply to validate"
# (id(schema), make) -> (schema, made)
_by_identity: BoundedCache[tuple, tuple[Any, Any]] = BoundedCache(256)


def by_identity(schema: Any, make):
    """`make(schema)`, made once per schema object: a skill's schemas are loaded once per
    version and never changed, so a job POST and a run need not build their validators again.
    The entry holds the schema itself, so its id is not reused."""
    key = (id(schema), make)
    hit = _by_identity.get(key)
    if hit is not None and hit[0] is schema:
        return hit[1]
    made = make(schema)
    _by_identity.put(key, (schema, made))
    return made


def _validator(schema: dict[str, Any]):
    return new_validator(validator_class(schema), schema)


def schema_errors(schema: dict[str, Any], instance: Any) -> list[dict[str, Any]]:
    """Every validation error of `instance`, as {path, message, validator}."""
    try:
        errors = sorted(
            all_errors(by_identity(schema, _validator), instance),
            key=lambda e: list(e.absolute_path),
        )
    except RecursionError:  # a deep value under a recursive `$ref`, or a `$ref` loop
        return [_too_deep()]
    return [
        {
            "path": "/".join(str(p) for p in e.absolute_path),
            "message": e.message,
            "validator": str(e.validator),
        }
        for e in errors
    ]


def _too_deep() -> dict[str, Any]:
    return {"path": "", "message": TOO_DEEP_TO_VALIDATE, "validator": "depth"}


def apply_defaults(
    schema: dict[str, Any], value: dict[str, Any], root: Any = None
) -> dict[str, Any]:
    """A copy of `value` with each missing property's `default` filled in (nested objects too,
    and properties defined through a local `$ref` of the schema `root`)."""
    root = schema if root is None else root
    result = deepcopy(value)
    for key, prop in schema.get("properties", {}).items():
        prop = deref(root, prop)
        if not isinstance(prop, dict):
            continue
        if key not in result and "default" in prop:
            result[key] = deepcopy(prop["default"])
        if isinstance(result.get(key), dict) and prop.get("type") == "object":
            result[key] = apply_defaults(prop, result[key], root)
    return result


def validate_parameters(schema: dict[str, Any], parameter: Any) -> dict[str, Any]:
    """Parameters with defaults applied; InputError SCHEMA_VALIDATION_FAILED if invalid."""
    if parameter is None:
        parameter = {}
    if not isinstance(parameter, dict):
        raise InputError(
            ErrorCode.SCHEMA_VALIDATION_FAILED,
            "parameter must be a JSON object",
            {"schema": "parameter"},
        )
    try:
        filled = apply_defaults(schema, parameter)
    except RecursionError:  # its copy recurses once per level of the value
        filled, errors = parameter, [_too_deep()]
    else:
        errors = schema_errors(schema, filled)
    if errors:
        raise InputError(
            ErrorCode.SCHEMA_VALIDATION_FAILED,
            "parameter does not match the skill's parameter schema: "
            + "; ".join(f"{e['path'] or '(root)'}: {e['message']}" for e in errors),
            {"schema": "parameter", "errors": errors},
        )
    return filled


def file_fields(input_schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Input properties read from uploads (`x-input-source: file`, the default), each with its
    local `$ref` resolved (its source and `extensions` may be in the definition)."""
    return {
        k: v
        for k, v in resolved_properties(input_schema).items()
        if isinstance(v, dict) and v.get("x-input-source", "file") == "file"
    }


def validate_inline(input_schema: dict[str, Any], inline: Any) -> dict[str, Any]:
    """Inline input values: only inline fields allowed; InputError when a file field is sent inline."""
    if inline is None:
        return {}
    if not isinstance(inline, dict):
        raise InputError(
            ErrorCode.SCHEMA_VALIDATION_FAILED, "input must be a JSON object", {"schema": "input"}
        )
    as_files = sorted(set(inline) & set(file_fields(input_schema)))
    if as_files:
        raise InputError(
            ErrorCode.INPUT_FILE_AS_INLINE,
            "file inputs must be uploaded, not sent inline: " + ", ".join(as_files),
            {"fields": as_files},
        )
    return dict(inline)


MAX_FILE_CHOICES = 6  # file inputs whose every choice of presence is tried: 64 validations


def inline_errors(
    input_schema: dict[str, Any], inline: dict[str, Any], named: Collection[str] = ()
) -> list[dict[str, Any]]:
    """The errors of a job's inline input that no upload can mend. Which files come is not
    known yet: the input is checked with each choice of the file inputs present (`named` ones
    always, as their path names them) and passes when one choice does (an `anyOf` of a file
    and a text). Else the errors are those with every file present, less those about a file's
    own value (the runner sets it at the run's start, when the whole input is checked again)."""
    files = file_fields(input_schema)
    unsure = [k for k in files if k not in named]
    if len(unsure) <= MAX_FILE_CHOICES:
        choices = [c for n in range(len(unsure), -1, -1) for c in combinations(unsure, n)]
    else:
        choices = [tuple(unsure), ()]
    first: list[dict[str, Any]] | None = None
    with time_budget():  # the patterns of all the choices share one validation's time
        for chosen in choices:  # every file present first: the errors reported if none passes
            value = {**inline, **{k: f"uploads/{k}" for k in (*named, *chosen)}}
            errors = [
                e
                for e in schema_errors(input_schema, value)
                if e["path"].split("/")[0] not in files
            ]
            if not errors:
                return []
            first = errors if first is None else first
    return first or []


def match_upload(uploads: Path, key: str, extensions: list[str]) -> Path | None:
    """The upload for field `key`: `uploads/key` or `uploads/key<ext>` with an allowed ext,
    compared in NFC as upload names are stored. A key that is a path (a separator, `.`, `..`)
    names no upload: nothing outside `uploads`."""
    if not key or "/" in key or "\\" in key or key in (".", ".."):
        return None
    stem = nfc(key)
    names = dict.fromkeys(nfc(f"{stem}{ext}") for ext in ["", *extensions])  # "" lists it once
    found = [uploads / name for name in names if (uploads / name).is_file()]
    if len(found) > 1:
        raise InputError(
            ErrorCode.INPUT_FILE_AMBIGUOUS,
            f"more than one upload matches input '{key}': " + ", ".join(p.name for p in found),
            {"field": key},
        )
    if found:
        return found[0]
    # by prefix, not glob: a key may hold * ? [ ]
    others = (
        sorted(p.name for p in uploads.iterdir() if p.name.startswith(f"{stem}."))
        if uploads.is_dir()
        else []
    )
    if others:
        raise InputError(
            ErrorCode.INPUT_FILE_EXTENSION_NOT_ALLOWED,
            f"upload {others[0]} for input '{key}' has an extension outside "
            f"{extensions or ['(none)']}",
            {"field": key, "files": others, "allowed": extensions},
        )
    return None


UPLOAD_DIR_PREFIX = "inputs/"


def upload_path(key: str, value: Any) -> str | None:
    """The uploads-relative path a file input's value names, the way existing clients send it:
    `<key>/<name>` or `inputs/<key>/<name>` (the field segment must be the key itself, so
    inputs stay matched by key); None for any other value. In NFC, as upload names are stored."""
    if not isinstance(value, str) or "\\" in value or value.startswith("/"):
        return None
    value = nfc(value)
    rel = value.removeprefix(UPLOAD_DIR_PREFIX)
    segments = rel.split("/")
    if len(segments) < 2 or segments[0] != nfc(key):
        return None
    if any(s in ("", ".", "..") for s in segments):
        return None
    return value


def path_inputs(input_schema: dict[str, Any], inline: Any) -> dict[str, str]:
    """File inputs named by path in `input` (see upload_path): key -> uploads-relative path."""
    if not isinstance(inline, dict):
        return {}
    named = {k: upload_path(k, inline.get(k)) for k in file_fields(input_schema) if k in inline}
    return {k: rel for k, rel in named.items() if rel is not None}


def _bound_file(uploads: Path, rel: str) -> Path | None:
    """The bound file at `uploads/<rel>`; None when it is missing or leaves `uploads`."""
    target = (uploads / rel).resolve()
    return target if target.is_relative_to(uploads.resolve()) and target.is_file() else None


def _check_named_extension(key: str, prop: dict[str, Any], rel: str | None) -> None:
    """A file named by path keeps to the field's `extensions` as a key-matched one does."""
    allowed = list(prop.get("extensions", []))
    if rel is None or not allowed or any(rel.endswith(ext) for ext in allowed):
        return
    raise InputError(
        ErrorCode.INPUT_FILE_EXTENSION_NOT_ALLOWED,
        f"upload {rel} for input '{key}' has an extension outside {allowed}",
        {"field": key, "files": [rel], "allowed": allowed},
    )


def resolve_inputs(
    input_schema: dict[str, Any],
    parameter_schema: dict[str, Any],
    uploads: Path,
    inline: Any,
    parameter: Any,
    bound: Mapping[str, str] | None = None,
) -> ResolvedInputs:
    """Resolve every input field and validate both contexts; raises InputError. `bound`: file
    inputs whose value names their file under `uploads` (bound from an earlier run's files);
    a file input whose value is its upload's path (`inputs/<key>/<name>`) is read from there."""
    named = {k: v for k, v in path_inputs(input_schema, inline).items() if k not in (bound or {})}
    bound = {**named, **(bound or {})}
    if bound and isinstance(inline, dict):
        inline = {k: v for k, v in inline.items() if k not in bound}
    resolved = validate_inline(input_schema, inline)
    required = set(input_schema.get("required", []))
    missing = []
    for key, prop in file_fields(input_schema).items():
        if key in bound and _bound_file(uploads, bound[key]) is None:
            missing.append(key)  # a file named by its path must be there, required or not
            continue
        _check_named_extension(key, prop, named.get(key))
        path = (
            _bound_file(uploads, bound[key])
            if key in bound
            else match_upload(uploads, key, list(prop.get("extensions", [])))
        )
        if path is not None:
            resolved[key] = str(path.resolve())
        elif key in required:
            missing.append(key)
    if missing:
        held = upload_listing(uploaded_files(uploads))
        raise InputError(
            ErrorCode.INPUT_FILE_MISSING,
            f"Missing required input files: {', '.join(missing)}; {held_text(held)}",
            {"fields": missing, **held},
        )
    errors = schema_errors(input_schema, resolved)
    if errors:
        raise InputError(
            ErrorCode.SCHEMA_VALIDATION_FAILED,
            "input does not match the skill's input schema",
            {"schema": "input", "errors": errors},
        )
    return ResolvedInputs(
        input=resolved, parameter=validate_parameters(parameter_schema, parameter)
    )


UPLOAD_NAMES_SHOWN = 20  # names of an upload a missing-file error lists; the count says the rest


def uploaded_files(uploads: Path) -> list[str]:
    """The uploads-relative paths of every file under `uploads` (folder links not followed)."""
    return [
        (Path(root) / name).relative_to(uploads).as_posix()
        for root, _dirs, names in os.walk(uploads)
        for name in names
    ]


def upload_listing(names: Collection[str]) -> dict[str, Any]:
    """What an upload held, for an INPUT_FILE_MISSING error's details: its first
    UPLOAD_NAMES_SHOWN paths, sorted (`uploaded`), and how many there are (`uploaded_count`)."""
    ordered = sorted(names)
    return {"uploaded": ordered[:UPLOAD_NAMES_SHOWN], "uploaded_count": len(ordered)}


def held_text(listing: dict[str, Any]) -> str:
    """`upload_listing` in words, so a mismatch (a subfolder, another case) shows in the message."""
    shown, total = listing["uploaded"], listing["uploaded_count"]
    if not total:
        return "the upload holds no file"
    more = f" and {total - len(shown)} more" if total > len(shown) else ""
    return "the upload holds " + ", ".join(shown) + more
