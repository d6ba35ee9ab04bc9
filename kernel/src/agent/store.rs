//! SQL for agent types and agents. Manifests are stored as JSON text.

use super::{Agent, AgentStatus, AgentType};
use crate::db::{self, Db};
use crate::error::{Error, Result};

fn manifest_json<T: serde::Serialize>(m: &T) -> String {
    serde_json::to_string(m).expect("a manifest always serialises")
}

fn manifest_from(json: &str) -> Result<super::Manifest> {
    serde_json::from_str(json).map_err(|e| Error::internal(format_args!("stored manifest is unreadable: {e}")))
}

pub(super) async fn load_types(db: &Db) -> Result<Vec<AgentType>> {
    let rows = db::query("SELECT manifest, made_by, created_at, updated_at FROM agent_types ORDER BY name")
        .fetch_all(db)
        .await?;
    rows.iter()
        .map(|r| {
            let made_by: Option<String> = r.try_get("made_by")?;
            Ok(AgentType {
                manifest: manifest_from(r.try_get("manifest")?)?,
                made_by: made_by.as_deref().map(parse_id).transpose()?,
                created_at: r.try_get("created_at")?,
                updated_at: r.try_get("updated_at")?,
            })
        })
        .collect()
}

pub(super) async fn insert_type(db: &Db, t: &AgentType) -> Result<()> {
    db::query("INSERT INTO agent_types (name, manifest, made_by, created_at, updated_at) VALUES ($1, $2, $3, $4, $5)")
        .bind(&t.manifest.name)
        .bind(manifest_json(&t.manifest))
        .bind(t.made_by.map(|id| id.to_string()))
        .bind(&t.created_at)
        .bind(&t.updated_at)
        .execute(db)
        .await?;
    Ok(())
}

pub(super) async fn update_type(db: &Db, t: &AgentType) -> Result<()> {
    db::query("UPDATE agent_types SET manifest = $1, made_by = $2, updated_at = $3 WHERE name = $4")
        .bind(manifest_json(&t.manifest))
        .bind(t.made_by.map(|id| id.to_string()))
        .bind(&t.updated_at)
        .bind(&t.manifest.name)
        .execute(db)
        .await?;
    Ok(())
}

pub(super) async fn delete_type(db: &Db, name: &str) -> Result<()> {
    db::query("DELETE FROM agent_types WHERE name = $1").bind(name).execute(db).await?;
    Ok(())
}

pub(super) async fn load_agents(db: &Db) -> Result<Vec<Agent>> {
    let rows = db::query(
        "SELECT id, name, agent_type, manifest, goal, status, parent_id, ephemeral, paused_until, pause_reason,
                budget_lifted_at, created_at, updated_at FROM agents",
    )
    .fetch_all(db)
    .await?;
    rows.iter()
        .map(|r| {
            let id: String = r.try_get("id")?;
            let parent: Option<String> = r.try_get("parent_id")?;
            Ok(Agent {
                id: parse_id(&id)?,
                name: r.try_get("name")?,
                agent_type: r.try_get("agent_type")?,
                manifest: manifest_from(r.try_get("manifest")?)?,
                goal: r.try_get("goal")?,
                status: AgentStatus::parse(r.try_get("status")?)?,
                parent_id: parent.as_deref().map(parse_id).transpose()?,
                ephemeral: r.try_get::<i64, _>("ephemeral")? != 0,
                paused: match (
                    r.try_get::<Option<String>, _>("paused_until")?,
                    r.try_get::<Option<String>, _>("pause_reason")?,
                ) {
                    (Some(until), reason) => Some(super::Pause { until, reason: reason.unwrap_or_default() }),
                    (None, _) => None,
                },
                budget_lifted_at: r.try_get("budget_lifted_at")?,
                created_at: r.try_get("created_at")?,
                updated_at: r.try_get("updated_at")?,
            })
        })
        .collect()
}

fn parse_id(s: &str) -> Result<uuid::Uuid> {
    uuid::Uuid::parse_str(s).map_err(|e| Error::internal(format_args!("stored agent id `{s}` is unreadable: {e}")))
}

pub(super) async fn insert_agent(db: &Db, a: &Agent) -> Result<()> {
    db::query(
        "INSERT INTO agents (id, name, agent_type, manifest, goal, status, parent_id, ephemeral, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
    )
    .bind(a.id.to_string())
    .bind(&a.name)
    .bind(&a.agent_type)
    .bind(manifest_json(&a.manifest))
    .bind(&a.goal)
    .bind(a.status.as_str())
    .bind(a.parent_id.map(|p| p.to_string()))
    .bind(i64::from(a.ephemeral))
    .bind(&a.created_at)
    .bind(&a.updated_at)
    .execute(db)
    .await?;
    Ok(())
}

/// Writes several agents' manifests in one transaction: all or none.
pub(super) async fn update_agents(db: &Db, agents: &[Agent]) -> Result<()> {
    if agents.is_empty() {
        return Ok(());
    }
    let mut tx = db.begin().await?;
    for a in agents {
        db::query("UPDATE agents SET manifest = $1, updated_at = $2 WHERE id = $3")
            .bind(manifest_json(&a.manifest))
            .bind(&a.updated_at)
            .bind(a.id.to_string())
            .execute(&mut tx)
            .await?;
    }
    tx.commit().await?;
    Ok(())
}

