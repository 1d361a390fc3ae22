"""`python -m tests.engines.matrix`: the engine tier against several versions of each agent CLI.

For each engine with an npm package (deploy/engines/package.json), each version asked for
(`pinned`: the version the lock installs; `latest`: the newest published; or an exact number)
is installed side by side under `.engines-matrix/<engine>/<version>/` (npm, so this downloads),
the engine's tests (its cases in `test_every_engine.py`, `test_native_schema.py`,
`test_node_clis.py` and `test_usage.py`, and
`tests/engines/test_<engine>.py` where it has one) run against it through `SKILL_RUNNER_<ENGINE>_BIN`, and the results are written to
docs/engine-matrix.md (pass/fail per test and version, with the date) and
deploy/engines/tested-versions.json (the versions whose every test passed, which
`GET /v1/engines` reports). Not part of the default test run.

    python -m tests.engines.matrix                              # every engine, pinned + latest
    python -m tests.engines.matrix --engines codex --versions pinned,0.133.0
    python -m tests.engines.matrix --versions pinned,latest,codex=0.133.0   # one engine more
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from runner_core.engines.invocation import REPO_BIN_DIR, binary_env
from runner_core.engines.packages import ENGINE_PACKAGES

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "deploy" / "engines" / "package.json"
LOCK = ROOT / "deploy" / "engines" / "package-lock.json"
TESTED = ROOT / "deploy" / "engines" / "tested-versions.json"
REPORT = ROOT / "docs" / "engine-matrix.md"
# npm package -> engine (its binary has the engine's name; kilo's is not linked)
PACKAGES = {package: engine for engine, package in ENGINE_PACKAGES.items()}

# engine -> how its runs get schema-valid output (docs/skills.md#native-structured-output)
STRUCTURED_OUTPUT = {
    "codex": "native, `--output-schema` (strict form; also on `exec resume`), then the output chain",
    "claude": "native, `--json-schema` (answer in `structured_output`), then the output chain",
    "qwen": "native, `--json-schema` on every turn (answer in `structured_result`), then the "
    "output chain",
}
OUTPUT_CHAIN_ONLY = "the output chain (the CLI has no schema flag)"
# engine -> what its token_usage holds beside input and output (docs/operating.md#tokens-and-cost)
USAGE_FIELDS = {
    "codex": "cached, reasoning",
    "claude": "cached, cost (the CLI's)",
    "gemini": "cached, reasoning",
    "kilo": "cached, reasoning, cost (the CLI's)",
    "opencode": "cached, reasoning, cost (the CLI's)",
    "qwen": "cached",
}
# engine -> how a later turn continues the session
RESUME = {
    "codex": "`exec resume <thread>`",
    "claude": "`--resume <session>`",
    "gemini": "`--resume <session>`",
    "kilo": "`-s <session>`",
    "opencode": "`-s <session>`",
    "qwen": "`--resume <session>`",
}


@dataclass
class Outcome:
    """One engine version's run of the tier: test name -> passed / failed / skipped."""

    engine: str
    version: str
    labels: list[str]  # how it was asked for: pinned, latest, or the number itself
    reported: str  # what `<cli> --version` printed
    tests: dict[str, str] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return bool(self.tests) and all(v == "passed" for v in self.tests.values())


def pinned_versions() -> dict[str, str]:
    """engine -> the version the lock file installs."""
    lock = json.loads(LOCK.read_text())["packages"]
    manifest = json.loads(MANIFEST.read_text())
    listed = {**manifest["dependencies"], **manifest.get("optionalDependencies", {})}
    return {
        engine: lock[f"node_modules/{package}"]["version"]
        for package, engine in PACKAGES.items()
        if package in listed
    }


def latest_version(package: str) -> str:
    done = subprocess.run(
        ["npm", "view", package, "version"], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def install(engine: str, version: str, cache: Path) -> Path:
    """The CLI `engine` at `version`, installed (once) in a prefix of its own; its binary."""
    package = next(p for p, e in PACKAGES.items() if e == engine)
    prefix = cache / engine / version
    binary = prefix / "node_modules" / ".bin" / engine
    if not binary.exists():
        prefix.mkdir(parents=True, exist_ok=True)
        (prefix / "package.json").write_text('{"private": true}\n')
        subprocess.run(
            [
                "npm",
                "install",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                f"{package}@{version}",
            ],
            cwd=prefix,
            check=True,
        )
    unlinked = prefix / "node_modules" / package / "bin" / engine  # kilo's platform package
    if not binary.exists() and unlinked.exists():
        binary.parent.mkdir(parents=True, exist_ok=True)
        binary.symlink_to(unlinked)
    rg = REPO_BIN_DIR / "rg"  # opencode's skill tool needs ripgrep beside the CLI
    if rg.exists() and not (binary.parent / "rg").exists():
        (binary.parent / "rg").symlink_to(rg.resolve())
    return binary


def run_tier(engine: str, binary: Path, work: Path) -> tuple[str, dict[str, str]]:
    """(what the CLI says its version is, test -> outcome) for the engine tier on `binary`."""
    env = dict(os.environ, **{binary_env(engine): str(binary)})
    reported = subprocess.run(
        [str(binary), "--version"], capture_output=True, text=True, env=env, check=False
    ).stdout.strip()
    xml_path = work / f"{engine}-{binary.parents[2].name}.xml"
    modules = [
        f"tests/engines/test_{engine}.py",
        "tests/engines/test_every_engine.py",
        "tests/engines/test_native_schema.py",
        "tests/engines/test_node_clis.py",  # a Node CLI started as one process
        "tests/engines/test_usage.py",
    ]
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={xml_path}",
         *[m for m in modules if (ROOT / m).exists()], "-k", engine],
        cwd=ROOT, env=env, check=False,
    )  # fmt: skip
    tests = {}
    for case in ET.parse(xml_path).getroot().iter("testcase"):
        name = f"{case.get('classname', '').rsplit('.', 1)[-1]}::{case.get('name')}"
        if case.find("failure") is not None or case.find("error") is not None:
            tests[name] = "failed"
        elif case.find("skipped") is not None:
            tests[name] = "skipped"
        else:
            tests[name] = "passed"
    return reported, tests


