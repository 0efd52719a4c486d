-- The bot's call log (getBotCalls, docs/call-log.md): one row per /v2 call of
-- a known bot, written after its answer, best effort; and per bot, the count
-- of empty polls (not recorded as calls) and the date of its last poll.
BEGIN;

-- Kept: the newest 1,000 rows of each bot, at most 24 hours of service time.
-- Both bounds are applied exactly when reading; rows past them are removed
-- in bulk (trimmed as a bot writes, expired by the clean-up job), so the
-- table stays near 1,000 rows a bot whatever the history. No foreign keys
-- here: a batch checks each of its bots once (a record written after reset
-- removed its bot is dropped), and reset removes these rows with the bots.
CREATE TABLE bot_calls (
    -- The order the records were written. AUTOINCREMENT: never reused, not
    -- even once every row has expired or after reset (a cursor of a page read
    -- before can never name a later record).
    call_id INTEGER PRIMARY KEY AUTOINCREMENT,
    bot_id INTEGER NOT NULL,
    date INTEGER NOT NULL,              -- service clock, when the call arrived
    method TEXT NOT NULL,               -- as requested: an unknown name too
    http_status INTEGER NOT NULL,
    duration_ms REAL NOT NULL,
    request_id TEXT NOT NULL,           -- the answer's X-Request-Id
    error_code TEXT,                    -- a failure's
    description TEXT,                   -- a failure's
    idempotency_key TEXT,
    replayed INTEGER NOT NULL,          -- 1: answered from a stored Idempotency-Key
    params BLOB,                        -- JSON text (UTF-8): as sent when short, else
                                        -- compact; NULL when the body was not read, or
                                        -- its compact JSON is over 16 KiB
    result BLOB,                        -- a success's result (compact JSON), the same way
    truncated INTEGER NOT NULL          -- 1: params or result was over 16 KiB
);
-- Pages of one bot newest first, its 1,000th newest row, its oldest rows to
-- trim. Expiry walks the primary key from the oldest row: no index on date.
CREATE INDEX bot_calls_by_bot ON bot_calls (bot_id, call_id);

-- Per bot: its rows in bot_calls (so that trimming deletes only the rows
-- past the bound, walking nothing else), and its polls.
CREATE TABLE bot_call_counts (
    bot_id INTEGER PRIMARY KEY,
    calls_kept INTEGER NOT NULL,        -- rows of the bot in bot_calls
    empty_polls INTEGER NOT NULL,       -- getUpdates that succeeded with no update
    last_poll_at INTEGER                -- service clock: its newest getUpdates of any kind
) WITHOUT ROWID;

PRAGMA user_version = 10;
COMMIT;
