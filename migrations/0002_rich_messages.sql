-- Rich messages: callback queries (a user's click on a callback button) and
-- the bot's one answer to each. Cards, keyboards, edits and deletes need no
-- schema of their own: they live in messages.content, edit_date, deleted_at.
BEGIN;

CREATE TABLE callback_queries (
    id INTEGER PRIMARY KEY,            -- click order
    query_id TEXT NOT NULL UNIQUE,     -- the public callback_query.id: 32 lowercase hex
    bot_id INTEGER NOT NULL REFERENCES bots (id),
    chat_ref INTEGER NOT NULL REFERENCES chats (id),
    message_id INTEGER NOT NULL,
    data TEXT NOT NULL,                -- the clicked button's callback_data
    created_at INTEGER NOT NULL,
    answered_at INTEGER,               -- NULL until answerCallbackQuery (at most once)
    answer_seq INTEGER UNIQUE,         -- order of the answers, finer than answered_at
    answer_text TEXT,
    show_alert INTEGER
);
CREATE INDEX callback_queries_by_chat ON callback_queries (chat_ref, answer_seq);

PRAGMA user_version = 2;
COMMIT;
