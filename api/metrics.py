"""GET /metrics in Prometheus' text format: what the processes recorded in the multiprocess
files (run durations, failures by code, event subscribers: runner_core.metrics) plus what is
read at scrape time from SQL (runs by status, engine and skill; busy worker slots) and the
broker (messages per queue). Behind the API token like every route but /healthz."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from flask import Flask, Response
from sqlalchemy import func, select

from api import context
from runner_core.queues import QUEUES
from runner_core.statuses import RunStatus
from runner_core.store.models import Run

VALUE_FILE_HEADER = 8  # a value file begins with its used length and padding (bytes)


class ScrapeTimeCollector:
    """Gauges read when Prometheus scrapes (prometheus-client's custom collector protocol)."""

    def __init__(self, sessions: Any, queue: Any) -> None:
        self.sessions, self.queue = sessions, queue

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        runs = GaugeMetricFamily(
            "skill_runner_runs",
            "Runs by status, engine and skill",
            labels=["status", "engine", "skill"],
        )
        waiting = GaugeMetricFamily(
            "skill_runner_runs_waiting_user", "Interactive runs waiting for a reply"
        )
        busy = GaugeMetricFamily(
            "skill_runner_worker_slots_busy",
            "Runs executing now, by worker host (each holds one pool process)",
            labels=["host"],
        )
        with self.sessions() as session:
            rows = session.execute(
                select(Run.status, Run.engine, Run.skill_id, func.count()).group_by(
                    Run.status, Run.engine, Run.skill_id
                )
            ).all()
            hosts = session.scalars(select(Run.worker).where(Run.status == RunStatus.RUNNING))
            by_host = Counter((worker or "").rsplit(":", 1)[0] for worker in hosts)
        for status, engine, skill, count in rows:
            runs.add_metric([status, engine or "script", skill], count)
        waiting.add_metric(
            [], sum(count for status, *_, count in rows if status == RunStatus.WAITING_USER)
        )
        for host, count in sorted(by_host.items()):
            busy.add_metric([host], count)
        depth = GaugeMetricFamily(
            "skill_runner_queue_depth", "Messages waiting in each broker queue", labels=["queue"]
        )
        for name, count in self.queue.depths(QUEUES).items():
            depth.add_metric([name], count)
        yield from (runs, waiting, busy, depth)


class ProcessFilesCollector:
    """prometheus-client's multiprocess merge over the processes' value files, leaving out a
    file another process is creating right now (still empty: nothing counted in it yet). A
    preloaded gunicorn worker creates its files at its first count, while another may scrape."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def collect(self) -> Iterator[Any]:
        from prometheus_client.multiprocess import MultiProcessCollector

        files = []
        for file in self.path.glob("*.db"):
            try:
                if file.stat().st_size >= VALUE_FILE_HEADER:
                    files.append(str(file))
            except FileNotFoundError:  # its process ended and its file was removed
                continue
        return iter(MultiProcessCollector.merge(files, accumulate=True))


def register_metrics(app: Flask) -> None:
    """Add GET /metrics (outside the OpenAPI document: Prometheus' format, not JSON)."""

    @app.get("/metrics")
    def metrics() -> Response:
        from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

        registry = CollectorRegistry()
        registry.register(ProcessFilesCollector(context.settings().metrics_dir))
        registry.register(ScrapeTimeCollector(app.extensions["db"], context.queue()))
        return Response(generate_latest(registry), mimetype=CONTENT_TYPE_LATEST)
