//! Messages that arrive: the poll-mode listeners (each under its channel's lease), webhooks,
//! storing each message before anything else, and the turn that answers it (through the
//! [`crate::runtime::Runtime`]). A message may instead answer an `ask_user` question waiting
//! in its conversation: it is handed to that question ([`crate::ask::Questions`]).

use std::sync::Arc;

use super::platform::{self, Connection, Inbound, Outgoing, WebhookReply, WebhookRequest};
use super::{Channel, ChannelMode, Channels, InboundRow, kind_title, mode_of, store};
use crate::error::{Error, Result};
use crate::runtime::{TurnEnd, TurnRequest};
use crate::session::Origin;
use crate::tool::{Caller, ChannelContext};

impl Channels {
    /// Starts the poll-mode listeners and answers the messages a previous run stored but did
    /// not answer. Only the daemon calls this.
    pub(crate) fn start(self: &Arc<Self>) {
        // Set under the channels' lock, which `apply` reads it under: a channel added meanwhile
        // is listened to here or there, never twice.
        let channels: Vec<Arc<Channel>> = {
            let map = self.channels.write().unwrap_or_else(|e| e.into_inner());
            self.started.store(true, std::sync::atomic::Ordering::SeqCst);
            map.values().cloned().collect()
        };
        for channel in &channels {
            self.listen(channel);
        }
        let channels = self.clone();
        tokio::spawn(async move {
            match store::pending(&channels.db).await {
                Ok(rows) => {
                    for row in rows {
                        channels.spawn_answer(inbound_of(&row), row.channel);
                    }
                }
                Err(e) => tracing::warn!(error = %e.message, "could not read unanswered channel messages"),
            }
        });
    }

    /// Starts `channel`'s listener when it polls (a webhook channel is posted to); one whose
    /// secret's variable is not set is noted and left unavailable.
    pub(super) fn listen(self: &Arc<Self>, channel: &Arc<Channel>) {
        let Ok(platform) = channel.platform() else {
            tracing::warn!(channel = %channel.name, error = %channel.platform.as_ref().err().map(|e| e.message.clone()).unwrap_or_default(), "channel unavailable");
            return;
        };
        if mode_of(&channel.config) != ChannelMode::Poll {
            return;
        }
        let (sink_channels, sink_channel) = (self.clone(), channel.name.clone());
        let sink: platform::Sink = Arc::new(move |m: Inbound| {
            let (channels, name) = (sink_channels.clone(), sink_channel.clone());
            Box::pin(async move {
                if let Err(e) = channels.accept(&name, m).await {
                    tracing::error!(channel = %name, error = %e.message, "an inbound message could not be stored");
                }
            })
        });
        let state_channel = channel.clone();
        let state = Arc::new(move |c: Connection| {
            *state_channel.connection.lock().unwrap_or_else(|e| e.into_inner()) = c;
        });
        tokio::spawn(poll_under_lease(self.clone(), channel.clone(), platform.clone(), sink, state));
    }

    /// An inbound request to `/channels/NAME/inbound`: verified by the channel's adapter, each
    /// message in it stored (once) and its turn started. Returns what to answer.
    /// Anyone may post there: an unknown channel and one that polls get the same answer, which
    /// names no configured channel.
    pub async fn receive_webhook(self: &Arc<Self>, name: &str, req: WebhookRequest<'_>) -> Result<WebhookReply> {
        let channel = self
            .named(name)
            .filter(|c| mode_of(&c.config) == ChannelMode::Webhook)
            .ok_or_else(|| Error::not_found("no channel takes webhooks at this address"))?;
        let reply = channel.platform()?.webhook(req).await?;
        if let WebhookReply::Messages(messages) = &reply {
            for m in messages {
                self.accept(name, m.clone()).await?;
            }
        }
        Ok(reply)
    }

    /// Stores one inbound message and starts answering it; a message stored before (a
    /// redelivery) changes nothing. Returns once the message is stored.
    /// A message from the person an `ask_user` question in its conversation waits on is the
    /// answer, handed to that turn: it starts no turn of its own.
    async fn accept(self: &Arc<Self>, name: &str, m: Inbound) -> Result<()> {
        let at = crate::db::timestamp(self.clock.now());
        if !store::receive(&self.db, name, &m, &at).await? {
            return Ok(());
        }
        crate::metrics::metrics().channel_message(name, true);
        let by = format!("channel:{name}:{}", m.from.user_id);
        let questions = self.questions.get().and_then(std::sync::Weak::upgrade);
        let answered = match questions {
            Some(questions) => {
                questions.answer_in_conversation(name, &m.chat_id, &m.from.user_id, &m.text, &by).await?
            }
            None => false,
        };
        let decided = match (answered, self.owner_decisions.get().and_then(std::sync::Weak::upgrade)) {
            (false, Some(approvals)) => {
                let from = crate::approval::OwnerMessage {
                    channel: name,
                    chat: &m.chat_id,
                    user: &m.from.user_id,
                    is_group: m.is_group,
                    text: &m.text,
                };
                approvals.decide_from_owner_chat(&from).await
            }
            _ => None,
        };
        if answered {
            store::finish(&self.db, name, &m.message_id, "answer", None).await?;
        } else if let Some(said) = decided {
            // An owner's "approve CODE": a decision, answered here; it starts no turn.
            store::finish(&self.db, name, &m.message_id, "decision", None).await?;
            self.deliver(name, &m.chat_id, Outgoing::Text(said), "approval").await?;
        } else {
            self.spawn_answer(m, name.to_string());
        }
        Ok(())
    }

