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
//! most `[ask] timeout_secs`; then the model is told plainly that nobody answered.
//!
//! Waiting questions are rows of `questions` (issue 43), so with several daemons any of them
//! lists a question and takes its answer (the operator's request, or the channel message,
//! may reach another daemon than the one running the turn); the answer is written to the row
//! and the asking daemon woken through the cluster's `done:<id>`. A row lives as long as its
//! turn waits: the turn does not outlive its daemon, and the daemon that takes a dead one's
//! work over removes its questions.
//!
//! # Design notes
//!
//! ## Layout
//!
//! `ask_user` (spec §15, family `ask`, issue 24): `Questions` (`ask`, `waiting`, `answer`): the
//! questions turns wait on, rows of `questions` (`store.rs`) so any daemon of a cluster lists and answers them,
//! the asking daemon woken by `Cluster::wake` (`done:<id>`); where each is asked (`AskedIn::Chat`:
//! a `question` event on the agent's stream; `AskedIn::Channel`: sent to the conversation) and
//! answered (`answer` for chats, `answer_in_conversation` for the channel bridge); `tools.rs`
//! (`ask_user`, `needs_person`).
//!
//! ## ask_user
//!
//! - **`ask_user(question, choices?)`** (family `ask`; question ≤ 2,000 characters, at most 10
//!   distinct choices of ≤ 200): the call waits until the person in the turn's conversation
//!   answers, at most `[ask] timeout_secs` (default 600, 1–86,400); then the result is
//!   `{"answered": false, "note": "no answer within N s …"}` — not an error: the model goes on.
//!   An answer is `{"answered": true, "answer", "choice", "answered_by"}` where `choice` is the
//!   offered choice it matches (case-insensitive; a number picks that choice, from any front: the kernel reads it), else null —
//!   the person may always answer in their own words.
//!   - *Who has a person present* is the turn layer of availability (`TurnScope.person`): the
//!     dashboard's chat (`Caller::Operator`), `kennel chat` (`Caller::Cli`) and channel
//!     conversation turns (the person who wrote). API, schedule, trigger, agent and A2A turns are
//!     headless: `ask_user` is never offered there (nor named in lazy/stable modes' context), and
//!     a direct call is refused.
//!   - *Dashboard chat*: the tool emits `EventKind::Question {question_id, question, choices}`
//!     on the agent's event stream; live.js shows the question with a button per choice and a box
//!     for any answer, and posts the answer to `/agents/{id}/questions/{question_id}` without
//!     leaving the page (the chat form's request is still waiting for the turn). The agent page
//!     also renders every waiting chat question server-side, so the answer works without script
//!     and from another tab. REST: `GET /api/questions?agent=`, `POST /api/questions/{id}/answer`
//!     (`answered_by` is the caller's label; answering is `Logged`: the session records it as
//!     the tool's result).
//!   - *`kennel chat`*: the question and numbered choices are printed; the next line typed (or
//!     piped) is the answer, a number picking that choice.
//!   - *A channel*: the question goes to the conversation with numbered choices; the next
//!     message **from the person whose message started the turn** is stored (`channel_inbound`
//!     state `answer`) and handed to the waiting turn instead of starting one. Others in a group
//!     still get turns of their own (queued behind the waiting one, as turns of one conversation
//!     run in order). One waiting question per person and conversation; a REST answer to a
//!     channel question is a 409 (the person there answers it).
//!   - Questions are rows of `questions` while their turn waits (issue 43): any daemon of a
//!     cluster lists them (`GET /api/questions`, the agent page) and takes an answer, written
//!     to the row, and the daemon running the turn is woken (`done:<id>`, and a look every
//!     second). The row goes when the wait ends; a restart ends the waiting turn with the rest
//!     of the daemon, and the daemon that takes its work over deletes its rows. A channel
//!     message stored but unanswered is answered at the next start as always.

pub(crate) mod config;
mod store;
mod tools;

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::channel::Channels;
use crate::clock::Clock;
use crate::cluster::Cluster;
use crate::db::Db;
use crate::error::{Error, Result};
use crate::family::{Family, Services};
use crate::tool::CallContext;
use crate::turn::{AgentEvent, EventKind, Turns};

pub use config::AskConfig;
pub(crate) use tools::register;

