-- Only a running agent holds its name: stopped and removed agents keep theirs for history.
DROP INDEX agents_running_name;
CREATE UNIQUE INDEX agents_running_name ON agents(name) WHERE status = 'running';
