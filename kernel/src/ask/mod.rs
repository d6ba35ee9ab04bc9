//! `ask_user` (spec §15, family `ask`): a turn asks the person in its conversation and waits.
//!
//! Where the question goes is where the person is:
//! - **the dashboard's chat or `kennel chat`**: a `question` event on the agent's event stream
//!   (the chat shows it with its choices); an operator answers with
//!   `POST /api/questions/{id}/answer` or the form on the agent's page;
//! - **a channel conversation**: the question is sent there, and the next message from the
//!   person whose message started the turn is the answer instead of a new turn
//!   ([`Questions::answer_in_conversation`], called by the channel bridge).
//!
//! Headless turns never offer the tool (the turn layer of availability). A question waits at
//! most `[ask] timeout_secs`; then the model is told plainly that nobody answered. Questions
//! live in memory only: the turn that waits for one does not outlive the daemon either.

mod tools;

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use serde::Serialize;
use tokio::sync::oneshot;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::error::{Error, Result};
use crate::tool::CallContext;
use crate::turn::{AgentEvent, EventKind};

pub(crate) use tools::register;

/// At most this many characters in a question.
pub const MAX_QUESTION: usize = 2000;
/// At most this many choices, each at most [`MAX_CHOICE`] characters.
pub const MAX_CHOICES: usize = 10;
pub const MAX_CHOICE: usize = 200;
/// At most this many characters in an answer.
pub const MAX_ANSWER: usize = 4000;

/// A question a turn waits on.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Question {
    pub id: Uuid,
    pub agent_id: Uuid,
    pub agent: String,
    pub session_id: Option<Uuid>,
    pub turn_id: Option<Uuid>,
    pub question: String,
    /// Offered as buttons (on a channel and in `kennel chat`: numbered, and a number picks
    /// one); any other answer is taken too.
    pub choices: Vec<String>,
    pub asked_at: String,
    /// When the turn stops waiting (RFC 3339).
    pub expires_at: String,
    /// Where it is answered.
    pub asked_in: AskedIn,
}

/// Where a question waits for its answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AskedIn {
    /// The dashboard's chat or `kennel chat`: answered through the API or the agent's page.
    Chat,
    /// A channel conversation: answered there, by the person who started the turn.
    Channel {
        channel: String,
        chat: String,
        #[serde(skip)]
        user_id: Option<String>,
    },
}

/// What the person answered.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Answer {
    pub answer: String,
    /// The offered choice it is, if it is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub choice: Option<String>,
    pub answered_by: String,
}

struct Waiting {
    question: Question,
    reply: oneshot::Sender<Answer>,
}

/// The questions turns wait on, by id.
#[derive(Default)]
pub struct Questions {
    waiting: Mutex<HashMap<Uuid, Waiting>>,
}

/// Takes a question off the waiting list however its wait ends (answer, timeout, a cancelled
/// turn).
struct Unlist<'a>(&'a Questions, Uuid);

impl Drop for Unlist<'_> {
    fn drop(&mut self) {
        self.0.lock().remove(&self.1);
    }
}

/// The question's text and choices, checked.
pub fn checked(question: &str, choices: &[String]) -> Result<(String, Vec<String>)> {
    let question = question.trim();
    if question.is_empty() {
        return Err(Error::invalid("the question is empty: write what you need to know").with_field("question"));
    }
    if crate::text::longer_than(question, MAX_QUESTION) {
        return Err(Error::invalid(format!("a question is at most {MAX_QUESTION} characters")).with_field("question"));
    }
    if choices.len() > MAX_CHOICES {
        return Err(Error::invalid(format!("at most {MAX_CHOICES} choices; ask an open question instead"))
            .with_field("choices"));
    }
    let mut out: Vec<String> = Vec::with_capacity(choices.len());
    for choice in choices {
        let choice = choice.trim();
        if choice.is_empty() || crate::text::longer_than(choice, MAX_CHOICE) {
            return Err(Error::invalid(format!("each choice is 1 to {MAX_CHOICE} characters")).with_field("choices"));
        }
        if out.iter().any(|c| c.eq_ignore_ascii_case(choice)) {
            return Err(Error::invalid(format!("the choice `{choice}` is given twice")).with_field("choices"));
        }
        out.push(choice.to_string());
    }
    Ok((question.to_string(), out))
}

