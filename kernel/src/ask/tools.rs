//! Family `ask`: `ask_user`, thin over [`Questions::ask`].

use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::Result;
use crate::family::Services;
use crate::tool::{CallContext, Registry, Tool, ToolDef};

use super::Questions;

pub(crate) fn register(r: &mut Registry, services: &Services) {
    r.add(AskUser { questions: services.need(), timeout: Duration::from_secs(services.config().ask.timeout_secs) });
}

pub struct AskUser {
    questions: Arc<Questions>,
    /// `[ask] timeout_secs`.
    timeout: Duration,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskArgs {
    /// What you need to know, as you would ask it (at most 2,000 characters).
    pub question: String,
    /// Answers to offer (at most 10, each at most 200 characters); the person may still answer
    /// in their own words.
    #[serde(default)]
    pub choices: Vec<String>,
}

impl Tool for AskUser {
    type Args = AskArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "ask_user",
            "ask",
            "Ask the person you are talking with a question and wait for the answer (only when you cannot go on without it). Offer choices when the answers are few.",
        )
        .tags(&["ask", "question", "clarify", "confirm", "user", "human", "choice"])
        .needs_person()
    }

    async fn run(&self, ctx: CallContext, args: AskArgs) -> Result<Value> {
        let timeout = self.timeout;
        match self.questions.ask(&ctx, &args.question, &args.choices, timeout).await? {
            Some(answer) => Ok(
                json!({ "answered": true, "answer": answer.answer, "choice": answer.choice, "answered_by": answer.answered_by }),
            ),
            None => Ok(json!({
                "answered": false,
                "note": format!(
                    "no answer within {} s ([ask] timeout_secs): go on without it, or say in your reply what you still need",
                    timeout.as_secs()
                ),
            })),
        }
    }
}
