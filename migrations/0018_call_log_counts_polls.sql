-- The call log no longer counts each bot's rows beside them: the count (an
-- upsert with RETURNING per record) was over half of what the log cost a
-- lone call, and a trim finds the bound from the index when it runs
-- (docs/call-log.md). bot_call_counts keeps each bot's empty polls and the
-- date of its last poll.
--
-- The check that a record's bot still exists (reset may remove it while its
-- record waits in a worker's buffer) moves from the upsert into triggers:
-- such a row is skipped, as before. An INSERT ... SELECT ... WHERE EXISTS
-- cost three times a plain insert; the trigger's lookup, under a microsecond.
BEGIN;

ALTER TABLE bot_call_counts DROP COLUMN calls_kept;

CREATE TRIGGER bot_calls_need_their_bot BEFORE INSERT ON bot_calls
WHEN NOT EXISTS (SELECT 1 FROM bots WHERE id = NEW.bot_id)
BEGIN SELECT RAISE(IGNORE); END;
CREATE TRIGGER bot_call_counts_need_their_bot BEFORE INSERT ON bot_call_counts
WHEN NOT EXISTS (SELECT 1 FROM bots WHERE id = NEW.bot_id)
BEGIN SELECT RAISE(IGNORE); END;

PRAGMA user_version = 18;
COMMIT;
