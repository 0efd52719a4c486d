-- The sandbox as a developer's instrument (issue 17): each chat's journal of
-- what its user did with the update that sent the bot, the per-message
-- record of edits and deletions that lets a page ask only for what changed,
-- the user's read marker, and the user's chats found by user.
BEGIN;

-- One row per thing a chat's user did: a Start (or a restart, or an unblock),
-- a Stop, a Block, a message, a click. ``payload`` is the update it queued for
-- the bot, as sent (the JSON without update_id, as in updates); a Block of a chat already
-- stopped queues none. after_message_id is the bot's newest message_id when
-- it happened: its place among the chat's messages. Removed with the history
-- (retention, reset).
CREATE TABLE chat_events (
    id INTEGER PRIMARY KEY,
    chat_ref INTEGER NOT NULL REFERENCES chats (id),
    kind TEXT NOT NULL CHECK (kind IN ('start', 'restart', 'unblock', 'stop', 'block',
                                       'message', 'click')),
    date INTEGER NOT NULL,
    message_id INTEGER,             -- the user's message, or the clicked message
    after_message_id INTEGER NOT NULL,
    callback_query_id TEXT,         -- a click's query
    update_id INTEGER,
    payload TEXT
);
CREATE INDEX chat_events_by_chat ON chat_events (chat_ref, id);
CREATE INDEX chat_events_by_message ON chat_events (chat_ref, message_id);
CREATE INDEX chat_events_by_place ON chat_events (chat_ref, after_message_id);
CREATE INDEX chat_events_by_date ON chat_events (date);
-- A click, or a Block of a stopped chat, changes no message: its line is new.
CREATE TRIGGER sandbox_bump_on_event AFTER INSERT ON chat_events BEGIN
    INSERT INTO sandbox_chat_versions (chat_ref, version) VALUES (NEW.chat_ref, 1)
        ON CONFLICT (chat_ref) DO UPDATE SET version = version + 1;
END;

-- The chat version at a message's last edit or deletion (new messages are
-- found by their ids): a page holding version V asks for the messages
-- changed after V with one index range.
CREATE TABLE sandbox_message_revisions (
    chat_ref INTEGER NOT NULL,
    message_id INTEGER NOT NULL,
    version INTEGER NOT NULL,
    PRIMARY KEY (chat_ref, message_id)
) WITHOUT ROWID;
CREATE INDEX sandbox_message_revisions_by_version ON sandbox_message_revisions (chat_ref, version);

DROP TRIGGER sandbox_bump_on_message_update;
CREATE TRIGGER sandbox_bump_on_message_update AFTER UPDATE ON messages BEGIN
    INSERT INTO sandbox_chat_versions (chat_ref, version) VALUES (NEW.chat_ref, 1)
        ON CONFLICT (chat_ref) DO UPDATE SET version = version + 1;
    INSERT INTO sandbox_message_revisions (chat_ref, message_id, version)
        VALUES (NEW.chat_ref, NEW.message_id,
                (SELECT version FROM sandbox_chat_versions WHERE chat_ref = NEW.chat_ref))
        ON CONFLICT (chat_ref, message_id) DO UPDATE SET version = excluded.version;
END;
DROP TRIGGER sandbox_bump_on_message_delete;
CREATE TRIGGER sandbox_bump_on_message_delete AFTER DELETE ON messages BEGIN
    INSERT INTO sandbox_chat_versions (chat_ref, version) VALUES (OLD.chat_ref, 1)
        ON CONFLICT (chat_ref) DO UPDATE SET version = version + 1;
    DELETE FROM sandbox_message_revisions
        WHERE chat_ref = OLD.chat_ref AND message_id = OLD.message_id;
END;

-- The newest message_id the user has read in the chat: the unread count is
-- the bot's visible messages above it.
ALTER TABLE chats ADD COLUMN read_message_id INTEGER NOT NULL DEFAULT 0;

-- A user's chats (the sandbox's chat list), without reading every chat.
CREATE INDEX chats_by_user ON chats (user_id);

PRAGMA user_version = 12;
COMMIT;
