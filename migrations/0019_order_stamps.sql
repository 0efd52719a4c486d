-- Nanosecond stamps of one clock every worker process shares (the machine's
-- wall clock, time.time_ns(): never the service clock, which advanceClock
-- moves): when a call arrived and when its answer was made (bot_calls), when
-- a webhook attempt began to send (webhook_deliveries) and when an action was
-- journaled (chat_events). Each is taken in work the event already does (no
-- write of its own), and together they say what happened before what where
-- the dates say only the second: an export places the bot's reactions by
-- them (docs/export.md). Rows made before this migration keep none (NULL)
-- and are placed by the rules of before.
BEGIN;

ALTER TABLE bot_calls ADD COLUMN started_ns INTEGER;
ALTER TABLE bot_calls ADD COLUMN answered_ns INTEGER;
ALTER TABLE webhook_deliveries ADD COLUMN started_ns INTEGER;
ALTER TABLE chat_events ADD COLUMN recorded_ns INTEGER;

PRAGMA user_version = 19;
COMMIT;
