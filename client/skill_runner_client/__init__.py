"""Python SDK of the Agent Skill Runner REST API (sync, urllib3 only)."""

from skill_runner_client.client import DEFAULT_URL, Client, Jobs, TempRuns
from skill_runner_client.errors import SkillRunnerError
from skill_runner_client.types import TERMINAL_STATUSES

__all__ = ["Client", "DEFAULT_URL", "Jobs", "SkillRunnerError", "TempRuns", "TERMINAL_STATUSES"]
__version__ = "0.1.0"
