-- Each journal entry keeps the chat version it made. sandbox_chat_versions
-- counts every change a chat's user sees (an action, a message sent, edited
-- or deleted), and sandbox_message_revisions keeps the version of each
-- message's last edit or deletion: together they say exactly whether an edit
-- came before or after an action, where the dates say only the second. An
-- export places such a reaction by what happened before what (docs/export.md).
-- Entries made before this migration keep no version (NULL).
BEGIN;

ALTER TABLE chat_events ADD COLUMN version INTEGER;

DROP TRIGGER sandbox_bump_on_event;
CREATE TRIGGER sandbox_bump_on_event AFTER INSERT ON chat_events BEGIN
    INSERT INTO sandbox_chat_versions (chat_ref, version) VALUES (NEW.chat_ref, 1)
        ON CONFLICT (chat_ref) DO UPDATE SET version = version + 1;
    UPDATE chat_events SET version = (SELECT version FROM sandbox_chat_versions
                                      WHERE chat_ref = NEW.chat_ref)
        WHERE id = NEW.id;
END;

PRAGMA user_version = 16;
COMMIT;
