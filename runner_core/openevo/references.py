"""Which steps a pipeline's templates read (`steps.<name>`), checked when the skill loads.

A step reading a step the pipeline lacks, itself, or one it does not depend on (a later
step, or a parallel one that may not have run yet) would read null, silently or only on some
runs; `outputMapping` may read any step. Only names written out are checked (`steps.a.x`,
`steps['a']`); `steps[input.k]` is left to the run.
"""

from __future__ import annotations

from typing import Any

from jinja2 import nodes

from runner_core.openevo.templates import TemplateFailure, expressions, parsed, walk


def read_steps(value: Any, bare: bool = False) -> list[tuple[str, str]]:
    """(template, step name) for every step a template in `value` reads (through objects and
    arrays); `bare`: a string without `{{` is itself an expression (a condition)."""
    found = []
    for expression in expressions(value, bare):
        try:
            tree = parsed(expression)
        except TemplateFailure:  # reported as a compile error already
            continue
        for name in _step_names(tree):
            found.append((f"{{{{{expression.strip()}}}}}", name))
    return found


def _step_names(tree: nodes.Node) -> list[str]:
    names = []
    for node in walk(tree, nodes.Getattr) + walk(tree, nodes.Getitem):
        if isinstance(node, nodes.Getattr) and _is_steps(node.node):
            names.append(node.attr)
        elif isinstance(node, nodes.Getitem) and _is_steps(node.node):
            if isinstance(node.arg, nodes.Const) and isinstance(node.arg.value, str):
                names.append(node.arg.value)
    return list(dict.fromkeys(names))


def _is_steps(node: nodes.Node) -> bool:
    return isinstance(node, nodes.Name) and node.name == "steps"


def reference_errors(
    pipeline: list[dict[str, Any]], mapping: Any, depends: dict[str, list[str]]
) -> list[str]:
    """Why the steps' templates (input, foreach, condition) and `outputMapping` read steps
    they cannot: one line each. `depends`: each step's direct dependencies."""
    order = [step["step"] for step in pipeline]
    upstream: dict[str, set[str]] = {}
    errors = []
    for position, step in enumerate(pipeline):
        name = step["step"]
        upstream[name] = set()
        for dep in depends.get(name, []):
            upstream[name] |= {dep} | upstream.get(dep, set())
        reads = read_steps([step["input"], step.get("foreach")])
        reads += read_steps(step.get("condition"), bare=True)
        for template, target in reads:
            why = _why_not(name, target, order, position, upstream[name])
            if why:
                errors.append(f"pipeline: step '{name}': template '{template}': {why}")
    for template, target in read_steps(mapping):
        if target not in order:
            errors.append(f"outputMapping: template '{template}': {_unknown(target, order)}")
    return errors


def _unknown(target: str, order: list[str]) -> str:
    dashed = [n for n in order if n.startswith(f"{target}-")]
    if dashed:  # `steps.fetch-data` reads as steps.fetch minus data
        return f"no step named '{target}' (for '{dashed[0]}' write steps['{dashed[0]}'])"
    return f"no step named '{target}'"


def _why_not(name: str, target: str, order: list[str], position: int, upstream: set[str]):
    if target not in order:
        return _unknown(target, order)
    if target == name:
        return "a step cannot read its own output"
    if order.index(target) > position:
        return f"step '{target}' runs after it (its output is not there yet)"
    if target not in upstream:
        return (
            f"step '{target}' is not among the steps it depends on, so it may not have run "
            f"yet: add '{target}' to its depends"
        )
    return None
