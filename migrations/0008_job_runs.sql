-- The record of each background job (app/botsvc/jobs/schedule.py): its last start,
-- success and failure, so /readyz or the metrics can show a failing or stuck
-- job. Times are the machine's clock (like the jobs' intervals), in seconds.
BEGIN;

CREATE TABLE job_runs (
    name TEXT PRIMARY KEY,
    first_seen_at REAL NOT NULL,          -- when a scheduler first listed it
    last_started_at REAL,
    last_success_at REAL,
    last_failure_at REAL,
    last_error TEXT,                      -- the failure's exception class, never its message
    consecutive_failures INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

PRAGMA user_version = 8;
COMMIT;
