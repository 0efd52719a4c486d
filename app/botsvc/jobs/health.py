"""What the job records say: per listed job, how long since its last success,
whether its last pass failed, and whether it is stuck (no success in several
intervals). For /readyz and the metrics; cheap (one read of a small table)."""
from __future__ import annotations

from botsvc.jobs import records
from botsvc.jobs.schedule import JOBS

# A scheduled job is stuck when it has not succeeded for this many intervals
# (an interval is at least the records' granularity, see records.py).
STUCK_INTERVALS = 3


def stuck_after(seconds: float) -> float:
    return STUCK_INTERVALS * max(seconds, records.RECORD_EVERY_SECONDS)


def job_health(conn, now: float) -> list[dict]:
    """One entry per listed job, in the list's order. ``now`` is the machine's
    time (``clock.machine_time()``), as the records are. A job no scheduler has
    listed yet (its row is missing) is neither failing nor stuck."""
    rows = {row["name"]: row for row in conn.execute("SELECT * FROM job_runs")}
    health = []
    for job in JOBS:
        row = rows.get(job.name)
        success = row["last_success_at"] if row else None
        failure = row["last_failure_at"] if row else None
        since = success if success is not None else (row["first_seen_at"] if row else None)
        health.append({
            "name": job.name,
            "interval_seconds": job.seconds,
            "last_started_at": row["last_started_at"] if row else None,
            "last_success_at": success,
            "last_failure_at": failure,
            "last_error": row["last_error"] if row else None,
            "consecutive_failures": row["consecutive_failures"] if row else 0,
            "success_age_seconds": None if success is None else max(0.0, now - success),
            "failing": failure is not None and (success is None or failure >= success),
            "stuck": (job.seconds is not None and since is not None
                      and now - since > stuck_after(job.seconds)),
        })
    return health
