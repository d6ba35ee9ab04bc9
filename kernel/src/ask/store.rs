//! The `questions` table: one row per question a turn waits on.

use super::{Answer, AskedIn, Question};
use crate::db::{self, Db};
use crate::error::{Error, Result};

fn json<T: serde::Serialize>(value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(|e| Error::internal(format_args!("a question did not serialise: {e}")))
}

fn question_from(row: &db::Row) -> Result<Question> {
    let text: String = row.try_get("question")?;
    let mut question: Question = serde_json::from_str(&text)
        .map_err(|e| Error::internal(format_args!("a stored question is unreadable: {e}")))?;
    if let AskedIn::Channel { user_id, .. } = &mut question.asked_in {
        *user_id = row.try_get("user_id")?;
    }
    Ok(question)
}

/// Lists `question` as waiting on this daemon (`daemon`). On a channel, only when no other
/// question waits on the same person in the same conversation (false otherwise).
pub(super) async fn insert(db: &Db, question: &Question, daemon: &str) -> Result<bool> {
    let (channel, chat, user_id) = match &question.asked_in {
        AskedIn::Channel { channel, chat, user_id } => (Some(channel), Some(chat), user_id.as_ref()),
        AskedIn::Chat => (None, None, None),
    };
    // The count and the insert under the write lock: two asks at once, one conflict.
    let mut tx = db.begin_write().await?;
    if let (Some(channel), Some(chat)) = (channel, chat) {
        let waiting: i64 = db::query_scalar(
            "SELECT count(*) FROM questions WHERE channel = $1 AND chat = $2 AND answer IS NULL
             AND (user_id IS NULL OR $3 IS NULL OR user_id = $3)",
        )
        .bind(channel)
        .bind(chat)
        .bind(user_id)
        .fetch_one(&mut tx)
        .await?;
        if waiting > 0 {
            return Ok(false);
        }
    }
    db::query(
        "INSERT INTO questions (id, agent_id, daemon_id, question, channel, chat, user_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(question.id.to_string())
    .bind(question.agent_id.to_string())
    .bind(daemon)
    .bind(json(question)?)
    .bind(channel)
    .bind(chat)
    .bind(user_id)
    .execute(&mut tx)
    .await?;
    tx.commit().await?;
    Ok(true)
}

/// The question `id` while it waits for an answer.
pub(super) async fn unanswered(db: &Db, id: &str) -> Result<Option<Question>> {
    db::query("SELECT question, user_id FROM questions WHERE id = $1 AND answer IS NULL")
        .bind(id)
        .fetch_optional(db)
        .await?
        .map(|row| question_from(&row))
        .transpose()
}

/// The questions waiting, oldest first; only `agent`'s when given.
pub(super) async fn waiting(db: &Db, agent: Option<&str>) -> Result<Vec<Question>> {
    let rows = match agent {
        Some(agent) => {
            db::query("SELECT question, user_id FROM questions WHERE answer IS NULL AND agent_id = $1 ORDER BY id")
                .bind(agent)
                .fetch_all(db)
                .await?
        }
        None => {
            db::query("SELECT question, user_id FROM questions WHERE answer IS NULL ORDER BY id").fetch_all(db).await?
        }
    };
    rows.iter().map(question_from).collect()
}

/// The oldest question waiting in a channel conversation on `user_id` (or on anyone there).
pub(super) async fn waiting_in_conversation(
    db: &Db,
    channel: &str,
    chat: &str,
    user_id: &str,
) -> Result<Option<Question>> {
    db::query(
        "SELECT question, user_id FROM questions WHERE channel = $1 AND chat = $2 AND answer IS NULL
         AND (user_id IS NULL OR user_id = $3) ORDER BY id LIMIT 1",
    )
    .bind(channel)
    .bind(chat)
    .bind(user_id)
    .fetch_optional(db)
    .await?
    .map(|row| question_from(&row))
    .transpose()
}

/// Records `answer` for question `id`, unless it was answered (or its wait ended) first.
pub(super) async fn set_answer(db: &Db, id: &str, answer: &Answer) -> Result<bool> {
    let done = db::query("UPDATE questions SET answer = $2 WHERE id = $1 AND answer IS NULL")
        .bind(id)
        .bind(json(answer)?)
        .execute(db)
        .await?;
    Ok(done.rows_affected() == 1)
}

fn answer_from(text: &str) -> Result<Answer> {
    serde_json::from_str(text).map_err(|e| Error::internal(format_args!("a stored answer is unreadable: {e}")))
}

/// The answer to question `id`, once given.
pub(super) async fn answer(db: &Db, id: &str) -> Result<Option<Answer>> {
    let answer: Option<Option<String>> =
        db::query_scalar("SELECT answer FROM questions WHERE id = $1").bind(id).fetch_optional(db).await?;
    answer.flatten().map(|text| answer_from(&text)).transpose()
}

/// Ends question `id`'s wait: takes it off the list, and gives the answer it had, if one
/// came (it may have come as the wait was ending).
pub(super) async fn remove(db: &Db, id: &str) -> Result<Option<Answer>> {
    let answer: Option<Option<String>> =
        db::query_scalar("DELETE FROM questions WHERE id = $1 RETURNING answer").bind(id).fetch_optional(db).await?;
    answer.flatten().map(|text| answer_from(&text)).transpose()
}