impl Questions {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, Waiting>> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Asks the person in `ctx`'s turn and waits for the answer; `None` when nobody answered
    /// within `timeout`. Ends early (`Failed`) when the turn is stopped.
    pub async fn ask(
        &self,
        ctx: &CallContext,
        question: &str,
        choices: &[String],
        timeout: Duration,
    ) -> Result<Option<Answer>> {
        if ctx.headless {
            return Err(Error::unavailable("nobody is there to answer in this turn (it has no person present)"));
        }
        let (text, choices) = checked(question, choices)?;
        let kernel = &ctx.kernel;
        let now = kernel.clock().now();
        let expires = now + chrono::Duration::from_std(timeout).unwrap_or(chrono::Duration::MAX);
        let asked_in = match &ctx.channel {
            Some(c) => {
                AskedIn::Channel { channel: c.channel.clone(), chat: c.chat_id.clone(), user_id: c.user_id.clone() }
            }
            None => AskedIn::Chat,
        };
        if let AskedIn::Channel { channel, chat, user_id } = &asked_in
            && self.lock().values().any(|w| matches!(&w.question.asked_in, AskedIn::Channel { channel: c, chat: h, user_id: u } if c == channel && h == chat && u == user_id))
        {
            return Err(Error::conflict(
                "a question to this person in this conversation is still waiting: one at a time on a channel",
            ));
        }
        let q = Question {
            id: Uuid::now_v7(),
            agent_id: ctx.agent.id,
            agent: ctx.agent.name.clone(),
            session_id: ctx.session,
            turn_id: ctx.turn,
            question: text,
            choices,
            asked_at: crate::db::timestamp(now),
            expires_at: crate::db::timestamp(expires),
            asked_in,
        };
        let (tx, rx) = oneshot::channel();
        self.lock().insert(q.id, Waiting { question: q.clone(), reply: tx });
        let _unlist = Unlist(self, q.id);
        self.put(ctx, &q).await?;
        tokio::select! {
            answer = rx => Ok(answer.ok()),
            () = tokio::time::sleep(timeout) => Ok(None),
            () = ctx.cancel.cancelled() => Err(Error::failed("the turn was stopped while it waited for an answer")),
        }
    }

    /// Puts the question where the person will see it.
    async fn put(&self, ctx: &CallContext, q: &Question) -> Result<()> {
        match &q.asked_in {
            AskedIn::Chat => {
                if let (Some(turn_id), Some(session_id)) = (q.turn_id, q.session_id) {
                    ctx.kernel.turns().emit(AgentEvent {
                        agent_id: q.agent_id,
                        turn_id,
                        session_id,
                        kind: EventKind::Question {
                            question_id: q.id,
                            question: q.question.clone(),
                            choices: q.choices.clone(),
                        },
                    });
                }
                Ok(())
            }
            AskedIn::Channel { channel, chat, .. } => {
                let text = channel_text(q);
                ctx.kernel
                    .channels()
                    .deliver(channel, chat, crate::channel::platform::Outgoing::Text(text), "ask_user")
                    .await
            }
        }
    }

    /// The questions waiting, oldest first; only `agent`'s when given.
    pub fn waiting(&self, agent: Option<Uuid>) -> Vec<Question> {
        let mut out: Vec<Question> = self
            .lock()
            .values()
            .map(|w| w.question.clone())
            .filter(|q| agent.is_none_or(|a| q.agent_id == a))
            .collect();
        out.sort_by_key(|q| q.id);
        out
    }

    /// Answers a question asked in a chat, as `by` (an operator, the CLI, a token). A
    /// question asked on a channel is answered there.
    pub fn answer(&self, id: &str, text: &str, by: &str) -> Result<Question> {
        let text = checked_answer(text)?;
        let mut waiting = self.lock();
        let Some(w) = Uuid::parse_str(id).ok().and_then(|id| waiting.get(&id)) else {
            return Err(Error::not_found(format!(
                "no question {id} is waiting: it was answered, timed out, or its turn ended"
            )));
        };
        if let AskedIn::Channel { channel, chat, .. } = &w.question.asked_in {
            return Err(Error::conflict(format!(
                "question {id} was asked on channel `{channel}` (chat {chat}): the person there answers it"
            )));
        }
        let id = w.question.id;
        let w = waiting.remove(&id).expect("looked up under the same lock");
        let answer =
            Answer { choice: number_or_choice(&w.question.choices, &text), answer: text, answered_by: by.into() };
        let _ = w.reply.send(answer);
        Ok(w.question)
    }

    /// A channel message that answers a question waiting in its conversation, from the person
    /// it was asked of: handed to the waiting turn (true), or not an answer (false: a turn of
    /// its own answers it).
    pub fn answer_in_conversation(&self, channel: &str, chat: &str, user_id: &str, text: &str, by: &str) -> bool {
        let Ok(text) = checked_answer(text) else { return false };
        let mut waiting = self.lock();
        let id = waiting.iter().find_map(|(id, w)| match &w.question.asked_in {
            AskedIn::Channel { channel: c, chat: h, user_id: u }
                if c == channel && h == chat && u.as_deref().is_none_or(|u| u == user_id) =>
            {
                Some(*id)
            }
            _ => None,
        });
        let Some(w) = id.and_then(|id| waiting.remove(&id)) else { return false };
        let choice = number_or_choice(&w.question.choices, &text);
        w.reply.send(Answer { answer: text, choice, answered_by: by.into() }).is_ok()
    }
}

