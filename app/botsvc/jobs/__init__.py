"""Background work, in one place, below every layer that has work to do.

- ``schedule.py``: THE list of jobs (name, interval, purpose). A job that is
  not in it does not run.
- ``actions.py``: what each listed job does, registered by name by the module
  where the work lives (deliveries in app/botsvc/api/broadcast_delivery.py and
  app/botsvc/webhooks/delivery.py, clean-ups in app/botsvc/maintenance.py). So this package
  imports nothing above it, and any layer may wake a job.
- ``runner.py``: one pass of a job (its connection, the service clock, the
  record of its last start, success and failure in ``job_runs``), and
  ``claim_periodic`` for the jobs that run once per interval across processes.
- ``scheduler.py``: this process's APScheduler thread, which only ticks, and
  ``wake_after_commit``/``wake``, the one way to run a job now.
- ``health.py``: ``job_health``, what the records say (failing, stuck).

APScheduler only ticks; the database is the queue. Every gunicorn worker runs
every job, so each pass claims its rows atomically in SQLite
(``UPDATE ... RETURNING`` inside ``BEGIN IMMEDIATE``, with a lease a crashed
claimer lets expire), and a job that must run once per interval across all
processes claims its turn with ``claim_periodic``.
"""
from botsvc.jobs.actions import action
from botsvc.jobs.runner import (
    claim_periodic,
    make_periodic_jobs_due,
    release_claim,
    run_job,
    run_start_jobs,
)
from botsvc.jobs.schedule import DELIVER_BROADCASTS, DELIVER_WEBHOOKS, JOBS, Job
from botsvc.jobs.scheduler import start_worker, wake, wake_after_commit, wake_all

__all__ = ["DELIVER_BROADCASTS", "DELIVER_WEBHOOKS", "JOBS", "Job", "action", "claim_periodic",
           "make_periodic_jobs_due", "release_claim", "run_job", "run_start_jobs", "start_worker", "wake",
           "wake_after_commit", "wake_all"]
