-- Model calls whose provider reported no usage (llama.cpp's server streams none): their
-- tokens are Kennel's estimate (issue 44), counted per call and, rolled up, per day.
ALTER TABLE model_calls ADD COLUMN usage_estimated INTEGER NOT NULL DEFAULT 0;
ALTER TABLE usage_days ADD COLUMN estimated_calls INTEGER NOT NULL DEFAULT 0;
