//! SQL for the knowledge graph. Every query names its agent, so no agent reads another's
//! graph; relations point at entities by row id, and reads give their ends' names back.

use serde_json::{Map, Value};

use super::{Direction, Entity, Relation};
use crate::db::{self, Db};
use crate::error::{Error, Result};

const ENTITY: &str = "SELECT id, name, entity_type, attributes, created_at, updated_at FROM knowledge_entities";

/// What an entity's upsert did.
pub(super) enum Upsert {
    /// Stored; `true` when it was new.
    Done(Entity, bool),
    /// It was new and the agent holds the most entities it may.
    Full,
}

/// Inserts the entity or updates it (its type and the attributes `merge` makes from the
/// stored ones). The read, the count and the write hold the write lock together, so neither
/// a concurrent add nor the cap can be missed.
pub(super) async fn upsert_entity(
    db: &Db,
    agent: &str,
    name: &str,
    entity_type: &str,
    merge: impl FnOnce(Option<Map<String, Value>>) -> Result<Map<String, Value>>,
    max: u64,
) -> Result<Upsert> {
    let mut tx = db.begin_write().await?;
    let stored = db::query("SELECT attributes FROM knowledge_entities WHERE agent_id = $1 AND name = $2")
        .bind(agent)
        .bind(name)
        .fetch_optional(&mut tx)
        .await?;
    let old = stored.map(|r| attributes_from(&r)).transpose()?;
    let created = old.is_none();
    if created {
        let held: i64 = db::query_scalar("SELECT count(*) FROM knowledge_entities WHERE agent_id = $1")
            .bind(agent)
            .fetch_one(&mut tx)
            .await?;
        if held as u64 >= max {
            return Ok(Upsert::Full);
        }
    }
    let attributes = serde_json::to_string(&merge(old)?).map_err(Error::internal)?;
    let now = db::now();
    let query = if created {
        db::query(
            "INSERT INTO knowledge_entities (agent_id, name, entity_type, attributes, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $5)
             RETURNING id, name, entity_type, attributes, created_at, updated_at",
        )
    } else {
        db::query(
            "UPDATE knowledge_entities SET entity_type = $3, attributes = $4, updated_at = $5
             WHERE agent_id = $1 AND name = $2
             RETURNING id, name, entity_type, attributes, created_at, updated_at",
        )
    };
    let row = query.bind(agent).bind(name).bind(entity_type).bind(attributes).bind(now).fetch_one(&mut tx).await?;
    let entity = entity_from(&row)?;
    tx.commit().await?;
    Ok(Upsert::Done(entity, created))
}

/// What a relation's upsert did.
pub(super) enum Link {
    /// Stored; `true` when it was new.
    Done(Relation, bool),
    /// These ends are not the agent's entities.
    Missing(Vec<String>),
    /// It was new and the agent holds the most relations it may.
    Full,
}

/// Inserts the relation `ends[0] → ends[1]`, or sets its weight if there is one of that type
/// (a `None` weight leaves it; a new relation weighs 1).
pub(super) async fn upsert_relation(
    db: &Db,
    agent: &str,
    ends: [&str; 2],
    relation_type: &str,
    weight: Option<f64>,
    max: u64,
) -> Result<Link> {
    let mut tx = db.begin_write().await?;
    let mut ids = Vec::new();
    let mut missing = Vec::new();
    for name in ends {
        let id: Option<i64> = db::query_scalar("SELECT id FROM knowledge_entities WHERE agent_id = $1 AND name = $2")
            .bind(agent)
            .bind(name)
            .fetch_optional(&mut tx)
            .await?;
        match id {
            Some(id) => ids.push(id),
            None if !missing.iter().any(|m| m == name) => missing.push(name.to_string()),
            None => {}
        }
    }
    if !missing.is_empty() {
        return Ok(Link::Missing(missing));
    }
    let (from, to) = (ids[0], ids[1]);
    const COLUMNS: &str = "RETURNING weight, created_at, updated_at";
    let stored: Option<i64> = db::query_scalar(
        "SELECT id FROM knowledge_relations WHERE agent_id = $1 AND from_id = $2 AND to_id = $3 AND relation_type = $4",
    )
    .bind(agent)
    .bind(from)
    .bind(to)
    .bind(relation_type)
    .fetch_optional(&mut tx)
    .await?;
    let row = match stored {
        Some(id) => {
            db::query(sqlx::AssertSqlSafe(format!(
                "UPDATE knowledge_relations SET weight = COALESCE($2, weight),
                        updated_at = CASE WHEN $2 IS NULL THEN updated_at ELSE $3 END
                 WHERE id = $1 {COLUMNS}"
            )))
            .bind(id)
            .bind(weight)
            .bind(db::now())
            .fetch_one(&mut tx)
            .await?
        }
        None => {
            let held: i64 = db::query_scalar("SELECT count(*) FROM knowledge_relations WHERE agent_id = $1")
                .bind(agent)
                .fetch_one(&mut tx)
                .await?;
            if held as u64 >= max {
                return Ok(Link::Full);
            }
            db::query(sqlx::AssertSqlSafe(format!(
                "INSERT INTO knowledge_relations (agent_id, from_id, to_id, relation_type, weight, created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $6) {COLUMNS}"
            )))
            .bind(agent)
            .bind(from)
            .bind(to)
            .bind(relation_type)
            .bind(weight.unwrap_or(1.0))
            .bind(db::now())
            .fetch_one(&mut tx)
            .await?
        }
    };
    let relation = Relation {
        from: ends[0].to_string(),
        to: ends[1].to_string(),
        relation_type: relation_type.to_string(),
        weight: row.try_get("weight")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
    };
    tx.commit().await?;
    Ok(Link::Done(relation, stored.is_none()))
}

