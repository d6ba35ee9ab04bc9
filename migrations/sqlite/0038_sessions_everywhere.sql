-- Dashboard sign-ins are read again when another process changes them (issue 43): on
-- PostgreSQL every daemon of a cluster then knows a sign-in made on another, and a sign-out
-- there ends this daemon's streams of it too. Expired sign-ins are deleted by their time.
CREATE INDEX operator_sessions_by_expiry ON operator_sessions(expires_at);
