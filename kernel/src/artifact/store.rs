//! SQL for who owns which artifact (the bytes are files; see the parent module).

use uuid::Uuid;

use crate::db::{self, Db};
use crate::error::Result;

/// Records that `agent`'s result spilled into `artifact` (again is a no-op).
pub(super) async fn add_owner(db: &Db, agent: Uuid, artifact: &str) -> Result<()> {
    db::query(
        "INSERT INTO artifact_owners (agent_id, artifact_id, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
    )
    .bind(agent.to_string())
    .bind(artifact)
    .bind(db::now())
    .execute(db)
    .await?;
    Ok(())
}

pub(super) async fn is_owner(db: &Db, agent: Uuid, artifact: &str) -> Result<bool> {
    let found = db::query("SELECT 1 FROM artifact_owners WHERE agent_id = $1 AND artifact_id = $2")
        .bind(agent.to_string())
        .bind(artifact)
        .fetch_optional(db)
        .await?;
    Ok(found.is_some())
}
