//! Decisions from the owner's chat. When `[notify] telegram_channel` names a channel (any
//! kind), every new approval whose rule lets the owner decide is sent to the owner's chat on it
//! (`telegram_chat`, or the channel's `default_target`) with a one-time code; a message there
//! saying `approve CODE` or `deny CODE` decides it, as `owner:channel:NAME`. The approval keeps
//! the code's hash, bound to it; the code works once, while its approval waits, in that chat
//! alone (a direct conversation, never a group), from the owner: a user id the channel trusts
//! (`trusted_users`), or the chat's own (a private chat's id is its user's on Telegram). Past
//! [`MAX_WRONG`] wrong codes in [`WRONG_WINDOW`], codes are not read for the rest of it. The
//! message with the code is in the channel's outbound log like every message sent.

use rand::RngExt;
use sha2::{Digest, Sha256};

use super::{Approval, Approvals, Decision, store};
use crate::channel::platform::Outgoing;

/// How many digits a code has.
const DIGITS: usize = 6;
/// Wrong codes allowed in [`WRONG_WINDOW`] before codes are not read.
const MAX_WRONG: u32 = 5;
/// How long wrong codes are counted.
const WRONG_WINDOW: chrono::Duration = chrono::Duration::minutes(10);

/// Wrong codes counted since `since`.
#[derive(Default)]
pub(super) struct WrongCodes {
    since: Option<chrono::DateTime<chrono::Utc>>,
    count: u32,
}

/// What a code is stored as: its hash, bound to its approval (the same code for another
/// approval hashes otherwise).
fn hashed(approval: uuid::Uuid, code: &str) -> String {
    hex::encode(Sha256::digest(format!("{approval}:{code}").as_bytes()))
}

/// `approve 123456` or `deny 123456` (any case, spaces around): the decision and the code.
fn parse(text: &str) -> Option<(bool, &str)> {
    let (verb, code) = text.trim().split_once(char::is_whitespace)?;
    let approve = match verb.to_ascii_lowercase().as_str() {
        "approve" => true,
        "deny" => false,
        _ => return None,
    };
    let code = code.trim();
    (code.len() == DIGITS && code.bytes().all(|b| b.is_ascii_digit())).then_some((approve, code))
}

/// A message on a channel, as an owner's decision is read from it.
pub struct OwnerMessage<'a> {
    pub channel: &'a str,
    pub chat: &'a str,
    pub user: &'a str,
    pub is_group: bool,
    pub text: &'a str,
}

impl Approvals {
    /// The owner's chat, when `[notify]` names one: the channel and the chat on it.
    fn owner_chat(&self) -> Option<(String, String)> {
        let channel = self.notify.telegram_channel.as_deref()?;
        let address = match &self.notify.telegram_chat {
            Some(chat) => format!("{channel}:{chat}"),
            None => channel.to_string(),
        };
        self.channels.address(&address).ok()
    }

    /// Sends a new approval to the owner's chat with a one-time code, if there is such a chat.
    /// In the background: the turn does not wait on the platform.
    pub(super) async fn ask_owner(&self, approval: &Approval) {
        let Some((channel, chat)) = self.owner_chat() else { return };
        if self.rule_of(approval).is_some_and(|r| !r.may_decide(&format!("owner:channel:{channel}"))) {
            return;
        }
        let code = format!("{:06}", rand::rng().random_range(0..1_000_000u32));
        if let Err(e) = store::set_owner_code(&self.db, approval.id, &hashed(approval.id, &code)).await {
            tracing::warn!(approval = %approval.id, error = %e.message, "an approval's code was not stored; not sent to the owner");
            return;
        }
        let arguments = crate::text::shorten(&approval.arguments.to_string(), 300);
        let text = format!(
            "Agent `{}` asks to call `{}` with {arguments}\nWhy: {} (rule: {}).\n\
             Reply `approve {code}` or `deny {code}` here before {}.",
            approval.agent, approval.tool, approval.reason, approval.rule, approval.expires_at
        );
        let channels = self.channels.clone();
        tokio::spawn(async move {
            if let Err(e) = channels.deliver(&channel, &chat, Outgoing::Text(text), "approval").await {
                tracing::warn!(channel = %channel, error = %e.message, "an approval could not be sent to the owner's chat");
            }
        });
    }

    /// A message on `channel` in `chat`: when it is the owner's chat and says `approve CODE` or
    /// `deny CODE`, the decision of the waiting approval the code was sent for, and what to
    /// answer. `None`: not a decision (the message goes to the agent as any other).
    pub(crate) async fn decide_from_owner_chat(&self, from: &OwnerMessage<'_>) -> Option<String> {
        let (approve, code) = parse(from.text)?;
        let (channel, chat) = (from.channel, from.chat);
        if self.owner_chat().is_none_or(|(c, owner)| c != channel || owner != chat) || from.is_group {
            return None;
        }
        let trusted = self.channels.settings(channel).is_some_and(|c| c.trusted_users.iter().any(|u| u == from.user));
        if !(trusted || from.user == chat) {
            return None;
        }
        let now = self.clock.now();
        {
            let mut wrong = self.wrong_codes.lock().unwrap_or_else(|e| e.into_inner());
            if wrong.since.is_none_or(|since| now - since > WRONG_WINDOW) {
                *wrong = WrongCodes { since: Some(now), count: 0 };
            }
            if wrong.count >= MAX_WRONG {
                return Some(format!(
                    "Too many wrong codes: codes are read again after {} minutes.",
                    WRONG_WINDOW.num_minutes()
                ));
            }
        }
        let waiting = match store::pending_owner_codes(&self.db).await {
            Ok(waiting) => waiting,
            Err(e) => return Some(format!("Not decided: {}", e.message)),
        };
        let Some(id) = waiting.into_iter().find(|(id, hash)| *hash == hashed(*id, code)).map(|(id, _)| id) else {
            self.wrong_codes.lock().unwrap_or_else(|e| e.into_inner()).count += 1;
            return Some("No call waits for that code: it was used, it expired, or it is mistyped.".into());
        };
        let decision = Decision { approve, for_minutes: None, note: None };
        let said = match self.decide_as(&id.to_string(), &decision, &format!("owner:channel:{channel}")).await {
            Ok(a) if approve => format!("Approved `{}` of agent `{}`: it goes on.", a.tool, a.agent),
            Ok(a) => format!("Denied `{}` of agent `{}`: it is told so.", a.tool, a.agent),
            Err(e) => format!("Not decided: {}", e.message),
        };
        Some(said)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decision_is_a_verb_and_six_digits() {
        assert_eq!(parse("approve 123456"), Some((true, "123456")));
        assert_eq!(parse("  Deny   004200 "), Some((false, "004200")));
        for not in ["approve", "approve 12345", "approve 1234567", "approve 12345a", "yes 123456", "approve123456"] {
            assert_eq!(parse(not), None, "{not:?}");
        }
    }

    #[test]
    fn a_code_is_bound_to_its_approval() {
        let (a, b) = (uuid::Uuid::now_v7(), uuid::Uuid::now_v7());
        assert_eq!(hashed(a, "123456"), hashed(a, "123456"));
        assert_ne!(hashed(a, "123456"), hashed(b, "123456"));
        assert_ne!(hashed(a, "123456"), hashed(a, "123457"));
    }
}
