-- The owner inbox's email fan-out ([notify] email_to, smtp_url): how sending each note went.
ALTER TABLE inbox_notes ADD COLUMN email TEXT;   -- NULL (not sent), ok, or why it failed
