"""Writes that record a run's end are retried while the database does not answer."""

from __future__ import annotations

import sqlite3

import pytest
from sqlalchemy.exc import OperationalError

from runner_core.store.db import retry_unavailable


def unavailable() -> OperationalError:
    return OperationalError("UPDATE runs", {}, sqlite3.OperationalError("database is locked"))


def test_a_write_that_fails_then_works_is_retried_until_it_works():
    calls = []

    def write():
        calls.append(1)
        if len(calls) < 3:
            raise unavailable()
        return "done"

    assert retry_unavailable(write, "finish", budget_sec=5, first_delay=0.01) == "done"
    assert len(calls) == 3


def test_the_last_error_is_raised_when_the_budget_runs_out():
    calls = []

    def write():
        calls.append(1)
        raise unavailable()

    with pytest.raises(OperationalError):
        retry_unavailable(write, "finish", budget_sec=0.05, first_delay=0.01)
    assert 2 <= len(calls) <= 6


def test_other_errors_are_not_retried():
    calls = []

    def write():
        calls.append(1)
        raise ValueError("a bug, not an outage")

    with pytest.raises(ValueError):
        retry_unavailable(write, "finish", budget_sec=5, first_delay=0.01)
    assert calls == [1]