/// The agent's entity `name`, with its row id.
pub(super) async fn entity(db: &Db, agent: &str, name: &str) -> Result<Option<(i64, Entity)>> {
    let row = db::query(sqlx::AssertSqlSafe(format!("{ENTITY} WHERE agent_id = $1 AND name = $2")))
        .bind(agent)
        .bind(name)
        .fetch_optional(db)
        .await?;
    row.map(|r| Ok((r.try_get("id")?, entity_from(&r)?))).transpose()
}

/// The agent's entities of these row ids.
pub(super) async fn entities_by_id(db: &Db, agent: &str, ids: &[i64]) -> Result<Vec<(i64, Entity)>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut query = db::QueryBuilder::new(ENTITY);
    query.push(" WHERE agent_id = ").push_bind(agent.to_string()).push(" AND ");
    in_list(&mut query, "id", ids);
    let rows = query.build().fetch_all(db).await?;
    rows.iter().map(|r| Ok((r.try_get("id")?, entity_from(r)?))).collect()
}

/// One relation as a walk follows it: row ids of its ends.
pub(super) struct Step {
    pub id: i64,
    pub from: i64,
    pub to: i64,
    pub relation_type: String,
    pub weight: f64,
}

/// The agent's relations that leave (`Out`), enter (`In`) or touch (`Both`) the entities
/// `ids`, of the `types` given (any when empty), oldest first, at most `limit`.
pub(super) async fn relations_touching(
    db: &Db,
    agent: &str,
    ids: &[i64],
    direction: Direction,
    types: &[String],
    limit: i64,
) -> Result<Vec<Step>> {
    let mut query = db::QueryBuilder::new(
        "SELECT id, from_id, to_id, relation_type, weight FROM knowledge_relations WHERE agent_id = ",
    );
    query.push_bind(agent.to_string()).push(" AND ");
    match direction {
        Direction::Out => in_list(&mut query, "from_id", ids),
        Direction::In => in_list(&mut query, "to_id", ids),
        Direction::Both => {
            query.push("(");
            in_list(&mut query, "from_id", ids);
            query.push(" OR ");
            in_list(&mut query, "to_id", ids);
            query.push(")");
        }
    }
    if !types.is_empty() {
        query.push(" AND relation_type IN (");
        let mut each = query.separated(", ");
        for t in types {
            each.push_bind(t.clone());
        }
        query.push(")");
    }
    query.push(" ORDER BY id LIMIT ").push_bind(limit);
    let rows = query.build().fetch_all(db).await?;
    rows.iter().map(step_from).collect()
}

/// The agent's relations between entities of `ids`, oldest first, at most `limit`.
pub(super) async fn relations_among(db: &Db, agent: &str, ids: &[i64], limit: i64) -> Result<Vec<Step>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut query = db::QueryBuilder::new(
        "SELECT id, from_id, to_id, relation_type, weight FROM knowledge_relations WHERE agent_id = ",
    );
    query.push_bind(agent.to_string()).push(" AND ");
    in_list(&mut query, "from_id", ids);
    query.push(" AND ");
    in_list(&mut query, "to_id", ids);
    query.push(" ORDER BY id LIMIT ").push_bind(limit);
    let rows = query.build().fetch_all(db).await?;
    rows.iter().map(step_from).collect()
}

/// The agent's `limit` entities with the most relations (out and in), then the oldest.
pub(super) async fn most_connected(db: &Db, agent: &str, limit: i64) -> Result<Vec<(i64, Entity)>> {
    let rows = db::query(
        "SELECT e.id, e.name, e.entity_type, e.attributes, e.created_at, e.updated_at,
                (SELECT count(*) FROM knowledge_relations r WHERE r.from_id = e.id)
                  + (SELECT count(*) FROM knowledge_relations r WHERE r.to_id = e.id) AS degree
         FROM knowledge_entities e WHERE e.agent_id = $1
         ORDER BY degree DESC, e.id LIMIT $2",
    )
    .bind(agent)
    .bind(limit)
    .fetch_all(db)
    .await?;
    rows.iter().map(|r| Ok((r.try_get("id")?, entity_from(r)?))).collect()
}

