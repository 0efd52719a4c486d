-- Foundation: the platform switch, bots, simulated users, memberships (chats),
-- messages, updates, idempotency keys, rate-limit state and periodic jobs.
BEGIN;

CREATE TABLE platform (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    disabled INTEGER NOT NULL DEFAULT 0
);
INSERT INTO platform (id, disabled) VALUES (1, 0);

CREATE TABLE bots (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    username TEXT NOT NULL UNIQUE,
    display_name TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    token_hash BLOB NOT NULL,          -- SHA-256 of the whole token; the token itself is never stored
    disabled INTEGER NOT NULL DEFAULT 0,
    last_message_id INTEGER NOT NULL DEFAULT 0,  -- the per-bot message_id sequence
    created_at INTEGER NOT NULL
);

CREATE TABLE users (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    display_name TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL
);

-- One row per (bot, user) pair from that user's first Start on: the membership.
CREATE TABLE chats (
    id INTEGER PRIMARY KEY,
    chat_id TEXT NOT NULL UNIQUE,      -- public vc_ + 40 hex, random per pair
    bot_id INTEGER NOT NULL REFERENCES bots (id),
    user_id INTEGER NOT NULL REFERENCES users (id),
    status TEXT NOT NULL CHECK (status IN ('active', 'stopped')),
    blocked INTEGER NOT NULL DEFAULT 0,
    started_at INTEGER NOT NULL,
    stopped_at INTEGER,
    UNIQUE (bot_id, user_id)
);
CREATE INDEX chats_by_bot_status ON chats (bot_id, status, chat_id);

CREATE TABLE messages (
    bot_id INTEGER NOT NULL REFERENCES bots (id),
    message_id INTEGER NOT NULL,
    chat_ref INTEGER NOT NULL REFERENCES chats (id),
    from_bot INTEGER NOT NULL,
    type TEXT NOT NULL,
    date INTEGER NOT NULL,
    content TEXT NOT NULL,             -- JSON: text, caption, media, card, reply_markup
    reply_to_message_id INTEGER,
    media_group_id TEXT,
    edit_date INTEGER,
    deleted_at INTEGER,
    PRIMARY KEY (bot_id, message_id)
) WITHOUT ROWID;
CREATE INDEX messages_by_chat ON messages (chat_ref, message_id);

CREATE TABLE updates (
    update_id INTEGER PRIMARY KEY AUTOINCREMENT,
    bot_id INTEGER NOT NULL REFERENCES bots (id),
    payload TEXT NOT NULL,             -- the Update JSON without update_id
    created_at INTEGER NOT NULL
);
CREATE INDEX updates_by_bot ON updates (bot_id, update_id);
CREATE INDEX updates_by_age ON updates (created_at);

CREATE TABLE idempotency_keys (
    bot_id INTEGER NOT NULL,
    key TEXT NOT NULL,
    method TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('running', 'done')),
    lease_expires_at REAL,             -- a running claim whose holder died expires
    http_status INTEGER,
    response TEXT,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (bot_id, key)
) WITHOUT ROWID;
CREATE INDEX idempotency_by_age ON idempotency_keys (created_at);

-- GCRA: one theoretical arrival time per bot and limit is the whole state.
CREATE TABLE rate_limits (
    bot_id INTEGER NOT NULL,
    bucket TEXT NOT NULL,
    tat REAL NOT NULL,
    PRIMARY KEY (bot_id, bucket)
) WITHOUT ROWID;

-- Periodic jobs run once per interval across every process that ticks.
CREATE TABLE periodic_jobs (
    name TEXT PRIMARY KEY,
    next_run_at REAL NOT NULL
) WITHOUT ROWID;

PRAGMA user_version = 1;
COMMIT;
