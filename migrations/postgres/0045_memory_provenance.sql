-- What untrusted sources the turn that wrote a memory had read (issue 48), as JSON labels;
-- NULL: an operator or a clean turn wrote it. A turn that recalls a labelled key reads them
-- too, so a page cannot leave instructions under a key for a clean turn to follow.
ALTER TABLE memory_kv ADD COLUMN provenance TEXT COLLATE "C";
