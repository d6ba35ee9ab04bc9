-- The daemon keeps agent types, agents and API tokens in memory and reloads them when another
-- process (the CLI) commits. This counter moves with every change to those three tables, so
-- the change watcher reloads after those commits only — not after every audit row, task
-- claim or schedule fire.
CREATE TABLE cached_tables_version (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    version INTEGER NOT NULL
);
INSERT INTO cached_tables_version (id, version) VALUES (1, 0);

CREATE TRIGGER agent_types_inserted AFTER INSERT ON agent_types BEGIN UPDATE cached_tables_version SET version = version + 1; END;
CREATE TRIGGER agent_types_updated AFTER UPDATE ON agent_types BEGIN UPDATE cached_tables_version SET version = version + 1; END;
CREATE TRIGGER agent_types_deleted AFTER DELETE ON agent_types BEGIN UPDATE cached_tables_version SET version = version + 1; END;
CREATE TRIGGER agents_inserted AFTER INSERT ON agents BEGIN UPDATE cached_tables_version SET version = version + 1; END;
CREATE TRIGGER agents_updated AFTER UPDATE ON agents BEGIN UPDATE cached_tables_version SET version = version + 1; END;
CREATE TRIGGER agents_deleted AFTER DELETE ON agents BEGIN UPDATE cached_tables_version SET version = version + 1; END;
CREATE TRIGGER api_tokens_inserted AFTER INSERT ON api_tokens BEGIN UPDATE cached_tables_version SET version = version + 1; END;
CREATE TRIGGER api_tokens_updated AFTER UPDATE ON api_tokens BEGIN UPDATE cached_tables_version SET version = version + 1; END;
CREATE TRIGGER api_tokens_deleted AFTER DELETE ON api_tokens BEGIN UPDATE cached_tables_version SET version = version + 1; END;