def write_report(outcomes: list[Outcome], today: str) -> None:
    """docs/engine-matrix.md: one table per engine, a column per version; engines not run this
    time keep their section from the last report."""
    kept = {}
    if REPORT.exists():
        for section in REPORT.read_text().split("\n## ")[1:]:
            kept[section.split("\n", 1)[0].strip()] = "## " + section.rstrip() + "\n"
    for engine in dict.fromkeys(o.engine for o in outcomes):
        mine = [o for o in outcomes if o.engine == engine]
        names = sorted({name for o in mine for name in o.tests})
        lines = [
            f"## {engine}\n",
            f"Run {today}. " + "; ".join(f"{o.version}: `{o.reported}`" for o in mine) + "\n",
            f"Structured-output mode: {STRUCTURED_OUTPUT.get(engine, OUTPUT_CHAIN_ONLY)}.\n",
            "| test | " + " | ".join(f"{o.version} ({', '.join(o.labels)})" for o in mine) + " |",
            "|---|" + "---|" * len(mine),
        ]
        lines += [f"| {n} | " + " | ".join(o.tests.get(n, "-") for o in mine) + " |" for n in names]
        lines.append(
            "| **all passed** | " + " | ".join("yes" if o.passed else "no" for o in mine) + " |"
        )
        kept[engine] = "\n".join(lines) + "\n"
    head = (
        "# Engine versions tested\n\n"
        "Written by `python -m tests.engines.matrix` (see its docstring): the engine tier "
        "(the engine's cases in `test_every_engine.py`, `test_native_schema.py`, "
        "`test_node_clis.py` and `test_usage.py`, and "
        "`tests/engines/test_<engine>.py` where it has one) "
        "against the version the lock pins and others installed side by side. "
        "[deploy/engines/tested-versions.json](../deploy/engines/tested-versions.json) lists "
        "the versions whose every test passed; `GET /v1/engines` reports it. Each engine's "
        "structured-output mode: [skills.md](skills.md#native-structured-output).\n"
    )
    REPORT.write_text(head + "\n" + summary() + "\n" + "\n".join(kept[k] for k in sorted(kept)))


def summary() -> str:
    """The one table of every engine: pinned version, versions whose every test passed,
    structured-output mode, usage fields, resume."""
    pinned = _pinned_versions()
    tested = json.loads(TESTED.read_text()) if TESTED.exists() else {}
    rows = [
        "| engine | pinned | every test passed | structured output | usage beside input/output "
        "| resume |",
        "|---|---|---|---|---|---|",
    ]
    for engine in sorted(RESUME):
        rows.append(
            f"| {engine} | {pinned.get(engine, '-')} | {', '.join(tested.get(engine, [])) or '-'} "
            f"| {STRUCTURED_OUTPUT.get(engine, OUTPUT_CHAIN_ONLY)} | {USAGE_FIELDS[engine]} "
            f"| {RESUME[engine]} |"
        )
    return "\n".join(rows) + "\n"


def _pinned_versions() -> dict[str, str]:
    """engine -> the version deploy/engines/package.json pins."""
    manifest = json.loads(MANIFEST.read_text())
    deps = {**manifest.get("dependencies", {}), **manifest.get("optionalDependencies", {})}
    return {PACKAGES[name]: version for name, version in deps.items() if name in PACKAGES}


def write_tested(outcomes: list[Outcome]) -> None:
    tested = json.loads(TESTED.read_text()) if TESTED.exists() else {}
    for o in outcomes:
        versions = set(tested.get(o.engine, []))
        versions = versions | {o.version} if o.passed else versions - {o.version}
        tested[o.engine] = sorted(versions, key=lambda v: [int(x) for x in re.findall(r"\d+", v)])
    TESTED.write_text(json.dumps(tested, indent=2, sort_keys=True) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.engines.matrix", description=__doc__)
    parser.add_argument("--engines", default=",".join(PACKAGES.values()))
    parser.add_argument("--versions", default="pinned,latest", help="pinned, latest or X.Y.Z")
    parser.add_argument("--cache", type=Path, default=ROOT / ".engines-matrix")
    args = parser.parse_args(argv)
    if shutil.which("npm") is None:
        parser.error("npm not found: install Node.js 20 and npm first")
    pinned, outcomes = pinned_versions(), []
    work = args.cache / "results"
    work.mkdir(parents=True, exist_ok=True)
    for engine in args.engines.split(","):
        package = next(p for p, e in PACKAGES.items() if e == engine)
        wanted: dict[str, list[str]] = {}
        for token in args.versions.split(","):
            only, _, token = token.rpartition("=")
            if only and only != engine:
                continue
            version = {"pinned": pinned[engine]}.get(token) or (
                latest_version(package) if token == "latest" else token
            )
            wanted.setdefault(version, []).append("other" if token == version else token)
        for version, labels in wanted.items():
            binary = install(engine, version, args.cache)
            reported, tests = run_tier(engine, binary, work)
            outcomes.append(Outcome(engine, version, labels, reported, tests))
            print(f"{engine} {version}: {'passed' if outcomes[-1].passed else 'FAILED'}")
    write_tested(outcomes)  # first: the report's summary table reads it
    write_report(outcomes, datetime.date.today().isoformat())
    return 0 if all(o.passed for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
