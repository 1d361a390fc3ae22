"""`hold` in a process of its own: a held secret leaves os.environ and /proc/<pid>/environ but
the service still reads it (runner_core.secret_values)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap

from runner_core.settings import REPO_ROOT

HOLD = textwrap.dedent(
    """
    import os, subprocess
    from runner_core.secret_values import env_value, hold
    from runner_core.engines.config import resolve_api_key
    hold(names=["MY_PROVIDER_CRED"])
    child = subprocess.run(["cat", f"/proc/{os.getpid()}/environ"], capture_output=True).stdout
    print(repr((
        os.environ.get("PGPASSWORD"), b"pg-pass-4e8a2c" in child,
        "FAKE_API_KEY" in os.environ, "MY_PROVIDER_CRED" in os.environ,
        b"held-key-1c9e7b" in child, b"named-cred-6b2f0d" in child, b"visible-1" in child,
        env_value("FAKE_API_KEY"), resolve_api_key({"api_key_env": "MY_PROVIDER_CRED"}),
    )))
    """
)


def test_a_held_secret_leaves_the_environment_and_proc_but_is_still_read() -> None:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": str(REPO_ROOT),
        "FAKE_API_KEY": "held-key-1c9e7b",
        "MY_PROVIDER_CRED": "named-cred-6b2f0d",
        "PLAIN": "visible-1",
        "PGPASSWORD": "pg-pass-4e8a2c",  # libpq reads it from the environment: it stays there
    }
    out = subprocess.run(
        [sys.executable, "-c", HOLD], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert ast.literal_eval(out) == (
        "pg-pass-4e8a2c",
        False,
        False,
        False,
        False,
        False,
        True,
        "held-key-1c9e7b",
        "named-cred-6b2f0d",
    )
