"""jsonschema validators for a skill's schemas whose regular expressions match with a time limit.

jsonschema matches `pattern`, `patternProperties` (and `additionalProperties`, which consults
them) with `re`; these classes, made with jsonschema's public `validators.extend`, match them
through runner_core.schema_regex: a match that runs out of time is a validation error, never a
hang. `unevaluatedProperties` finds the keys patternProperties evaluated with `re` too, deep in
jsonschema: next to a `patternProperties` it is refused (see runner_core.schema_patterns).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker, ValidationError, validators
from jsonschema.protocols import Validator
from referencing import Registry
from referencing.exceptions import Unresolvable

from runner_core.schema_ref_time import REF_SECONDS, RefsTooSlow, ref_clock, timed_keyword
from runner_core.schema_regex import (
    MATCH_SECONDS,
    VALIDATION_SECONDS,
    PatternInvalid,
    PatternTimeout,
    search,
    time_budget,
)

UNEVALUATED_WITH_PATTERNS = (
    "unevaluatedProperties cannot be checked in a schema with patternProperties "
    "(their patterns would be matched without a time limit)"
)


# The registry of every validator of a skill's schema: it fetches nothing, so a `$ref` resolves
# only inside the schema. jsonschema's default reads `file://` and `http://` URLs: a package
# could read the host's JSON files (echoed back in validation errors) or reach its network.
NO_RETRIEVAL: Registry = Registry()


def new_validator(cls: type[Validator], schema: Any) -> Validator:
    """A validator of `cls` for `schema` whose `$ref`s are never fetched."""
    return cls(schema, registry=NO_RETRIEVAL)


def validator_class(
    schema: Any, default: type[Validator] = Draft202012Validator
) -> type[Validator]:
    """The class validating `schema`: the draft its `$schema` names (else `default`), matching
    patterns with a time limit."""
    return timed(validators.validator_for(schema, default=default), schema)


def timed(base: type[Validator], schema: Any) -> type[Validator]:
    """`base` matching the patterns of `schema` with a time limit."""
    return _extended(base, has_pattern_properties(schema))


def all_errors(validator: Validator, instance: Any) -> list[ValidationError]:
    """Every error of `instance`, its pattern matches sharing VALIDATION_SECONDS."""
    with time_budget(), ref_clock():
        try:
            return list(validator.iter_errors(instance))
        except Unresolvable as exc:  # a `$ref` to another document: it is never fetched
            return [unresolvable_error(exc, instance)]
        except RefsTooSlow as exc:
            return [
                ValidationError(
                    f"validating took longer than {REF_SECONDS:g} s following the schema's "
                    "$refs (definitions that each name the next more than once multiply)",
                    validator="$ref",
                    validator_value=exc.args[0],
                    instance=instance,
                )
            ]


def unresolvable_error(exc: Unresolvable, instance: Any) -> ValidationError:
    """The validation error standing for a `$ref` that does not resolve inside its schema."""
    return ValidationError(
        f"the schema's $ref {exc.ref!r} does not resolve: a $ref may only point inside the "
        "schema (#/$defs/...), nothing is fetched",
        validator="$ref",
        validator_value=exc.ref,
        instance=instance,
    )


def schema_format_checker(cls: type[Validator]) -> FormatChecker:
    """`cls`'s format checker for checking a schema, less its `regex` format: that one compiles
    with `re`, while patterns are matched with `regex` (runner_core.schema_patterns checks them,
    and `format: "regex"` is no assertion in the validators above)."""
    checker = FormatChecker(formats=())
    checker.checkers = {k: v for k, v in cls.FORMAT_CHECKER.checkers.items() if k != "regex"}
    return checker


def has_pattern_properties(schema: Any) -> bool:
    """Whether `patternProperties` is a key anywhere in `schema` (values included: it errs on
    the side of refusing)."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if "patternProperties" in node:
                return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


_classes: dict[tuple[Any, bool], type[Validator]] = {}  # a few drafts, each made once


def _extended(base: Any, refuse_unevaluated: bool) -> type[Validator]:
    made = _classes.get((base, refuse_unevaluated))
    if made is not None:
        return made
    keywords: dict[str, Any] = {
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties,
    }
    for name in ("$ref", "$dynamicRef"):
        if name in base.VALIDATORS:
            keywords[name] = timed_keyword(base.VALIDATORS[name])
    if refuse_unevaluated and "unevaluatedProperties" in base.VALIDATORS:
        keywords["unevaluatedProperties"] = _unevaluated_refused
    made = _classes[(base, refuse_unevaluated)] = validators.extend(base, keywords)
    return made


def _match(pattern: str, text: str) -> tuple[bool, ValidationError | None]:
    """(matched, the error when it could not be told)."""
    try:
        return search(pattern, text), None
    except PatternTimeout as exc:
        if exc.budget:
            return False, ValidationError(
                f"the pattern {pattern!r} was not matched against {_short(text)}: the "
                f"{VALIDATION_SECONDS:g} s for matching all the patterns of one value ran out"
            )
        return False, ValidationError(
            f"the pattern {pattern!r} took longer than {MATCH_SECONDS:g} s to match "
            f"{_short(text)}: write it without a repeat inside a repeat"
        )
    except PatternInvalid as exc:
        return False, ValidationError(f"the pattern {pattern!r} cannot be matched: {exc}")


def _short(text: str) -> str:
    return repr(text) if len(text) <= 60 else repr(text[:57] + "...")


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "string"):
        return
    matched, error = _match(pattern, instance)
    if error is not None:
        yield error
    elif not matched:
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            matched, error = _match(pattern, key)
            if error is not None:
                yield error
            elif matched:
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator: Any, extra: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """jsonschema's additionalProperties, each patternProperties key matched on its own."""
    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    patterns = schema.get("patternProperties", {})
    extras = []
    for key in instance:
        if key in properties:
            continue
        for pattern in patterns:
            matched, error = _match(pattern, key)
            if error is not None:
                yield error  # not told: reported once, not as an extra too
                break
            if matched:
                break
        else:
            extras.append(key)
    if validator.is_type(extra, "object"):
        for key in extras:
            yield from validator.descend(instance[key], extra, path=key)
    elif not extra and extras:
        if patterns:
            verb = "does" if len(extras) == 1 else "do"
            joined = ", ".join(repr(each) for each in sorted(extras))
            listed = ", ".join(repr(each) for each in sorted(patterns))
            yield ValidationError(f"{joined} {verb} not match any of the regexes: {listed}")
        else:
            shown = ", ".join(repr(each) for each in sorted(extras, key=str))
            verb = "was" if len(extras) == 1 else "were"
            yield ValidationError(
                f"Additional properties are not allowed ({shown} {verb} unexpected)"
            )


def _unevaluated_refused(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if validator.is_type(instance, "object"):
        yield ValidationError(UNEVALUATED_WITH_PATTERNS)
