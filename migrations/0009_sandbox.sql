-- The sandbox (/sandbox/): its sign-in sessions, the throttle on wrong admin
-- tokens, and a per-chat change counter that lets an open chat page ask
-- "anything new?" with one indexed read.
BEGIN;

-- One row per signed-in browser. The cookie holds a random session id; only
-- its SHA-256 is kept. admin_fingerprint is an HMAC (under the signing key) of
-- the admin token the session was opened with: when the token changes, every
-- session opened with the old one stops working.
CREATE TABLE sandbox_sessions (
    id_hash BLOB PRIMARY KEY,
    csrf_token TEXT NOT NULL,
    admin_fingerprint BLOB NOT NULL,
    created_at INTEGER NOT NULL,
    last_seen_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX sandbox_sessions_by_age ON sandbox_sessions (last_seen_at);

-- Consecutive wrong admin tokens per client address (an IPv6 /64 counts as
-- one), shared by every worker process.
CREATE TABLE sandbox_signin_failures (
    client TEXT PRIMARY KEY,
    failures INTEGER NOT NULL,
    last_failure_at INTEGER NOT NULL,
    blocked_until INTEGER NOT NULL
) WITHOUT ROWID;

-- Bumped by the triggers below whenever what the user of a chat sees may have
-- changed: a message sent, edited or deleted, a callback answered, the
-- membership changed. No foreign key: it must never stand in the way of a
-- delete of chats (a reset); a stale row only means one extra refresh.
CREATE TABLE sandbox_chat_versions (
    chat_ref INTEGER PRIMARY KEY,
    version INTEGER NOT NULL
);

CREATE TRIGGER sandbox_bump_on_message_insert AFTER INSERT ON messages BEGIN
    INSERT INTO sandbox_chat_versions (chat_ref, version) VALUES (NEW.chat_ref, 1)
        ON CONFLICT (chat_ref) DO UPDATE SET version = version + 1;
END;
CREATE TRIGGER sandbox_bump_on_message_update AFTER UPDATE ON messages BEGIN
    INSERT INTO sandbox_chat_versions (chat_ref, version) VALUES (NEW.chat_ref, 1)
        ON CONFLICT (chat_ref) DO UPDATE SET version = version + 1;
END;
CREATE TRIGGER sandbox_bump_on_message_delete AFTER DELETE ON messages BEGIN
    INSERT INTO sandbox_chat_versions (chat_ref, version) VALUES (OLD.chat_ref, 1)
        ON CONFLICT (chat_ref) DO UPDATE SET version = version + 1;
END;
CREATE TRIGGER sandbox_bump_on_answer AFTER UPDATE OF answer_seq ON callback_queries BEGIN
    INSERT INTO sandbox_chat_versions (chat_ref, version) VALUES (NEW.chat_ref, 1)
        ON CONFLICT (chat_ref) DO UPDATE SET version = version + 1;
END;
CREATE TRIGGER sandbox_bump_on_chat_insert AFTER INSERT ON chats BEGIN
    INSERT INTO sandbox_chat_versions (chat_ref, version) VALUES (NEW.id, 1)
        ON CONFLICT (chat_ref) DO UPDATE SET version = version + 1;
END;
CREATE TRIGGER sandbox_bump_on_chat_update AFTER UPDATE ON chats BEGIN
    INSERT INTO sandbox_chat_versions (chat_ref, version) VALUES (NEW.id, 1)
        ON CONFLICT (chat_ref) DO UPDATE SET version = version + 1;
END;

PRAGMA user_version = 9;
COMMIT;
