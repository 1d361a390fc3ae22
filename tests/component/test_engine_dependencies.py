"""runtime.dependencies for engine runs: every command of the CLI is wrapped in `uv run --with`,
and a per-run home gets the login profile that puts uv's environment back on PATH."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from runner_core.engines.base import CommandSpec, EngineContext, EngineOutput, ProcessResult
from runner_core.skills.model import Runtime
from worker.execution.dependencies import LOGIN_PROFILE, DependencyAdapter


@dataclass
class FakeAdapter:
    """Builds `cli --turn` with HOME at `home` (relative to the run dir unless absolute)."""

    home: str = ".home"
    name: str = "fake"
    binary: str = "cli"
    skill_dirs: tuple[str, ...] = (".fake/skills",)
    extra_method_called: bool = False

    def build_command(self, ctx: EngineContext) -> CommandSpec:
        home = Path(ctx.run_dir) / self.home
        env = {"HOME": str(home), "PATH": "/usr/bin", "X": "1"}
        return CommandSpec(["cli", "--turn"], Path(ctx.run_dir), env, files={"a.txt": "a"})

    def parse_output(self, result: ProcessResult) -> EngineOutput:
        return EngineOutput(exit_code=result.exit_code, final_text="parsed")

    def session_gone(self) -> bool:  # a method beyond the protocol
        self.extra_method_called = True
        return True


RUNTIME = Runtime(dependencies=("pkg-a>=1", "pkg-b"))


def ctx(run_dir: Path) -> EngineContext:
    return EngineContext(run_dir=run_dir, skill_id="s", prompt="p", config={})


def test_every_command_runs_under_uv_run_with_each_dependency(tmp_path):
    adapter = DependencyAdapter(FakeAdapter(), RUNTIME, tmp_path / "uv-cache")
    spec = adapter.build_command(ctx(tmp_path))
    split = spec.argv.index("--")
    assert spec.argv[split + 1 :] == ["cli", "--turn"]
    wrapper = spec.argv[:split]
    assert wrapper[1:3] == ["run", "--no-project"]
    assert [wrapper[i + 1] for i, arg in enumerate(wrapper) if arg == "--with"] == [
        "pkg-a>=1",
        "pkg-b",
    ]
    assert spec.env["UV_CACHE_DIR"] == str(tmp_path / "uv-cache")
    assert spec.env["X"] == "1" and spec.env["PATH"] == "/usr/bin"  # the adapter's own env


def test_a_per_run_home_gets_the_login_profile(tmp_path):
    spec = DependencyAdapter(FakeAdapter(), RUNTIME, tmp_path).build_command(ctx(tmp_path))
    assert spec.files == {"a.txt": "a", ".home/.profile": LOGIN_PROFILE}
    assert '"$VIRTUAL_ENV/bin:$PATH"' in LOGIN_PROFILE


def test_a_home_outside_the_run_is_never_written(tmp_path):
    adapter = DependencyAdapter(FakeAdapter(home="/root"), RUNTIME, tmp_path)
    assert adapter.build_command(ctx(tmp_path / "run")).files == {"a.txt": "a"}


def test_the_rest_is_the_wrapped_adapters(tmp_path):
    inner = FakeAdapter()
    adapter = DependencyAdapter(inner, RUNTIME, tmp_path)
    assert (adapter.name, adapter.binary, adapter.skill_dirs) == ("fake", "cli", (".fake/skills",))
    result = ProcessResult(0, tmp_path / "o", tmp_path / "e", 0.0, 1.0)
    assert adapter.parse_output(result).final_text == "parsed"
    assert adapter.session_gone() and inner.extra_method_called
