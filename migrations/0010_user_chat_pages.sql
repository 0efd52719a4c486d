-- userGetChat pages through a chat's history: the callback answers of one
-- page are found by the messages they belong to, not by reading every
-- answered click of the chat.
BEGIN;

CREATE INDEX callback_queries_by_message ON callback_queries (chat_ref, message_id);

PRAGMA user_version = 10;
COMMIT;
