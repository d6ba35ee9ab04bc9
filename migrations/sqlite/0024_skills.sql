-- Skills' evolution history (spec §8): one row per operation on a skill, by an agent or an
-- operator. `version` is Kennel's own counter per skill (the manifest's `version` is only
-- informational); each row keeps the manifest and body as they were after the operation, so a
-- rollback can restore any version and a deleted skill's history stays readable.
CREATE TABLE skill_history (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    skill        TEXT NOT NULL,
    version      INTEGER NOT NULL,
    op           TEXT NOT NULL,   -- create, update, patch, write_file, remove_file, rollback, delete, restore
    actor        TEXT NOT NULL,   -- who: "agent NAME (ID)" or "operator NAME"
    at           TEXT NOT NULL,
    content_hash TEXT NOT NULL,   -- sha256 of the manifest and body after the operation
    diff         TEXT NOT NULL,   -- unified diff of what changed (the body, or the support file)
    detail       TEXT,            -- the file of a file operation, the strategy of a patch, the version rolled back to
    manifest     TEXT NOT NULL,   -- the manifest (TOML) after the operation
    body         TEXT NOT NULL,   -- the body after the operation
    UNIQUE (skill, version)
);
