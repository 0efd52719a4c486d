-- Files: clean, normalized uploads and their stored bytes. Only a file that
-- passed the whole pipeline (type agreement, ClamAV on the original and the
-- output, normalization) gets a row; rejected uploads leave nothing behind.
-- The bytes live under BOTSVC_DATA_DIR/files/<storage_name>, a name the
-- server chose: the client's file name is display metadata only.
BEGIN;

CREATE TABLE files (
    id INTEGER PRIMARY KEY,
    file_id TEXT NOT NULL UNIQUE,       -- public: 48 lowercase hex, random
    bot_id INTEGER NOT NULL REFERENCES bots (id),  -- the owner; the only bot that may use it
    kind TEXT NOT NULL CHECK (kind IN ('photo', 'video', 'animation', 'audio', 'document')),
    mime_type TEXT NOT NULL,            -- of the normalized bytes
    file_name TEXT NOT NULL,            -- cleaned display name with the output's extension
    file_size INTEGER NOT NULL CHECK (file_size > 0),
    sha256 TEXT NOT NULL,               -- of the normalized bytes; also the download ETag
    metadata TEXT NOT NULL DEFAULT '{}',  -- JSON: width, height, duration, pages
    storage_name TEXT NOT NULL UNIQUE,  -- 32 lowercase hex; never derived from the client
    status TEXT NOT NULL DEFAULT 'clean' CHECK (status IN ('clean')),
    created_at INTEGER NOT NULL
);
-- The quota sum reads this index only.
CREATE INDEX files_by_bot ON files (bot_id, status, file_size);

PRAGMA user_version = 3;
COMMIT;
