-- Broadcasts: one queued single-message send for many members, delivered by
-- the background worker. A recipient row changes state in the same transaction
-- that records its message, and the counters on the broadcast row change in
-- that transaction too, so queued + sent + failed + cancelled = total holds in
-- every committed state (the CHECK makes SQLite refuse anything else).
BEGIN;

CREATE TABLE broadcasts (
    id INTEGER PRIMARY KEY,
    broadcast_id TEXT NOT NULL UNIQUE,  -- public bc_ + 32 hex
    bot_id INTEGER NOT NULL REFERENCES bots (id),
    method TEXT NOT NULL,               -- the send method, e.g. sendMessage
    payload TEXT NOT NULL,              -- JSON: the method's parameters without chat_id
    status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'cancelled')),
    total INTEGER NOT NULL,
    queued INTEGER NOT NULL,
    sent INTEGER NOT NULL DEFAULT 0,
    failed INTEGER NOT NULL DEFAULT 0,
    cancelled INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    completed_at INTEGER,
    CHECK (queued >= 0 AND sent >= 0 AND failed >= 0 AND cancelled >= 0),
    CHECK (queued + sent + failed + cancelled = total)
);
CREATE INDEX broadcasts_by_bot ON broadcasts (bot_id, id);
-- What the deliverer scans on every tick: only the unfinished ones.
CREATE INDEX broadcasts_unfinished ON broadcasts (id) WHERE status IN ('queued', 'running');

-- position orders delivery and the recipients' pages (request order for an
-- explicit chat_ids list, chat_id order for a snapshot of the members).
CREATE TABLE broadcast_recipients (
    broadcast_ref INTEGER NOT NULL REFERENCES broadcasts (id),
    position INTEGER NOT NULL,
    chat_ref INTEGER NOT NULL REFERENCES chats (id),
    status TEXT NOT NULL CHECK (status IN ('queued', 'sent', 'failed', 'cancelled')),
    message_id INTEGER,                 -- set when sent
    last_error TEXT,                    -- the error_code the send met, when failed
    PRIMARY KEY (broadcast_ref, position),
    UNIQUE (broadcast_ref, chat_ref)    -- one message per member and broadcast
) WITHOUT ROWID;
CREATE INDEX broadcast_recipients_queued ON broadcast_recipients (broadcast_ref, position)
    WHERE status = 'queued';

PRAGMA user_version = 5;
COMMIT;
