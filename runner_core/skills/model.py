"""Typed model of a skill package: SKILL.md frontmatter plus assets/runner.json."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner_core.artifact_manifest import ManifestField
from runner_core.artifacts import ArtifactSpec


@dataclass(frozen=True)
class Entrypoint:
    """How the skill is executed (runner.json `entrypoint`)."""

    type: str = "prompt"  # prompt | script | hybrid
    prompt_template: str | None = None  # path relative to the skill root
    result_mode: str = "file"  # file | stdout
    result_file: str = "result/result.json"
    script_command: str | None = None
    prompts: dict[str, str] = field(default_factory=dict)  # engine -> inline template

    @property
    def result_path(self) -> Path | None:
        """Where the agent writes its result, relative to the run; None: it prints it instead
        (`result_mode: stdout`), so only its final message is read. A script writes
        result/result.json (entrypoint.prompt is about agents)."""
        if self.type == "script":
            return Path("result/result.json")
        return None if self.result_mode == "stdout" else Path(self.result_file)


@dataclass(frozen=True)
class Automation:
    timeout_sec: int | None = None
    network: str = "off"
    allowlist: tuple[str, ...] = ()
    fs_scope: str = "workspace_only"


@dataclass(frozen=True)
class Command:
    command: str
    enabled: bool = True


@dataclass(frozen=True)
class Runtime:
    language: str = "python"
    version: str | None = None
    dependencies: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunnerManifest:
    """The parsed assets/runner.json ("AutoSkill Profile")."""

    id: str
    version: str
    engines: tuple[str, ...] | None
    unsupported_engines: tuple[str, ...]
    execution_modes: tuple[str, ...]
    entrypoint: Entrypoint
    schemas: dict[str, str]
    artifacts: tuple[ArtifactSpec, ...]
    automation: Automation
    normalizer: Command | None
    fallback: Command | None
    runtime: Runtime | None
    max_attempt: int | None = None
    retries: int = 0


@dataclass
class SkillPackage:
    """A skill directory as loaded: valid (health ok) or not (health invalid, with errors)."""

    id: str
    root: Path
    name: str | None = None
    description: str | None = None
    body: str = ""
    frontmatter: dict[str, Any] = field(default_factory=dict)
    manifest: RunnerManifest | None = None
    input_schema: dict[str, Any] = field(default_factory=dict)
    parameter_schema: dict[str, Any] = field(default_factory=dict)
    output_schema: dict[str, Any] = field(default_factory=dict)
    artifacts: list[ArtifactSpec] = field(default_factory=list)
    artifact_manifests: list[ManifestField] = field(
        default_factory=list
    )  # x-type artifact-manifest
    effective_engines: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    format: str = "SKILL.md"  # or "skill.json" (openEvo; `openevo` then holds its spec)
    openevo: Any = None
    # a skill.json composite's llm skills (runner_core.openevo.engines.LlmStep), reached through
    # its steps; None when not looked for (a package loaded alone, not from the registry)
    llm_steps: list[Any] | None = None

    @property
    def health(self) -> str:
        return "ok" if not self.errors and self.manifest is not None else "invalid"

    @property
    def version(self) -> str | None:
        return self.manifest.version if self.manifest else None

    @property
    def labels(self) -> dict[str, Any]:
        """{category, tags, author}: a skill.json skill's own fields; a SKILL.md skill's from
        its frontmatter `metadata` (tags as a list or comma-separated)."""
        if self.openevo is not None:
            spec = self.openevo
            return {
                "category": spec.category or None,
                "tags": list(spec.tags),
                "author": spec.author,
            }
        meta = self.frontmatter.get("metadata")
        meta = meta if isinstance(meta, dict) else {}
        tags = meta.get("tags") or []
        if isinstance(tags, str):
            tags = [t.strip() for t in tags.split(",") if t.strip()]
        return {
            "category": str(meta["category"]) if meta.get("category") else None,
            "tags": [str(t) for t in tags] if isinstance(tags, list) else [],
            "author": str(meta["author"]) if meta.get("author") else None,
        }

    @property
    def loaded_manifest(self) -> RunnerManifest:
        """The manifest, for code that runs only once runner.json has parsed (a loaded or
        staged package)."""
        assert self.manifest is not None, f"skill {self.id}: runner.json did not parse"
        return self.manifest
