"""Checks across skill.json skills: unique names, no clash with a SKILL.md skill's id, every
called skill present and valid, and no call cycles."""

from __future__ import annotations

from dataclasses import replace

from runner_core.openevo.engines import common_engines, is_composite, llm_steps
from runner_core.skills.model import SkillPackage


def check_graph(openevo: list[SkillPackage], skill_md_ids: set[str]) -> list[SkillPackage]:
    """The skill.json skills in the same order, each with the errors the others cause added
    and a composite with the engines of the llm skills it reaches (copies; the memoized
    packages are left as they are)."""
    extra: dict[int, list[str]] = {id(p): [] for p in openevo}
    by_name: dict[str, SkillPackage] = {}
    for pkg in openevo:
        if pkg.id in skill_md_ids:
            extra[id(pkg)].append(f"name '{pkg.id}' is already the id of a SKILL.md skill")
        elif pkg.id in by_name:
            first = by_name[pkg.id].root.name
            extra[id(pkg)].append(f"name '{pkg.id}' is already declared by the skill in '{first}'")
        else:
            by_name[pkg.id] = pkg
    edges = {name: (p.openevo.callees() if p.openevo else []) for name, p in by_name.items()}
    for name, callees in edges.items():
        for callee in callees:
            if callee not in by_name:
                extra[id(by_name[name])].append(f"calls unknown skill '{callee}'")
    for cycle in _cycles(edges):
        for name in set(cycle):
            extra[id(by_name[name])].append("call cycle: " + " -> ".join(cycle))
    _invalid_callees(by_name, edges, extra)
    return [_with_engines(p, by_name, extra[id(p)]) for p in openevo]


def _with_engines(pkg: SkillPackage, by_name, errors: list[str]) -> SkillPackage:
    """`pkg` with the errors found across skills and, for a composite, the llm skills it
    reaches and the engines all of them run on (its effective engines)."""
    if not is_composite(pkg):
        return replace(pkg, errors=pkg.errors + errors) if errors else pkg
    steps = llm_steps(pkg, by_name.get)
    return replace(
        pkg, errors=pkg.errors + errors, llm_steps=steps, effective_engines=common_engines(steps)
    )


def _invalid_callees(by_name, edges, extra) -> None:
    """A skill calling an invalid one is invalid too (repeated until nothing changes)."""
    bad = {n for n, p in by_name.items() if p.errors or extra[id(p)]}
    changed = True
    while changed:
        changed = False
        for name, callees in edges.items():
            broken = [c for c in callees if c in bad and c != name]
            if name not in bad and broken:
                extra[id(by_name[name])].append(f"calls invalid skill '{broken[0]}'")
                bad.add(name)
                changed = True


def _cycles(edges: dict[str, list[str]]) -> list[list[str]]:
    """One cycle per strongly connected loop found by depth-first search, as a path a -> .. -> a."""
    found, state, stack = [], {}, []

    def visit(node: str) -> None:
        state[node] = "open"
        stack.append(node)
        for nxt in edges.get(node, []):
            if nxt not in edges:
                continue
            if state.get(nxt) == "open":
                found.append(stack[stack.index(nxt) :] + [nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = "done"

    for node in sorted(edges):
        if node not in state:
            visit(node)
    return found
