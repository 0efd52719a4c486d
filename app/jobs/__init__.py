"""Background work, in one place.

- ``schedule.py``: THE list of jobs (name, interval, entry point). A job that
  is not in it does not run.
- ``cleanup.py``, ``delivery.py``: the jobs' entry points, one pass each; the
  work itself stays in its domain module.
- ``runner.py``: one pass of a job (its connection, the service clock, the
  record of its last start, success and failure in ``job_runs``), and
  ``claim_periodic`` for the jobs that run once per interval across processes.
- ``scheduler.py``: this process's APScheduler thread, which only ticks, and
  ``wake``.
- ``health.py``: ``job_health``, what the records say (failing, stuck).

APScheduler only ticks; the database is the queue. Every gunicorn worker runs
every job, so each pass claims its rows atomically in SQLite
(``UPDATE ... RETURNING`` inside ``BEGIN IMMEDIATE``, with a lease a crashed
claimer lets expire), and a job that must run once per interval across all
processes claims its turn with ``claim_periodic``.

This module imports neither the list nor the domain modules, so a domain
module may import ``wake`` from here without a cycle.
"""
from app.jobs.runner import Job, claim_periodic, make_periodic_jobs_due, run_job
from app.jobs.scheduler import start_worker, wake, wake_all

__all__ = ["Job", "claim_periodic", "make_periodic_jobs_due", "run_job", "start_worker",
           "wake", "wake_all"]
