"""The Celery app factory: the app and its configuration for the given settings.

Settings for Redis: acks_late + prefetch 1 so a worker takes one message per free process, and
no reject_on_worker_lost (it loops on OOM kills). kombu's ack emulation is off: a message a
worker took is its own until the run ends, and the database, not the broker, brings back what a
dead worker held (the sweep re-sends queued runs, a lease ends running ones). With it on, a
worker that held a message when Redis went away exited: kombu put the message back from its
unacked hash through a connection it had already closed, and that error was not caught (with it
off the put-back fails the same way, is logged, and the worker reconnects). The sweep's period
comes from
SKILL_RUNNER_SWEEP_INTERVAL_SEC (tests shorten it).
"""

from __future__ import annotations

from celery import Celery
from celery.signals import beat_init, setup_logging, worker_init
from kombu import Queue

from runner_core.logs import configure_logging
from runner_core.queues import MAINTENANCE_QUEUE, QUEUES, SCRIPT_QUEUE, SWEEP
from runner_core.settings import (
    HARD_LIMIT_MARGIN_SEC,
    SOFT_LIMIT_MARGIN_SEC,
    Settings,
    hold_service_secrets,
)

BRPOP_WAIT_SEC = 5.0
TASK_MODULES = [
    "worker.tasks",
    "worker.interactive.tasks",
    "worker.webhook_tasks",
    "worker.composite.workflow",
    "worker.engine_upgrades",
]


def create_celery_app(settings: Settings) -> Celery:
    """The worker's app: its broker, queues, limits, events and the sweep's schedule; its
    logging and the secrets it holds back from what it starts follow `settings`."""
    app = Celery("skill_runner", broker=settings.broker_url, include=TASK_MODULES)
    app.conf.update(
        task_acks_late=True,
        worker_prefetch_multiplier=1,
        task_reject_on_worker_lost=False,
        task_track_started=True,
        task_ignore_result=True,
        broker_connection_retry_on_startup=True,
        broker_transport_options={
            # how long one BRPOP waits (kombu's brpop_timeout, 1 s by default): a message ends
            # it at once, so a longer wait only spares an idle worker its wake-ups
            "polling_interval": BRPOP_WAIT_SEC,
            # no copy of a taken message in Redis (kombu's unacked hash): putting it back when
            # the connection was lost crashed the worker (see the docstring)
            "ack_emulation": False,
        },
        # a run keeps going through a broker outage and records its end in the database
        # (Celery 6 makes True the default: it would kill the run's process)
        worker_cancel_long_running_tasks_on_connection_loss=False,
        task_queues=[Queue(name) for name in QUEUES],
        task_default_queue=SCRIPT_QUEUE,
        task_routes={SWEEP: {"queue": MAINTENANCE_QUEUE}},
        # defaults for messages that carry no limits of their own (the API's carry the run's)
        task_soft_time_limit=settings.max_timeout_sec + SOFT_LIMIT_MARGIN_SEC,
        task_time_limit=settings.max_timeout_sec + HARD_LIMIT_MARGIN_SEC,
        # Task events cost a broker publish each; Flower turns the workers' events on while it runs
        # (its enable_events), SKILL_RUNNER_TASK_EVENTS=1 keeps them always on. `task-sent` (sent
        # by the sender, so Flower cannot switch it) is on unless SKILL_RUNNER_TASK_SENT_EVENTS=0.
        worker_send_task_events=settings.task_events,
        task_send_sent_event=settings.task_events or settings.task_sent_events,
        # the sweep re-sends lost messages, reconciles expired leases and reaps orphan groups;
        # a sweep not picked up within one interval is dropped (the next one does the same work)
        beat_schedule={
            "sweep": {
                "task": SWEEP,
                "schedule": settings.sweep_interval_sec,
                "options": {"expires": max(1.0, settings.sweep_interval_sec)},
            },
        },
    )

    def configure(**_kwargs) -> None:
        """Worker and beat log like the API (runner_core.logs: LOG_LEVEL, LOG_FILE, rotation,
        LOG_FORMAT); connected, this replaces Celery's own logging set-up."""
        configure_logging(settings)

    def hold_secrets(**_kwargs) -> None:
        """Before the pool forks: the secrets leave os.environ and /proc/<pid>/environ, so the
        skill scripts and agent CLIs the worker starts cannot read them from their parent."""
        hold_service_secrets(settings)

    setup_logging.connect(configure, weak=False)
    worker_init.connect(hold_secrets, weak=False)
    beat_init.connect(hold_secrets, weak=False)
    return app
