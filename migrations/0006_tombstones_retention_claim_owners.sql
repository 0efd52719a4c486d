-- Hardening (issue 13): deleted messages keep only a tombstone, chat history
-- can be removed by age, and an idempotency claim records the process that
-- runs it, so a claim whose process died is released at once.
BEGIN;

-- A deleted message keeps what deleteMessage and MESSAGE_NOT_FOUND need (its
-- id, chat, sender side, date and deleted_at); its content goes.
UPDATE messages SET type = 'deleted', content = '{}', reply_to_message_id = NULL,
    media_group_id = NULL, edit_date = NULL
    WHERE deleted_at IS NOT NULL;

-- The history retention job finds old rows by age.
CREATE INDEX messages_by_date ON messages (date);
CREATE INDEX callback_queries_by_age ON callback_queries (created_at);

-- "<boot id>-<pid namespace>-<pid>-<start time>" of the process running a
-- claim (app/botsvc/owner.py); NULL for claims made before this migration.
ALTER TABLE idempotency_keys ADD COLUMN owner TEXT;
CREATE INDEX idempotency_running ON idempotency_keys (bot_id) WHERE state = 'running';

PRAGMA user_version = 6;
COMMIT;
