-- Model calls whose provider reported no usage (llama.cpp's server streams none): their
-- tokens are Kennel's estimate (issue 44).
ALTER TABLE model_calls ADD COLUMN usage_estimated BIGINT NOT NULL DEFAULT 0;
