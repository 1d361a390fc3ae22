"""Templates of composite pipelines: `{{input.x}}`, `{{steps.<step>.<path>}}`, filters and
`a || b || 'literal'` fallbacks, evaluated as Jinja2 expressions.

openEvo writes filters Liquid-style (`| map: snippet | join: '\\n\\n'`); each expression is
rewritten into Jinja2 filter calls (`| map('snippet') | join('\\n\\n')`) and `||` into `or`,
then compiled with `compile_expression`, which returns the typed value (as Jinja2's native-types
environment does, without its literal_eval of strings: a string "42" stays a string). A value
that is one whole template keeps its type (an array stays an array); templates inside a longer
string are interpolated (strings as they are, other values as JSON, a missing value as "").
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any, TypeVar

from jinja2 import ChainableUndefined, TemplateError, Undefined, nodes
from jinja2.parser import Parser
from jinja2.sandbox import ImmutableSandboxedEnvironment

from runner_core.template_limits import BoundedOperators

N = TypeVar("N", bound=nodes.Node)
TEMPLATE = re.compile(r"\{\{(.*?)\}\}", re.S)
_FILTER_WITH_ARGS = re.compile(r"^\s*([A-Za-z_]\w*)\s*:\s*(.*?)\s*$", re.S)
_BARE_NAME = re.compile(r"^[A-Za-z_][\w.]*$")
# Filters whose argument is a field name, written bare in openEvo (`map: snippet`).
_FIELD_FILTERS = {"map", "pluck"}
# openEvo's filters: how many arguments each takes, their literal types, and how to write them
_MOST_ARGUMENTS = {"map": 1, "pluck": 1, "join": 1, "slice": 2, "default": 2, "json": 1}
_KEYWORDS = {"map": {"attribute"}, "pluck": {"attribute"}, "join": {"attribute"}}
_ARGUMENT_TYPES: dict[str, tuple[type, ...]] = {
    "map": (str, int),
    "pluck": (str, int),
    "join": (str,),
    "slice": (int, type(None)),
    "default": (object,),
    "json": (int, type(None)),
}
_USAGE = {
    "map": "one field, a name or an index (`| map: name`)",
    "pluck": "one field, a name or an index (`| pluck: name`)",
    "join": "one separator, a text (`| join: ', '`)",
    "slice": "a start and an end, whole numbers (`| slice: 0, 3`)",
    "default": "the value to use instead (`| default: 'none'`)",
    "json": "an indent, a whole number (`| json: 2`)",
}


_MISSING = object()  # a path that does not exist, where it leaves a key out


class TemplateFailure(ValueError):
    """A template that does not compile or fails while evaluated; the message names it."""


class _JsonEnvironment(BoundedOperators, ImmutableSandboxedEnvironment):
    """`a.b` on an object is its key `b`, never a dict method (`steps.list.items` is data);
    `*` and `**` refuse results too large to make (runner_core.template_limits)."""

    def getattr(self, obj: Any, attribute: str) -> Any:
        if isinstance(obj, dict):
            if attribute in obj:
                return obj[attribute]
            return self.undefined(obj=obj, name=attribute)
        return super().getattr(obj, attribute)


def render(value: Any, context: dict[str, Any]) -> Any:
    """`value` with every template in its strings evaluated against `context` (recursively
    through objects and arrays). A key whose value is one whole template of a missing path is
    left out, as JSON leaves out JavaScript's `undefined`: a step's callee then applies its
    default, an optional output field stays absent."""
    if isinstance(value, str):
        return render_string(value, context)
    if isinstance(value, dict):
        rendered = {k: _render_value(v, context) for k, v in value.items()}
        return {k: v for k, v in rendered.items() if v is not _MISSING}
    if isinstance(value, list):
        return [render(v, context) for v in value]
    return value


def _render_value(value: Any, context: dict[str, Any]) -> Any:
    """What `render` gives for a value of an object (_MISSING: leave the key out)."""
    expression = _whole(value) if isinstance(value, str) else None
    if expression is None:
        return render(value, context)
    return _evaluate(expression, context, missing=_MISSING)


def render_string(text: str, context: dict[str, Any]) -> Any:
    expression = _whole(text)
    if expression is not None:
        return evaluate(expression, context)
    return TEMPLATE.sub(lambda m: _as_text(evaluate(m.group(1), context)), text)


def _whole(text: str) -> str | None:
    """The expression of a string that is one whole template, else None."""
    whole = TEMPLATE.fullmatch(text.strip())
    return whole.group(1) if whole and "{{" not in whole.group(1) else None


def expressions(value: Any, bare: bool = False) -> Iterator[str]:
    """The template expressions in `value` (through objects and arrays); `bare`: a string
    without `{{` is itself an expression (a condition)."""
    if isinstance(value, dict):
        for item in value.values():
            yield from expressions(item)
    elif isinstance(value, list):
        for item in value:
            yield from expressions(item)
    elif isinstance(value, str):
        yield from TEMPLATE.findall(value) if "{{" in value or not bare else [value]


def compile_errors(value: Any, bare: bool = False) -> list[str]:
    """Why the templates in `value` (through objects and arrays) do not compile, one line
    each; `bare`: a string without `{{` is itself an expression (a condition)."""
    found = []
    for expression in expressions(value, bare):
        try:
            _compiled(expression)
            wrong = _argument_errors(parsed(expression))
        except TemplateFailure as exc:
            found.append(str(exc))
            continue
        found += [f"template '{{{{{expression.strip()}}}}}': {why}" for why in wrong]
    return found


def _argument_errors(tree: nodes.Expr) -> list[str]:
    """Arguments of openEvo's filters that would fail every run: a `map` without its field, a
    separator or bound of the wrong type, too many arguments (literals only: a path is data)."""
    found = []
    for node in walk(tree, nodes.Filter):
        if node.name not in _MOST_ARGUMENTS or node.dyn_args or node.dyn_kwargs:
            continue
        keywords = {k.key for k in node.kwargs}
        given = [a.value for a in node.args if isinstance(a, nodes.Const)]
        usage = _USAGE[node.name]
        if len(node.args) > _MOST_ARGUMENTS[node.name] or keywords - _KEYWORDS.get(
            node.name, set()
        ):
            found.append(f"`| {node.name}` takes {usage}")
        elif node.name in _FIELD_FILTERS and not node.args and "attribute" not in keywords:
            found.append(f"`| {node.name}` needs {usage}")
        elif not all(isinstance(v, _ARGUMENT_TYPES[node.name]) for v in given):
            found.append(f"`| {node.name}` takes {usage}, not {', '.join(map(repr, given))}")
    return found


def evaluate(expression: str, context: dict[str, Any]) -> Any:
    """The typed value of one openEvo expression (None when a path does not exist)."""
    return _evaluate(expression, context, missing=None)


def _evaluate(expression: str, context: dict[str, Any], missing: Any) -> Any:
    """As `evaluate`, `missing` standing for a path that does not exist."""
    compiled = _compiled(expression)
    try:
        value = compiled(**context)
    except Exception as exc:  # whatever the expression raises (1/0, a filter's TypeError, ...)
        raise TemplateFailure(f"template '{{{{{expression.strip()}}}}}': {_reason(exc)}") from exc
    if isinstance(value, Undefined):
        return missing
    value = _plain(value)
    try:  # a step's input and the output are JSON: `range(3)` or a function is not
        json.dumps(value)
    except (TypeError, ValueError, RecursionError) as exc:
        kind = type(value).__name__
        message = f"template '{{{{{expression.strip()}}}}}': gives a {kind}, not JSON data"
        raise TemplateFailure(message) from exc
    return value


def _reason(exc: Exception) -> str:
    """What went wrong, with the exception's kind when its message does not say it."""
    text = str(exc)
    if isinstance(exc, TemplateError) and text:
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@lru_cache(maxsize=512)
def _compiled(expression: str):
    try:
        # an undefined result is kept: _evaluate tells a missing path from a null
        return _ENV.compile_expression(to_jinja(expression), undefined_to_none=False)
    except Exception as exc:  # a syntax error, or anything else the compiler raises
        raise TemplateFailure(f"template '{{{{{expression.strip()}}}}}': {_reason(exc)}") from exc