    fn spawn_answer(self: &Arc<Self>, m: Inbound, name: String) {
        let channels = self.clone();
        tokio::spawn(async move {
            let (state, detail) = match channels.answer(&name, &m).await {
                Ok(state) => (state, None),
                Err(e) => {
                    tracing::warn!(channel = %name, chat = %m.chat_id, error = %e.message, "a channel message was not answered");
                    ("failed", Some(e.message))
                }
            };
            if let Err(e) = store::finish(&channels.db, &name, &m.message_id, state, detail.as_deref()).await {
                tracing::warn!(channel = %name, error = %e.message, "could not record a channel message's outcome");
            }
        });
    }

    /// Runs the turn a message asks for and sends its reply back; a deliver-only webhook's
    /// message is sent on instead. Returns the inbound row's new state.
    async fn answer(&self, name: &str, m: &Inbound) -> Result<&'static str> {
        let channel = self.get(name)?;
        if channel.config.deliver_only {
            let target = channel.config.default_target.as_deref().unwrap_or_default();
            let (to, chat) = self.address(target)?;
            self.deliver(&to, &chat, Outgoing::Text(m.text.clone()), "deliver_only").await?;
            return Ok("delivered");
        }
        let agent_name = channel.config.agent.as_deref().ok_or_else(|| {
            Error::unavailable(format!("channel `{name}` has no agent to answer it: set [channels.{name}] agent"))
        })?;
        // The agent bound to this channel, by id: never a later agent that took its name.
        let agent = self.agents.bound(&crate::agent::binding::Binding::Channel(name.to_string()), agent_name)?;
        agent.ensure_running()?;
        let lock = {
            let mut locks = self.conversations.lock().unwrap_or_else(|e| e.into_inner());
            locks.entry((name.to_string(), m.chat_id.clone())).or_default().clone()
        };
        let _in_turn = lock.lock().await;
        let origin = Origin::Channel { channel: name.to_string(), chat: m.chat_id.clone() };
        let session = self.sessions.labelled(agent.id, &origin).await?;
        let req = TurnRequest {
            session: Some(session.id),
            channel: Some(ChannelContext {
                channel: name.to_string(),
                chat_id: m.chat_id.clone(),
                user_id: Some(m.from.user_id.clone()),
                is_group: m.is_group,
            }),
            // A message the daemon stopped before answering is in the session already: answered,
            // not added twice.
            retry: true,
            // The person who wrote is there to answer an `ask_user` question.
            headless: false,
            // Whoever wrote steers the model from here on (issue 48: approvals), unless it is
            // one of the owner's or operators' ids the channel trusts.
            taint: (!channel.config.trusted_users.contains(&m.from.user_id))
                .then(|| crate::approval::Label::new("channel", format!("channel:{name} user {}", m.from.user_id)))
                .into_iter()
                .collect(),
            ..TurnRequest::headless(turn_message(&channel, m), Caller::Channel(name.to_string()))
        };
        let result = self.runtime.run_turn(agent, req).await?;
        if result.ended != TurnEnd::Reply || result.reply.trim().is_empty() {
            return Err(Error::failed(format!("the turn ended without a reply ({})", result.ended.as_str())));
        }
        self.deliver(name, &m.chat_id, Outgoing::Text(result.reply), "reply").await?;
        Ok("answered")
    }
}

/// What the agent reads for an inbound message: who wrote it, where, then the text.
fn turn_message(channel: &Channel, m: &Inbound) -> String {
    let who = match &m.from.username {
        Some(u) => format!("{} (@{u}, user_id {})", m.from.display_name, m.from.user_id),
        None => format!("{} (user_id {})", m.from.display_name, m.from.user_id),
    };
    let place = if m.is_group {
        format!(
            "the group {}",
            m.chat_title.as_deref().map(|t| format!("\"{t}\" ({})", m.chat_id)).unwrap_or(m.chat_id.clone())
        )
    } else {
        "a direct conversation".into()
    };
    format!(
        "[{} message on channel `{}` in {place} from {who}]\n{}",
        kind_title(channel.config.kind),
        channel.name,
        m.text
    )
}

fn inbound_of(row: &InboundRow) -> Inbound {
    Inbound {
        message_id: row.message_id.clone(),
        chat_id: row.chat_id.clone(),
        chat_title: row.chat_title.clone(),
        is_group: row.is_group,
        from: platform::Member {
            user_id: row.user_id.clone(),
            display_name: row.display_name.clone(),
            username: row.username.clone(),
        },
        text: row.text.clone(),
    }
}

/// Listens on a polling channel (Telegram's `getUpdates`, Discord's gateway) while this
/// daemon holds the lease `channel:<name>`: a platform refuses a second poller, so a cluster
/// runs one, and another daemon takes over when its holder dies or stops.
async fn poll_under_lease(
    channels: Arc<Channels>,
    channel: Arc<Channel>,
    platform: Arc<dyn platform::Platform>,
    sink: platform::Sink,
    state: Arc<dyn Fn(Connection) + Send + Sync>,
) {
    let lease = format!("channel:{}", channel.name);
    let cluster = &channels.cluster;
    loop {
        // An edit or a removal of the channel ends the wait for the lease as well as the poll.
        let held = tokio::select! {
            held = cluster.hold(&lease) => held,
            () = channel.stop.cancelled() => false,
        };
        if !held {
            break;
        }
        let stop = channel.stop.child_token();
        let Some(listening) = platform.clone().listen(sink.clone(), state.clone(), stop.clone()) else { return };
        tokio::select! {
            () = listening => break,
            () = cluster.lost(&lease) => {
                tracing::warn!(channel = %channel.name, "this daemon lost the channel's lease: it stops polling");
                stop.cancel();
            }
        }
    }
    // Removed here: another daemon that still has the channel may poll it at once. An edited
    // channel's new listener holds the same lease, so it is kept.
    if channels.named(&channel.name).is_none() {
        cluster.give_up(&lease).await;
    }
}
