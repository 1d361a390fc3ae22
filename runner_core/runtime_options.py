"""A request's `runtime_options`, typed: the options the service acts on, read once from the
stored JSON object (which is kept as the client sent it, unknown keys included)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from runner_core.budget import SCHEMA as BUDGET_SCHEMA
from runner_core.budget import Budget

# The options the service acts on, typed, so a wrong type is a 400 when the job is created
# rather than an error or an ignored option once the run starts; other options are kept, unused.
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "execution_mode": {"type": "string"},
        "debug": {"type": "boolean"},
        "no_cache": {"type": "boolean"},
        "timeout_sec": {"type": "integer", "minimum": 1},
        "hard_timeout_seconds": {"type": "integer", "minimum": 0},  # Skill-Runner's name
        "repair_rounds": {"type": "integer", "minimum": 0, "maximum": 3},
        # 0 (Skill-Runner's clients send it): the agent decides at once, as there
        "interactive_reply_timeout_sec": {"type": "integer", "minimum": 0},
        "interactive_auto_reply": {"type": "boolean"},
        "budget": BUDGET_SCHEMA,
        # the conversation ctx.session of a skill.json code skill reads and appends to
        "session_id": {"type": "string", "minLength": 1, "maxLength": 128},
    },
    "patternProperties": {"^[a-z][a-z0-9]*_config$": {"type": "object"}},
}
# Acted on outside SCHEMA's typed set: chained runs (api.jobs.workspace), the hard deadline
# and the run's variables (runner_core.run_env).
OTHER_KNOWN = frozenset({"workspace", "hard_timeout_seconds", "env"})
# every option the service acts on (a `<engine>_config` aside)
NAMES = frozenset(SCHEMA["properties"]) | OTHER_KNOWN
# names Skill-Runner's clients send for a typed option: alias -> the option it sets
ALIASES = {"hard_timeout_seconds": "timeout_sec"}
DEFAULT_REPLY_TIMEOUT_SEC = 1200
MAX_REPAIR_ROUNDS = 3
_CONFIG_SUFFIX = "_config"


@dataclass(frozen=True, slots=True)
class RuntimeOptions:
    """What a run's `runtime_options` ask for. Built with `from_dict` from the stored object,
    which it never rewrites: `as_dict()` gives it back whole."""

    execution_mode: str = "auto"  # auto | interactive
    debug: bool = False  # keep the debug bundle (and key the cache apart)
    no_cache: bool = False  # never served from the result cache
    timeout_sec: int | None = None  # the run's time limit; None: the skill's or the default
    repair_rounds: int | None = None  # output repair rounds; None: the server's setting
    interactive_reply_timeout_sec: int | None = None  # None: DEFAULT_REPLY_TIMEOUT_SEC
    interactive_auto_reply: bool = False  # the agent decides when nobody answers in time
    budget: Budget | None = None  # tokens and/or USD over all turns (runner_core.budget)
    session_id: str | None = None  # ctx.session's conversation; None: the root run's request
    engine_configs: Mapping[str, Any] = field(default_factory=dict)  # engine -> its `_config`
    stored: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> RuntimeOptions:
        """The options of a stored (or just received) object; None reads as no options.
        Never raises: a number option holding something else (the API refuses those) reads
        as no number."""
        data = data or {}
        return cls(
            execution_mode=str(data.get("execution_mode", "auto")),
            debug=bool(data.get("debug")),
            no_cache=bool(data.get("no_cache")),
            # Skill-Runner's clients send `hard_timeout_seconds` (0 there: the service default)
            timeout_sec=_positive_int(data.get("timeout_sec"))
            or _positive_int(data.get("hard_timeout_seconds")),
            repair_rounds=_repair_rounds(data),
            interactive_reply_timeout_sec=_whole_or_none(data.get("interactive_reply_timeout_sec")),
            interactive_auto_reply=bool(data.get("interactive_auto_reply")),
            budget=Budget.of(data.get("budget")),
            session_id=_text(data.get("session_id")),
            engine_configs=MappingProxyType(
                {
                    key.removesuffix(_CONFIG_SUFFIX): value
                    for key, value in data.items()
                    if key.endswith(_CONFIG_SUFFIX)
                }
            ),
            stored=MappingProxyType(dict(data)),
        )

    def as_dict(self) -> dict[str, Any]:
        """The object the options were read from, unknown keys included."""
        return dict(self.stored)

    @property
    def is_interactive(self) -> bool:
        return self.execution_mode == "interactive"

    def engine_config(self, engine: str) -> Any:
        """The request's `<engine>_config` object (None when it sent none)."""
        return self.engine_configs.get(engine)

    def reply_timeout(self, cap_sec: int) -> int:
        """Seconds a question waits for its answer, capped by the server's maximum (0: none,
        the auto-reply decides at once)."""
        wanted = self.interactive_reply_timeout_sec
        wanted = DEFAULT_REPLY_TIMEOUT_SEC if wanted is None else wanted
        return max(0, min(wanted, cap_sec))

    def repair_rounds_or(self, default: int) -> int:
        """The output repair rounds to run: the request's, else `default`; 0 to 3."""
        rounds = default if self.repair_rounds is None else self.repair_rounds
        return max(0, min(int(rounds or 0), MAX_REPAIR_ROUNDS))


def _positive_int(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def _int_or_none(value: Any) -> int | None:
    """`value` as a whole number; None for none (or a value that is not a number)."""
    try:
        return int(value) if value else None
    except (TypeError, ValueError):
        return None


def _whole_or_none(value: Any) -> int | None:
    """`value` as a whole number of 0 or more (30.0 is 30); None for anything else."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if value >= 0 else None


def _repair_rounds(data: Mapping[str, Any]) -> int | None:
    """None when the request leaves them to the server; a sent null or 0 turns repair off."""
    if "repair_rounds" not in data:
        return None
    return _int_or_none(data["repair_rounds"]) or 0


def withheld(data: Any) -> Any:
    """`data` with the values of `env` replaced by `{"redacted": true}` (Skill-Runner's form),
    its names kept. The run's processes get these variables (runner_core.run_env keeps their
    values in a file of their own), and clients put secrets there (the Zotero plugin its Host
    Bridge token): no value reaches the database, the run's input.json or a bundle."""
    if not isinstance(data, Mapping) or "env" not in data:
        return data
    env = data["env"]
    names = env.keys() if isinstance(env, Mapping) else ()
    return {**data, "env": {str(name): {"redacted": True} for name in names}}


def unused_keys(data: Mapping[str, Any] | None) -> list[str]:
    """The keys of a runtime_options object this service does not act on (clients of other
    runners send some, e.g. `env` or `workflow_mcp`): kept as sent, reported as a warning."""
    return sorted(k for k in (data or {}) if k not in NAMES and not k.endswith(_CONFIG_SUFFIX))


def moved_in(body: Mapping[str, Any]) -> dict[str, Any]:
    """`body` (a job's) with the runtime options sent beside `runtime_options` rather than in
    it (`"execution_mode": "interactive"` at the top) moved in, so they are not dropped with
    the fields nobody reads. Raises ValueError naming one also in `runtime_options` with
    another value: which was meant is not for the service to guess."""
    misplaced = {k: v for k, v in body.items() if k in NAMES}
    options = body.get("runtime_options")
    if not misplaced or not (options is None or isinstance(options, Mapping)):
        return dict(body)
    options = dict(options or {})
    for name, value in misplaced.items():
        if name in options and options[name] != value:
            raise ValueError(name)
        options[name] = value
    rest = {k: v for k, v in body.items() if k not in misplaced}
    return {**rest, "runtime_options": options}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
