-- The testing tools: the service clock's offset, injected
-- faults and the record of webhook delivery attempts.
BEGIN;

-- Seconds added to the machine's clock; read with the platform switch on
-- every request, so every process follows advanceClock at no extra cost.
ALTER TABLE platform ADD COLUMN clock_offset INTEGER NOT NULL DEFAULT 0;

-- Set while the bot has faults waiting: the token query reads it, so a bot
-- without faults costs no extra query.
ALTER TABLE bots ADD COLUMN has_faults INTEGER NOT NULL DEFAULT 0;

-- The bot's next `remaining` calls of `method` are held delay_ms, then
-- answered with error_code (or executed when it is NULL).
CREATE TABLE faults (
    bot_id INTEGER NOT NULL REFERENCES bots (id),
    method TEXT NOT NULL,
    error_code TEXT,
    delay_ms INTEGER NOT NULL DEFAULT 0,
    remaining INTEGER NOT NULL CHECK (remaining > 0),
    PRIMARY KEY (bot_id, method)
) WITHOUT ROWID;

-- One row per finished webhook delivery attempt, kept 24 hours.
CREATE TABLE webhook_deliveries (
    id INTEGER PRIMARY KEY,            -- recording order: the pages' key, newest first
    bot_id INTEGER NOT NULL REFERENCES bots (id),
    update_id INTEGER NOT NULL,
    attempt INTEGER NOT NULL,          -- 1 for the update's first attempt, 2 for its first retry...
    started_at INTEGER NOT NULL,       -- service clock
    duration_ms INTEGER NOT NULL,
    http_status INTEGER,               -- when the receiver answered
    error TEXT                         -- when the attempt failed
);
CREATE INDEX webhook_deliveries_by_bot ON webhook_deliveries (bot_id, id);
CREATE INDEX webhook_deliveries_by_update ON webhook_deliveries (bot_id, update_id);
CREATE INDEX webhook_deliveries_by_age ON webhook_deliveries (started_at);

-- reset may remove a bot while one of its requests is between its token
-- check and its write transaction. Rate state and idempotency keys have no
-- foreign key to bots, so these make such a late write fail (the request
-- then answers UNAUTHORIZED) instead of leaving rows of a bot that is gone.
CREATE TRIGGER rate_limits_need_their_bot BEFORE INSERT ON rate_limits
WHEN NOT EXISTS (SELECT 1 FROM bots WHERE id = NEW.bot_id)
BEGIN SELECT RAISE(ABORT, 'no such bot'); END;
CREATE TRIGGER idempotency_keys_need_their_bot BEFORE INSERT ON idempotency_keys
WHEN NOT EXISTS (SELECT 1 FROM bots WHERE id = NEW.bot_id)
BEGIN SELECT RAISE(ABORT, 'no such bot'); END;

PRAGMA user_version = 7;
COMMIT;
