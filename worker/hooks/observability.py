"""What each worker process sets up for operators: the metrics files (before the pool
forks) and the run context of log lines while a run task executes. Logging itself is set up
by the app (worker.app; beat needs it too)."""

from __future__ import annotations

from contextlib import AbstractContextManager

from celery.signals import task_postrun, task_prerun, worker_init

from runner_core.logs import run_context
from runner_core.metrics import use_metrics_dir
from runner_core.queues import RUN_TASKS
from worker import context


@worker_init.connect
def _metrics_files(**_kwargs) -> None:
    """Before the pool forks: this process and its children record metrics in the service's
    multiprocess files (runner_core.metrics)."""
    settings = context.settings()
    use_metrics_dir(settings.metrics_dir, settings.data_dir)


_log_contexts: dict[str, AbstractContextManager] = {}


@task_prerun.connect
def _enter_run_context(task_id=None, task=None, args=None, **_kwargs) -> None:
    """Lines logged while a run task executes carry its run_id (request_id once claimed)."""
    if task is not None and task.name in RUN_TASKS and args:
        context = run_context(args[0], None)
        context.__enter__()
        _log_contexts[task_id] = context


@task_postrun.connect
def _leave_run_context(task_id=None, **_kwargs) -> None:
    context = _log_contexts.pop(task_id, None)
    if context is not None:
        context.__exit__(None, None, None)