/// The family's part in the kernel (see [`crate::family`]).
pub const FAMILY: Family = Family {
    name: "ask",
    open: |s| {
        let questions = s.provide(Questions::open(s));
        s.get::<Channels>().answers_go_to(&questions);
        Ok(())
    },
    register,
};

/// At most this many characters in a question.
pub const MAX_QUESTION: usize = 2000;
/// At most this many choices, each at most [`MAX_CHOICE`] characters.
pub const MAX_CHOICES: usize = 10;
pub const MAX_CHOICE: usize = 200;
/// At most this many characters in an answer.
pub const MAX_ANSWER: usize = 4000;

/// A question a turn waits on.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    pub answer: String,
    /// The offered choice it is, if it is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub choice: Option<String>,
    pub answered_by: String,
}

/// How often a daemon sharing its database looks for an answer a notification did not bring.
const LOOK_AGAIN: Duration = Duration::from_secs(1);

/// Takes a question off the waiting list when its wait ends: at once by [`Unlist::now`], and
/// if the wait was dropped instead (its turn's task ended), as soon as it can.
struct Unlist {
    db: Db,
    id: String,
}

impl Unlist {
    /// Ends the wait now; the answer, if one came (even as the wait was ending).
    async fn now(mut self) -> Option<Answer> {
        let id = std::mem::take(&mut self.id);
        match store::remove(&self.db, &id).await {
            Ok(answer) => answer,
            Err(e) => {
                tracing::warn!(question = id, error = %e.message, "could not take a question off the waiting list");
                None
            }
        }
    }
}

impl Drop for Unlist {
    fn drop(&mut self) {
        let (db, id) = (self.db.clone(), std::mem::take(&mut self.id));
        if id.is_empty() {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(e) = store::remove(&db, &id).await
                    && !db.is_closed()
                {
                    tracing::warn!(question = id, error = %e.message, "could not take a question off the waiting list");
                }
            });
        }
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

/// The questions turns wait on, in `questions` rows: asked by `ask_user`, listed and answered
/// by the fronts and the channel bridge, on whichever daemon of the cluster.
pub struct Questions {
    db: Db,
    /// Wakes the asking daemon when another one took the answer.
    cluster: Arc<Cluster>,
    clock: Clock,
    /// A chat's question is an event on the agent's stream.
    turns: Arc<Turns>,
    /// A channel's question is sent to its conversation.
    channels: Arc<Channels>,
}

impl Questions {
    fn open(services: &Services) -> Questions {
        Questions {
            db: services.get::<Db>().clone(),
            cluster: services.need(),
            clock: services.get::<Clock>().clone(),
            turns: services.need(),
            channels: services.need(),
        }
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
        let now = self.clock.now();
        let expires = now + chrono::Duration::from_std(timeout).unwrap_or(chrono::Duration::MAX);
        let asked_in = match &ctx.channel {
            Some(c) => {
                AskedIn::Channel { channel: c.channel.clone(), chat: c.chat_id.clone(), user_id: c.user_id.clone() }
            }
            None => AskedIn::Chat,
        };
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
        let id = q.id.to_string();
        // Waiting starts before the question is listed, so no answer's wake-up is missed.
        let waiting = self.cluster.wait_for(&id);
        if !store::insert(&self.db, &q, self.cluster.id()).await? {
            return Err(Error::conflict(
                "a question to this person in this conversation is still waiting: one at a time on a channel",
            ));
        }
        let unlist = Unlist { db: self.db.clone(), id: id.clone() };
        let answered = async {
            self.put(&q).await?;
            let deadline = tokio::time::sleep(timeout);
            tokio::pin!(deadline);
            let shared = self.db.is_shared();
            loop {
                tokio::select! {
                    () = waiting.woken.notified() => {}
                    () = tokio::time::sleep(LOOK_AGAIN), if shared => {}
                    () = &mut deadline => return Ok(None),
                    () = ctx.cancel.cancelled() => {
                        return Err(Error::failed("the turn was stopped while it waited for an answer"));
                    }
                }
                if let Some(answer) = store::answer(&self.db, &id).await? {
                    return Ok(Some(answer));
                }
            }
        }
        .await;
        // An answer recorded just as the wait ended (its giver was told the turn goes on) is
        // used rather than lost; a stopped turn stays stopped.
        let last = unlist.now().await;
        match answered {
            Ok(None) => Ok(last),
            other => other,
        }
    }

