"""`skill-runner` (launcher.cli) without its optional half: the client package."""

from __future__ import annotations

import sys

from launcher.cli import main


def test_a_client_command_without_the_client_package_says_how_to_install_it(
    monkeypatch, capsys
) -> None:
    monkeypatch.setitem(sys.modules, "skill_runner_client", None)  # import fails as if absent
    monkeypatch.delitem(sys.modules, "skill_runner_client.cli", raising=False)
    assert main(["submit", "demo-prime-number"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        "skill-runner: 'submit' is a client command; install the client package: "
        "pip install ./client (docs/clients.md)\n"
    )
