-- Webhooks: one row per bot that has ever set one. url NULL means the bot
-- polls. The row outlives deleteWebhook so that the lease of a delivery still
-- in flight survives a delete-and-set: no second delivery of the same update
-- can start beside it.
BEGIN;

CREATE TABLE webhooks (
    bot_id INTEGER PRIMARY KEY REFERENCES bots (id),
    url TEXT,                          -- as given to setWebhook; NULL: polling
    secret_token TEXT,                 -- sent in each delivery's header; never returned
    generation INTEGER NOT NULL DEFAULT 0,  -- bumped by setWebhook and deleteWebhook
    set_at INTEGER,
    -- Delivery state of the queue head (the bot's lowest pending update_id).
    failures INTEGER NOT NULL DEFAULT 0,    -- consecutive failed attempts
    next_attempt_at REAL NOT NULL DEFAULT 0,
    lease_token TEXT,                  -- set while one process delivers the head
    lease_expires_at REAL,             -- a crashed deliverer's claim expires
    leased_update_id INTEGER,
    last_error TEXT,
    last_error_at INTEGER,
    last_success_at INTEGER
);
-- The worker's "what is due" scan only looks at bots in webhook mode.
CREATE INDEX webhooks_due ON webhooks (next_attempt_at) WHERE url IS NOT NULL;

PRAGMA user_version = 4;
COMMIT;