fn checked_answer(text: &str) -> Result<String> {
    let text = text.trim();
    if text.is_empty() {
        return Err(Error::invalid("the answer is empty").with_field("answer"));
    }
    if crate::text::longer_than(text, MAX_ANSWER) {
        return Err(Error::invalid(format!("an answer is at most {MAX_ANSWER} characters")).with_field("answer"));
    }
    Ok(text.to_string())
}

/// The offered choice `answer` is (ignoring case), if any.
fn choice_of(choices: &[String], answer: &str) -> Option<String> {
    choices.iter().find(|c| c.eq_ignore_ascii_case(answer)).cloned()
}

/// The choices are shown numbered (on a channel, in `kennel chat`): `2` picks the second.
fn number_or_choice(choices: &[String], answer: &str) -> Option<String> {
    let picked = answer.trim_end_matches('.').parse::<usize>().ok().and_then(|n| n.checked_sub(1));
    picked.and_then(|i| choices.get(i).cloned()).or_else(|| choice_of(choices, answer))
}

/// The question as a channel message: its choices numbered, and how to answer.
fn channel_text(q: &Question) -> String {
    let mut text = format!("❓ {}", q.question);
    for (i, choice) in q.choices.iter().enumerate() {
        text.push_str(&format!("\n{}. {choice}", i + 1));
    }
    text.push_str(if q.choices.is_empty() {
        "\n(reply to answer)"
    } else {
        "\n(reply with a number, or in your own words)"
    });
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choices() -> Vec<String> {
        vec!["Red".into(), "Blue".into()]
    }

    #[test]
    fn questions_and_choices_are_checked() {
        assert_eq!(checked("  Which?  ", &[" a ".into()]).unwrap(), ("Which?".into(), vec!["a".to_string()]));
        for (q, c, field) in [
            (" ", vec![], "question"),
            ("q", vec!["a".to_string(), "A".into()], "choices"),
            ("q", vec![" ".to_string()], "choices"),
            ("q", (0..11).map(|i| i.to_string()).collect(), "choices"),
        ] {
            let e = checked(q, &c).unwrap_err();
            assert_eq!(e.fields[0].field, field, "{}", e.message);
        }
        assert!(checked(&"x".repeat(MAX_QUESTION + 1), &[]).is_err());
    }

    #[test]
    fn an_answer_is_matched_to_a_choice_by_text_or_on_a_channel_by_number() {
        assert_eq!(choice_of(&choices(), "blue"), Some("Blue".into()));
        assert_eq!(choice_of(&choices(), "green"), None);
        assert_eq!(number_or_choice(&choices(), "2"), Some("Blue".into()));
        assert_eq!(number_or_choice(&choices(), "1."), Some("Red".into()));
        assert_eq!(number_or_choice(&choices(), "3"), None);
        assert_eq!(number_or_choice(&choices(), "red"), Some("Red".into()));
    }

    #[test]
    fn a_question_waits_in_memory_until_answered_once() {
        let questions = Questions::default();
        let (tx, mut rx) = oneshot::channel();
        let q = Question {
            id: Uuid::now_v7(),
            agent_id: Uuid::now_v7(),
            agent: "a".into(),
            session_id: None,
            turn_id: None,
            question: "Which?".into(),
            choices: choices(),
            asked_at: String::new(),
            expires_at: String::new(),
            asked_in: AskedIn::Chat,
        };
        questions.lock().insert(q.id, Waiting { question: q.clone(), reply: tx });
        assert_eq!(questions.waiting(Some(q.agent_id)).len(), 1);
        assert!(questions.waiting(Some(Uuid::now_v7())).is_empty());
        assert_eq!(questions.answer(&q.id.to_string(), " ", "cli").unwrap_err().fields[0].field, "answer");
        questions.answer(&q.id.to_string(), "BLUE", "operator:ada").unwrap();
        let got = rx.try_recv().unwrap();
        assert_eq!(
            (got.answer.as_str(), got.choice.as_deref(), got.answered_by.as_str()),
            ("BLUE", Some("Blue"), "operator:ada")
        );
        assert_eq!(questions.answer(&q.id.to_string(), "again", "cli").unwrap_err().kind, crate::ErrorKind::NotFound);
        assert!(questions.waiting(None).is_empty());
    }
}
