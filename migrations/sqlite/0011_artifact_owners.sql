-- The artifact store is content-addressed and shared, so which agent's result spilled into
-- an artifact is recorded here: `read_artifact` reads only the caller's own.
CREATE TABLE artifact_owners (
    agent_id    TEXT NOT NULL,
    artifact_id TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    PRIMARY KEY (agent_id, artifact_id)
);

-- Results spilled before this table existed: the audit log names the agent of each spill.
INSERT INTO artifact_owners (agent_id, artifact_id, created_at)
SELECT agent_id, artifact_id, min(at) FROM audit WHERE artifact_id IS NOT NULL GROUP BY agent_id, artifact_id;
