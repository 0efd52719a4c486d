-- When the service clock moved (advanceClock): a view of dated records (the
-- sandbox's call list) tells which were dated before a move and which after,
-- and by how far the clock then ran ahead. A record dated at or after a
-- move's moved_at was dated with that move's offset (dates are whole seconds
-- of the machine's clock plus the offset, and a move adds at least 1 s).
BEGIN;

CREATE TABLE clock_moves (
    moved_at INTEGER NOT NULL,          -- service clock, the first second after the move
    clock_offset INTEGER NOT NULL       -- the offset from then on
);

PRAGMA user_version = 17;
COMMIT;
