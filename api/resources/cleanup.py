"""POST /v1/jobs/cleanup: remove finished runs (rows and directories) older than a cutoff."""

from __future__ import annotations

import shutil
import time
from datetime import timedelta

from flask.views import MethodView
from marshmallow import Schema, fields, validate
from sqlalchemy import and_, delete, or_, select

from api import auth, context, idempotency
from api.blueprint import Blueprint
from api.jobs import pending
from api.schemas.input_fields import WholeNumber
from runner_core.statuses import TERMINAL_STATUSES, RunStatus
from runner_core.store.models import IdempotencyKey, Request, Run, utcnow

blp = Blueprint("cleanup", __name__, url_prefix="/v1/jobs", description="Housekeeping")


class CleanupArgs(Schema):
    # at most 100 years: a larger age is no date (it overflowed into a 500)
    older_than_sec = WholeNumber(
        load_default=0, validate=validate.Range(min=0, max=100 * 365 * 86400)
    )
    statuses = fields.List(
        fields.String(validate=validate.OneOf((*TERMINAL_STATUSES, RunStatus.WAITING_USER))),
        load_default=list(TERMINAL_STATUSES),
        metadata={
            "description": "default: the finished ones; `waiting_user` only when named (its age "
            "counts from its question)"
        },
    )


class CleanupResult(Schema):
    runs_deleted = fields.Integer()
    requests_deleted = fields.Integer()
    older_than_sec = fields.Integer()
    more = fields.Boolean(
        metadata={
            "description": "true when the time budget ran out with runs left to delete: call again"
        }
    )


BATCH = 500  # runs per transaction: SQLite caps the parameters of one statement
TIME_BUDGET_SEC = 20.0  # per request, well inside gunicorn's timeout


@blp.route("/cleanup")
class Cleanup(MethodView):
    @blp.arguments(CleanupArgs())
    @blp.response(200, CleanupResult)
    def post(self, args):
        """Delete finished runs older than `older_than_sec` with their requests and files, in
        batches of 500, for up to 20 s (`more: true`: call again for the rest). A token that
        is not admin deletes only its own runs."""
        settings = context.settings()
        cutoff = utcnow() - timedelta(seconds=args["older_than_sec"])
        deadline = time.monotonic() + TIME_BUDGET_SEC
        runs_deleted = requests_deleted = 0
        while True:
            run_ids, request_ids = _delete_batch(args["statuses"], cutoff, auth.owner_filter())
            for run_id in run_ids:
                shutil.rmtree(settings.runs_dir / run_id, ignore_errors=True)
            for request_id in request_ids:
                shutil.rmtree(settings.requests_dir / request_id, ignore_errors=True)
            runs_deleted += len(run_ids)
            requests_deleted += len(request_ids)
            more = len(run_ids) == BATCH
            if not more or time.monotonic() >= deadline:
                break
        idempotency.forget_expired()  # Idempotency-Keys past SKILL_RUNNER_IDEMPOTENCY_TTL_SEC
        pending.forget_stale(auth.owner_filter())  # bodies whose package never came
        return {
            "runs_deleted": runs_deleted,
            "requests_deleted": requests_deleted,
            "older_than_sec": args["older_than_sec"],
            "more": more,
        }


def _delete_batch(statuses: list[str], cutoff, owner: str | None) -> tuple[list[str], list[str]]:
    """Delete up to BATCH finished runs (and waiting ones, when named) of `owner` (None: of
    everyone), with the requests pointing at them, in one transaction."""
    ended = [s for s in statuses if s in TERMINAL_STATUSES]
    old_enough = and_(
        Run.status.in_(ended), Run.finished_at.is_not(None), Run.finished_at <= cutoff
    )
    if RunStatus.WAITING_USER in statuses:  # never unless asked: a person may still answer
        waiting = and_(Run.status == RunStatus.WAITING_USER, Run.updated_at <= cutoff)
        old_enough = or_(old_enough, waiting)
    if owner is not None:
        old_enough = and_(old_enough, Run.owner == owner)
    with context.db_session() as session:
        run_ids = list(session.scalars(select(Run.id).where(old_enough).limit(BATCH)))
        if not run_ids:
            return [], []
        owners = session.execute(
            select(Request.id, Request.run_id).where(Request.run_id.in_(run_ids))
        )
        by_run = [(row.id, row.run_id) for row in owners]
        # the guard again: a reply may have moved a waiting run on meanwhile
        deleted = set(
            session.scalars(delete(Run).where(Run.id.in_(run_ids), old_enough).returning(Run.id))
        )
        request_ids = [rid for rid, run_id in by_run if run_id in deleted]
        if request_ids:
            session.execute(delete(Request).where(Request.id.in_(request_ids)))
            # their Idempotency-Keys too: the key sent again creates the job anew instead of
            # answering an id that is gone (a resumed batch stopped at its 404)
            gone = IdempotencyKey.request_id.in_(request_ids)
            session.execute(delete(IdempotencyKey).where(gone))
        session.commit()
    return sorted(deleted), request_ids
