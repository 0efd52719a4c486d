"""THE list of background jobs: every job the service runs is here, with its
interval and its entry point (``tests/test_jobs.py`` checks that the
scheduler runs exactly these). Intervals are the machine's time."""
from __future__ import annotations

from app.api.broadcast_delivery import JOB as BROADCASTS
from app.jobs import cleanup, delivery
from app.jobs.runner import Job
from app.webhooks.delivery import JOB as WEBHOOKS

JOBS: tuple[Job, ...] = (
    Job(BROADCASTS, 0.5, delivery.deliver_due_broadcasts,
        "send queued broadcast recipients, batch by batch (woken by createBroadcast)"),
    Job(WEBHOOKS, 1.0, delivery.deliver_due_webhooks,
        "deliver due updates to webhooks, retries on their schedule (woken by each new update)"),
    Job("delete_expired_records", 60.0, cleanup.delete_expired_records,
        "drop updates, idempotency keys, webhook delivery and call log records past 24"
        " hours; checkpoint the WAL", once_per_interval=True),
    Job("sweep_upload_leftovers", 600.0, cleanup.sweep_upload_leftovers,
        "remove quarantine and work files of uploads no longer under way",
        once_per_interval=True),
    Job("delete_old_history", 3600.0, cleanup.delete_old_history,
        "remove chat history past BOTSVC_HISTORY_RETENTION_DAYS", once_per_interval=True,
        wanted=lambda settings: settings.history_retention_days > 0),
    Job("keep_disk_reserve", 30.0, cleanup.keep_disk_reserve,
        "in every process: make the data dir's 1 MiB reserve again once there is room"
        " (a start on a full disk gives it back to open the database)"),
    Job("release_unreleased_claims", 2.0, cleanup.release_unreleased_claims,
        "in every process: release the Idempotency-Key claims a full disk kept it from"
        " releasing"),
    Job("recover_from_dead_processes", None, cleanup.recover_from_dead_processes,
        "at each process start: release the Idempotency-Key claims and remove the upload"
        " files of processes that died"),
)
