"""THE list of background jobs: every job the service runs is here, with its
interval and what it is for (``tests/infra/test_jobs.py`` checks that the
scheduler runs exactly these). Its work is registered under its name where
that work lives (``actions.py``). Intervals are the machine's time."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from botsvc.jobs import actions


@dataclass(frozen=True)
class Job:
    name: str
    # Seconds between ticks in every process; None: once at each process start.
    seconds: float | None
    purpose: str = ""
    # True: one pass per interval across all processes (``claim_periodic``);
    # False: a pass in every process at every tick (the work is claimed row by row).
    once_per_interval: bool = False
    # When given and false for the settings, a tick does nothing (and claims
    # no turn, so turning the setting on makes the next tick run it).
    wanted: Callable | None = None   # wanted(settings) -> bool
    # The work, run(conn, settings) inside an app context. None (every listed
    # job): the action registered under ``name`` (actions.py). A job made by
    # hand, as the tests make them, may carry its own.
    run: Callable | None = None

    def action(self) -> Callable:
        return self.run if self.run is not None else actions.action_for(self.name)


DELIVER_BROADCASTS = "deliver_due_broadcasts"
DELIVER_WEBHOOKS = "deliver_due_webhooks"

JOBS: tuple[Job, ...] = (
    Job(DELIVER_BROADCASTS, 0.5,
        "send queued broadcast recipients, batch by batch, one process at a time (woken by"
        " createBroadcast);"
        " app/botsvc/api/broadcast_delivery.py"),
    Job(DELIVER_WEBHOOKS, 1.0,
        "deliver due updates to webhooks, retries on their schedule (woken by each new"
        " update); app/botsvc/webhooks/delivery.py"),
    Job("delete_expired_records", 60.0,
        "drop updates, idempotency keys, webhook delivery and call log records past 24"
        " hours; checkpoint the WAL; app/botsvc/maintenance.py", once_per_interval=True),
    Job("checkpoint_wal", 1.0,
        "in every process: copy the WAL into the database, outside the write lock"
        " (no commit does: app/botsvc/db/connection.py), unless Litestream replicates (it"
        " owns the checkpoints: app/botsvc/replication.py); app/botsvc/maintenance.py"),
    Job("sweep_upload_leftovers", 600.0,
        "remove quarantine and work files of uploads no longer under way; app/botsvc/maintenance.py",
        once_per_interval=True),
    Job("delete_old_history", 3600.0,
        "remove chat history past BOTSVC_HISTORY_RETENTION_DAYS; app/botsvc/maintenance.py",
        once_per_interval=True, wanted=lambda settings: settings.history_retention_days > 0),
    Job("keep_disk_reserve", 30.0,
        "in every process: make the data dir's 1 MiB reserve again once there is room"
        " (a start on a full disk gives it back to open the database); app/botsvc/maintenance.py"),
    Job("release_unreleased_claims", 2.0,
        "in every process: release the Idempotency-Key claims a full disk kept it from"
        " releasing; app/botsvc/maintenance.py"),
    Job("recover_from_dead_processes", None,
        "at each process start: release the Idempotency-Key claims and remove the upload"
        " files of processes that died; app/botsvc/maintenance.py"),
)
