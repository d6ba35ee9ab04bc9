-- The sweeper finds expired claims through tasks_claimable (status first); a separate
-- claimed_at index only cost every claim an extra index write.
DROP INDEX tasks_claimed_at;