/// How many entities and relations the agent holds.
pub(super) async fn counts(db: &Db, agent: &str) -> Result<(u64, u64)> {
    let entities: i64 = db::query_scalar("SELECT count(*) FROM knowledge_entities WHERE agent_id = $1")
        .bind(agent)
        .fetch_one(db)
        .await?;
    let relations: i64 = db::query_scalar("SELECT count(*) FROM knowledge_relations WHERE agent_id = $1")
        .bind(agent)
        .fetch_one(db)
        .await?;
    Ok((entities as u64, relations as u64))
}

/// A page of an agent's entities: one range of `knowledge_entities_by_agent`.
const ENTITY_PAGE: &str = "WHERE agent_id = $1 AND id > $2 ORDER BY id LIMIT $3";

/// The agent's entities after row `after`, oldest first, at most `limit`.
pub(super) async fn entities_page(db: &Db, agent: &str, after: Option<i64>, limit: i64) -> Result<Vec<(i64, Entity)>> {
    let rows = db::query(sqlx::AssertSqlSafe(format!("{ENTITY} {ENTITY_PAGE}")))
        .bind(agent)
        .bind(after.unwrap_or(i64::MIN))
        .bind(limit)
        .fetch_all(db)
        .await?;
    rows.iter().map(|r| Ok((r.try_get("id")?, entity_from(r)?))).collect()
}

/// The agent's relations after row `after`, oldest first, at most `limit`, their ends named.
pub(super) async fn relations_page(
    db: &Db,
    agent: &str,
    after: Option<i64>,
    limit: i64,
) -> Result<Vec<(i64, Relation)>> {
    let rows = db::query(
        "SELECT r.id, f.name AS from_name, t.name AS to_name, r.relation_type, r.weight, r.created_at, r.updated_at
         FROM knowledge_relations r
         JOIN knowledge_entities f ON f.id = r.from_id
         JOIN knowledge_entities t ON t.id = r.to_id
         WHERE r.agent_id = $1 AND r.id > $2 ORDER BY r.id LIMIT $3",
    )
    .bind(agent)
    .bind(after.unwrap_or(i64::MIN))
    .bind(limit)
    .fetch_all(db)
    .await?;
    rows.iter()
        .map(|r| {
            Ok((
                r.try_get("id")?,
                Relation {
                    from: r.try_get("from_name")?,
                    to: r.try_get("to_name")?,
                    relation_type: r.try_get("relation_type")?,
                    weight: r.try_get("weight")?,
                    created_at: r.try_get("created_at")?,
                    updated_at: r.try_get("updated_at")?,
                },
            ))
        })
        .collect()
}

/// `column IN (…ids)`, each id bound.
fn in_list(query: &mut db::QueryBuilder, column: &str, ids: &[i64]) {
    query.push(column).push(" IN (");
    let mut each = query.separated(", ");
    for id in ids {
        each.push_bind(*id);
    }
    query.push(")");
}

fn step_from(row: &db::Row) -> Result<Step> {
    Ok(Step {
        id: row.try_get("id")?,
        from: row.try_get("from_id")?,
        to: row.try_get("to_id")?,
        relation_type: row.try_get("relation_type")?,
        weight: row.try_get("weight")?,
    })
}

fn attributes_from(row: &db::Row) -> Result<Map<String, Value>> {
    let text: String = row.try_get("attributes")?;
    serde_json::from_str(&text).map_err(|e| Error::internal(format_args!("stored attributes are unreadable: {e}")))
}

fn entity_from(row: &db::Row) -> Result<Entity> {
    Ok(Entity {
        name: row.try_get("name")?,
        entity_type: row.try_get("entity_type")?,
        attributes: attributes_from(row)?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SQLite's plan for a page of entities, first or later: a range of the `(agent_id, id)`
    /// index, the cursor included (a `$2 IS NULL OR id > $2` filter reads every one of the
    /// agent's rows up to the page).
    #[tokio::test]
    async fn a_page_of_entities_seeks_its_cursor_in_the_index() {
        let dir = tempfile::tempdir().unwrap();
        let db = db::open_for_test(dir.path()).await;
        if db.dialect("sqlite", "postgres") == "postgres" {
            return;
        }
        let plan: Vec<String> = db::query(sqlx::AssertSqlSafe(format!("EXPLAIN QUERY PLAN {ENTITY} {ENTITY_PAGE}")))
            .bind("agent")
            .bind(i64::MIN)
            .bind(50i64)
            .fetch_all(&db)
            .await
            .unwrap()
            .iter()
            .map(|r| r.try_get("detail").unwrap())
            .collect();
        assert!(plan.iter().any(|step| step.contains("knowledge_entities_by_agent (agent_id=? AND id>?)")), "{plan:?}");
    }
}