@lru_cache(maxsize=512)
def parsed(expression: str) -> nodes.Expr:
    """The syntax tree of one openEvo expression (what it reads, for the load-time checks)."""
    try:
        parser = Parser(_ENV, to_jinja(expression), state="variable")
        return parser.parse_expression()
    except Exception as exc:
        raise TemplateFailure(f"template '{{{{{expression.strip()}}}}}': {_reason(exc)}") from exc


def walk(tree: nodes.Node, kind: type[N]) -> list[N]:
    """Every node of `kind` in `tree`, itself included (find_all leaves it out)."""
    return ([tree] if isinstance(tree, kind) else []) + list(tree.find_all(kind))


def to_jinja(expression: str) -> str:
    """openEvo's expression syntax as a Jinja2 expression."""
    alternatives = _split_outside_quotes(expression, "||")
    return " or ".join(f"({_filters_to_calls(a)})" for a in alternatives)


def _filters_to_calls(expression: str) -> str:
    base, *filters = _split_outside_quotes(expression, "|")
    parts = [base.strip()]
    for segment in filters:
        match = _FILTER_WITH_ARGS.match(segment)
        if not match:  # `json`, or already a Jinja call `join(', ')`
            parts.append(segment.strip())
            continue
        name, args = match.groups()
        if name in _FIELD_FILTERS and _BARE_NAME.match(args):
            args = repr(args)
        parts.append(f"{name}({args})")
    return " | ".join(parts)


