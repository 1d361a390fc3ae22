"""`python -m bench.sweep_pass PASSES GAP`: the worker's sweep (worker.recovery.sweep.recover) PASSES
times, GAP seconds apart, in this process with the settings of its environment (a bench
service's), then one read of the broker view; prints each pass's seconds and counts as JSON."""

from __future__ import annotations

import json
import sys
import time


def main(passes: int, gap: float) -> dict:
    from runner_core.queues import RUN_QUEUES
    from worker import context
    from worker.context import sessions
    from worker.dispatch import send_run
    from worker.recovery.broker_view import read_broker
    from worker.recovery.sweep import recover

    done = []
    for i in range(passes):
        if i:
            time.sleep(gap)
        started = time.perf_counter()
        counts = recover(context.settings(), sessions(), send_run)
        done.append(
            {
                "sec": time.perf_counter() - started,
                "resent": counts["resent"],
                "still_queued": counts["still_queued"],
            }
        )
    started = time.perf_counter()
    view = read_broker(context.settings().broker_url, RUN_QUEUES, context.settings().broker_view)
    read = time.perf_counter() - started
    return {"passes": done, "read_sec": read, "held": len(view.task_ids or ())}


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]), float(sys.argv[2]))))
