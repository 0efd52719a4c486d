-- Replays (the testing tools' redeliverUpdate): an update queued again for
-- its bot as a new update, with a new update_id. The updates table forgets an
-- update once it is acknowledged or delivered, and getUpdates' Update shape
-- is the bot's contract (no field may be added there), so the mark lives
-- here, read by the operator's views: the webhook delivery records
-- (replay_of) and the sandbox's path of an update.
BEGIN;

CREATE TABLE update_replays (
    update_id INTEGER PRIMARY KEY,      -- the new update
    bot_id INTEGER NOT NULL,
    replay_of INTEGER NOT NULL,         -- the update it repeats
    payload TEXT NOT NULL,              -- the Update JSON without update_id, as queued
    created_at INTEGER NOT NULL         -- service clock; kept 24 hours, as updates are
);
-- A bot's replays, newest first; the replays of one original.
CREATE INDEX update_replays_by_bot ON update_replays (bot_id, update_id);
CREATE INDEX update_replays_by_original ON update_replays (bot_id, replay_of);
CREATE INDEX update_replays_by_age ON update_replays (created_at);

-- An update found by its update_id among a chat's journal (the kept copy
-- of what a user's action queued, once the queue has forgotten it).
CREATE INDEX chat_events_by_update ON chat_events (update_id) WHERE update_id IS NOT NULL;

PRAGMA user_version = 15;
COMMIT;
