-- Decisions from the owner's chat (issue 48): the hash of the one-time code sent there with
-- each new approval (bound to the approval's id); NULL when no owner's chat is configured.
ALTER TABLE approvals ADD COLUMN owner_code TEXT;