    /// Puts the question where the person will see it.
    async fn put(&self, q: &Question) -> Result<()> {
        match &q.asked_in {
            AskedIn::Chat => {
                if let (Some(turn_id), Some(session_id)) = (q.turn_id, q.session_id) {
                    self.turns.emit(AgentEvent {
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
                self.channels.deliver(channel, chat, crate::channel::platform::Outgoing::Text(text), "ask_user").await
            }
        }
    }

    /// The questions waiting on any daemon, oldest first; only `agent`'s when given.
    pub async fn waiting(&self, agent: Option<Uuid>) -> Result<Vec<Question>> {
        store::waiting(&self.db, agent.map(|a| a.to_string()).as_deref()).await
    }

    /// Answers a question asked in a chat, as `by` (an operator, the CLI, a token), whichever
    /// daemon its turn runs on. A question asked on a channel is answered there.
    pub async fn answer(&self, id: &str, text: &str, by: &str) -> Result<Question> {
        let text = checked_answer(text)?;
        let gone =
            || Error::not_found(format!("no question {id} is waiting: it was answered, timed out, or its turn ended"));
        let Some(question) = store::unanswered(&self.db, id).await? else { return Err(gone()) };
        if let AskedIn::Channel { channel, chat, .. } = &question.asked_in {
            return Err(Error::conflict(format!(
                "question {id} was asked on channel `{channel}` (chat {chat}): the person there answers it"
            )));
        }
        let answer =
            Answer { choice: number_or_choice(&question.choices, &text), answer: text, answered_by: by.into() };
        if !self.give(&question, &answer).await? {
            return Err(gone());
        }
        Ok(question)
    }

    /// A channel message that answers a question waiting in its conversation, from the person
    /// it was asked of: handed to the waiting turn (true), or not an answer (false: a turn of
    /// its own answers it).
    pub async fn answer_in_conversation(
        &self,
        channel: &str,
        chat: &str,
        user_id: &str,
        text: &str,
        by: &str,
    ) -> Result<bool> {
        let Ok(text) = checked_answer(text) else { return Ok(false) };
        let Some(question) = store::waiting_in_conversation(&self.db, channel, chat, user_id).await? else {
            return Ok(false);
        };
        let choice = number_or_choice(&question.choices, &text);
        self.give(&question, &Answer { answer: text, choice, answered_by: by.into() }).await
    }

    /// Records `answer` and wakes the daemon whose turn waits for it; false when another
    /// answer (or the end of the wait) came first.
    async fn give(&self, question: &Question, answer: &Answer) -> Result<bool> {
        let id = question.id.to_string();
        if !store::set_answer(&self.db, &id, answer).await? {
            return Ok(false);
        }
        self.cluster.wake(&id).await?;
        Ok(true)
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

    /// The wait's end takes the question off the list and gives any answer recorded as it
    /// ended, so an answer its giver was told went through is not lost.
    #[tokio::test]
    async fn an_answer_recorded_as_the_wait_ends_is_given_by_its_end() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::db::open_for_test(dir.path()).await;
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
            asked_in: AskedIn::Channel { channel: "team".into(), chat: "c1".into(), user_id: Some("u1".into()) },
        };
        assert!(store::insert(&db, &q, "daemon").await.unwrap());
        let again = Question { id: Uuid::now_v7(), ..q.clone() };
        assert!(!store::insert(&db, &again, "daemon").await.unwrap(), "one question per person and conversation");
        let waiting = store::waiting_in_conversation(&db, "team", "c1", "u1").await.unwrap().unwrap();
        assert_eq!(waiting.asked_in, q.asked_in, "the person asked comes back with it");
        let answer = Answer { answer: "2".into(), choice: Some("Blue".into()), answered_by: "channel:team:u1".into() };
        assert!(store::set_answer(&db, &q.id.to_string(), &answer).await.unwrap());
        assert!(!store::set_answer(&db, &q.id.to_string(), &answer).await.unwrap(), "answered once");
        assert_eq!(store::remove(&db, &q.id.to_string()).await.unwrap(), Some(answer));
        assert_eq!(store::remove(&db, &q.id.to_string()).await.unwrap(), None);
        assert!(store::waiting(&db, None).await.unwrap().is_empty());
    }
}