def _split_outside_quotes(text: str, sep: str) -> list[str]:
    """`text` split at `sep` where it is not inside a '...' or "..." literal."""
    parts, start, quote, i = [], 0, "", 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif text.startswith(sep, i) and not (sep == "|" and text.startswith("||", i)):
            parts.append(text[start:i])
            start = i + len(sep)
            i = start
            continue
        i += 1
    parts.append(text[start:])
    return parts


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _field(item: Any, path: str | int) -> Any:
    for key in str(path).split("."):  # `map: 0`: an index
        if isinstance(item, dict):
            item = item.get(key)
        elif isinstance(item, list) and key.lstrip("-").isdigit():
            item = item[int(key)] if -len(item) <= int(key) < len(item) else None
        else:
            return None
    return item


def _map(seq: Any, path: str | int | None = None, attribute: str | int | None = None) -> list[Any]:
    field = _field_named(path, attribute, "map")
    return [_field(item, field) for item in _items(seq)]


def _pluck(value: Any, path: str | int | None = None, attribute: str | int | None = None) -> Any:
    field = _field_named(path, attribute, "pluck")
    value = _plain(value)
    return _map(value, field) if isinstance(value, list) else _field(value, field)


def _field_named(path: Any, attribute: Any, name: str) -> str | int:
    """The field of `| map: name` or Jinja2's `| map(attribute='name')`."""
    field = path if path is not None else attribute
    if field is None:
        raise TypeError(f"`| {name}` needs a field: `| {name}: name`")
    return field


def _join(seq: Any, sep: str = " ", attribute: str | int | None = None) -> str:
    items = _items(seq) if attribute is None else _map(seq, attribute)
    return str(sep).join(_as_text(item) for item in items)


def _slice(seq: Any, start: int = 0, end: int | None = None) -> Any:
    seq = _plain(seq)
    return seq[start:end] if isinstance(seq, (list, str)) else seq


def _default(value: Any, fallback: Any = None, boolean: bool = False) -> Any:
    """`fallback` for a missing, null or empty value (`boolean`, as Jinja2's: any false one)."""
    empty = value is None or isinstance(value, Undefined) or value == ""
    return fallback if empty or (boolean and not value) else value


def _json(value: Any, indent: int | None = None) -> str:
    return json.dumps(
        None if isinstance(value, Undefined) else _plain(value), ensure_ascii=False, indent=indent
    )


def _items(seq: Any) -> list[Any]:
    if seq is None or isinstance(seq, Undefined):
        return []
    seq = _plain(seq)
    return list(seq) if isinstance(seq, (list, tuple)) else [seq]


def _plain(value: Any) -> Any:
    """What Jinja2's sequence filters give (`select`, `unique`, `reverse`: iterators) as a list."""
    return list(value) if isinstance(value, Iterator) else value


def _environment() -> ImmutableSandboxedEnvironment:
    # Sandboxed: expressions come from skill files; a missing path is falsy and chains to None.
    env = _JsonEnvironment(undefined=ChainableUndefined)
    env.filters.update(
        map=_map, pluck=_pluck, join=_join, slice=_slice, default=_default, json=_json
    )
    return env


_ENV = _environment()
