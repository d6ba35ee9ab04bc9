-- Prompt-cache writes apart (issue 43): Anthropic charges writing a prefix into its cache
-- above plain input and reading one far below it, so a call records both counts. Among
-- `input_tokens`, as `cached_tokens` are.
ALTER TABLE model_calls ADD COLUMN cache_write_tokens INTEGER NOT NULL DEFAULT 0;
