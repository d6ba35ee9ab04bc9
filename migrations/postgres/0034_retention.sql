-- Retention (issue 43): the nightly sweep finds each kind of finished record by its time.
CREATE INDEX channel_inbound_by_time ON channel_inbound(received_at);
CREATE INDEX channel_outbound_by_time ON channel_outbound(at);
CREATE INDEX media_jobs_by_time ON media_jobs(updated_at);
CREATE INDEX a2a_tasks_by_time ON a2a_tasks(updated_at);