pub(super) async fn update_agent(db: &Db, a: &Agent) -> Result<()> {
    db::query(
        "UPDATE agents SET manifest = $1, goal = $2, status = $3, updated_at = $4, paused_until = $5,
             pause_reason = $6, budget_lifted_at = $7 WHERE id = $8",
    )
    .bind(manifest_json(&a.manifest))
    .bind(&a.goal)
    .bind(a.status.as_str())
    .bind(&a.updated_at)
    .bind(a.paused.as_ref().map(|p| &p.until))
    .bind(a.paused.as_ref().map(|p| &p.reason))
    .bind(&a.budget_lifted_at)
    .bind(a.id.to_string())
    .execute(db)
    .await?;
    Ok(())
}

/// An async `agent_send` in flight (`delivery.rs`).
/// An async `agent_send` in flight (`delivery.rs`), as `daemon`'s.
pub(super) async fn insert_delivery(db: &Db, d: &super::delivery::Delivery, daemon: &str) -> Result<()> {
    db::query(
        "INSERT INTO agent_deliveries (id, from_agent, reply_to, to_agent, session_id, message, depth, chain, attempts, created_at, daemon_id, taint)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
    )
    .bind(d.id.to_string())
    .bind(d.from_agent.to_string())
    .bind(d.reply_to.to_string())
    .bind(d.to_agent.to_string())
    .bind(d.session.to_string())
    .bind(&d.message)
    .bind(i64::from(d.depth))
    .bind(serde_json::to_string(&d.chain).expect("ids serialise"))
    .bind(i64::from(d.attempts))
    .bind(crate::db::now())
    .bind(daemon)
    .bind((!d.taint.is_empty()).then(|| serde_json::to_string(&d.taint).expect("labels serialise")))
    .execute(db)
    .await?;
    Ok(())
}

pub(super) async fn set_delivery_attempts(db: &Db, id: uuid::Uuid, attempts: u32) -> Result<()> {
    db::query("UPDATE agent_deliveries SET attempts = $2 WHERE id = $1")
        .bind(id.to_string())
        .bind(i64::from(attempts))
        .execute(db)
        .await?;
    Ok(())
}

pub(super) async fn set_delivery_reply(db: &Db, id: uuid::Uuid, reply: &str) -> Result<()> {
    db::query("UPDATE agent_deliveries SET reply = $2 WHERE id = $1")
        .bind(id.to_string())
        .bind(reply)
        .execute(db)
        .await?;
    Ok(())
}

pub(super) async fn delete_delivery(db: &Db, id: uuid::Uuid) -> Result<()> {
    db::query("DELETE FROM agent_deliveries WHERE id = $1").bind(id.to_string()).execute(db).await?;
    Ok(())
}

/// The deliveries `dead` left in flight (and those of no daemon, from before clusters),
/// oldest first, made `me`'s.
pub(super) async fn take_deliveries(db: &Db, dead: &str, me: &str) -> Result<Vec<super::delivery::Delivery>> {
    // The read and the write under the write lock from the start: a deferred transaction's
    // read could not become a write after another connection committed (SQLite's
    // `SQLITE_BUSY_SNAPSHOT`, seen at start-up beside the other start tasks' writes).
    let mut tx = db.begin_write().await?;
    let rows = db::query(
        "SELECT id, from_agent, reply_to, to_agent, session_id, message, depth, chain, attempts, reply, taint
         FROM agent_deliveries WHERE daemon_id = $1 OR daemon_id IS NULL ORDER BY created_at, id",
    )
    .bind(dead)
    .fetch_all(&mut tx)
    .await?;
    db::query("UPDATE agent_deliveries SET daemon_id = $2 WHERE daemon_id = $1 OR daemon_id IS NULL")
        .bind(dead)
        .bind(me)
        .execute(&mut tx)
        .await?;
    tx.commit().await?;
    rows.iter()
        .map(|r| {
            let chain: String = r.try_get("chain")?;
            let depth: i64 = r.try_get("depth")?;
            let attempts: i64 = r.try_get("attempts")?;
            let taint: Option<String> = r.try_get("taint")?;
            Ok(super::delivery::Delivery {
                id: parse_id(r.try_get("id")?)?,
                from_agent: parse_id(r.try_get("from_agent")?)?,
                reply_to: parse_id(r.try_get("reply_to")?)?,
                to_agent: parse_id(r.try_get("to_agent")?)?,
                session: parse_id(r.try_get("session_id")?)?,
                message: r.try_get("message")?,
                depth: depth.clamp(0, i64::from(u32::MAX)) as u32,
                chain: serde_json::from_str(&chain)
                    .map_err(|e| Error::internal(format_args!("a stored delivery's chain is unreadable: {e}")))?,
                attempts: attempts.clamp(0, i64::from(u32::MAX)) as u32,
                reply: r.try_get("reply")?,
                // Unreadable labels count as read: the turn is tainted rather than trusted.
                taint: taint
                    .map(|t| {
                        serde_json::from_str(&t).unwrap_or_else(|_| {
                            vec![crate::approval::Label::new("unknown", "a delivery's stored provenance is unreadable")]
                        })
                    })
                    .unwrap_or_default(),
            })
        })
        .collect()
}
