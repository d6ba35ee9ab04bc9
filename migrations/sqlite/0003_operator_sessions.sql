-- Dashboard sign-ins. Only a SHA-256 of the cookie value is stored.
CREATE TABLE operator_sessions (
    token_hash  TEXT PRIMARY KEY,
    operator    TEXT NOT NULL REFERENCES operators(name),
    csrf        TEXT NOT NULL,             -- the token every form of this sign-in must carry
    created_at  TEXT NOT NULL,
    expires_at  TEXT NOT NULL
);
