//! What a tool call knows about where it comes from.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use std::collections::HashSet;

use crate::agent::{Agent, ToolMode};

/// Who started a call: the agent's own loop, or a person or script acting as the agent.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Caller {
    Agent,
    Operator(String),
    Token(String),
    /// The `kennel` command line of the daemon's own home (`kennel chat`, `kennel agent
    /// spawn`), with the token the daemon wrote to `$KENNEL_HOME/cli.token` at start.
    Cli,
    /// A turn started by a `[[trigger]]` on this event type.
    Trigger(String),
    /// A turn started by a schedule or cron job (its id).
    Schedule(String),
    /// A task sent over A2A without a token (a public agent).
    A2a(String),
    /// A message on this channel (`[channels.NAME]`): someone on a chat platform.
    Channel(String),
    /// An MCP client (named as its `initialize` named itself) using an agent's tools through
    /// Kennel's MCP server, let in as `via` (an API token, the CLI).
    Mcp {
        client: String,
        via: Box<Caller>,
    },
}

impl Caller {
    /// Whether a person is there to answer in the turns this caller starts: an operator in the
    /// dashboard's chat, or the home's owner in `kennel chat` (the CLI token is readable by
    /// them alone). API tokens, schedules, triggers, agents and A2A clients are headless.
    pub fn is_person(&self) -> bool {
        matches!(self, Caller::Operator(_) | Caller::Cli)
    }

    /// The one way a caller is named in stored records: the audit log's `caller` (beside the
    /// agent whose tool ran), and part of [`CallContext::actor`], which names who acted
    /// (`token:NAME`, `operator:NAME`, …). An agent acting in its own loop is `agent` here.
    pub fn audit_label(&self) -> String {
        match self {
            Caller::Agent => "agent".into(),
            Caller::Operator(name) => format!("operator:{name}"),
            Caller::Token(name) => format!("token:{name}"),
            Caller::Cli => "cli".into(),
            Caller::Trigger(event) => format!("trigger:{event}"),
            Caller::Schedule(id) => format!("schedule:{id}"),
            Caller::A2a(who) => format!("a2a:{who}"),
            Caller::Channel(name) => format!("channel:{name}"),
            Caller::Mcp { client, via } => format!("mcp:{client} ({})", via.audit_label()),
        }
    }
}

/// The conversation a turn is answering, when it came from a channel (spec §6).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ChannelContext {
    pub channel: String,
    pub chat_id: String,
    pub user_id: Option<String>,
    pub is_group: bool,
}

/// The context of one tool call. Cheap to clone.
#[derive(Clone)]
pub struct CallContext {
    /// The agent as it was when the call started; the gate re-reads its grants.
    pub agent: Arc<Agent>,
    pub session: Option<Uuid>,
    /// The turn this call is part of (`None` for a call made directly through the API).
    pub turn: Option<Uuid>,
    pub caller: Caller,
    /// How many blocking agent hops led here (0 for an agent's own turn).
    pub depth: u32,
    /// The agent ids along the blocking chain, for loop errors that name it.
    pub chain: Arc<[Uuid]>,
    pub channel: Option<ChannelContext>,
    /// True when no person is present to answer (API, schedule, trigger).
    pub headless: bool,
    pub cancel: CancellationToken,
    /// In a turn: the tools this model call was offered. Anything else is refused with a
    /// pointer to how the mode reaches it (`tool_load`, `run_tool`).
    pub offered: Option<Arc<Offered>>,
    /// In a turn: the untrusted sources its session has read; a result from outside adds one.
    pub provenance: Option<crate::approval::Provenance>,
    /// In a headless turn: where a call a rule holds is parked (the turn ends, and resumes when
    /// a person decides) instead of waiting in memory.
    pub parking: Option<Arc<crate::approval::Parking>>,
    /// The approval a resumed call runs under: the pipeline lets exactly that call through.
    pub approved: Option<Uuid>,
}

/// The tool names one model call was offered, and in which mode.
#[derive(Debug, Clone)]
pub struct Offered {
    pub mode: ToolMode,
    pub names: HashSet<String>,
}

impl CallContext {
    /// A context for a call made directly as `agent`, outside any chain.
    pub fn new(agent: Arc<Agent>, caller: Caller) -> CallContext {
        let chain: Arc<[Uuid]> = Arc::from(vec![agent.id]);
        CallContext {
            agent,
            session: None,
            turn: None,
            caller,
            depth: 0,
            chain,
            channel: None,
            headless: true,
            cancel: CancellationToken::new(),
            offered: None,
            provenance: None,
            parking: None,
            approved: None,
        }
    }

    /// A call an operator makes by hand as `agent` (the dashboard's "try it") and waits for:
    /// a person is present, so tools that ask one are offered. Calls through the API stay
    /// headless whoever's token made them: nobody is known to be watching.
    pub fn by_operator(agent: Arc<Agent>, operator: &str) -> CallContext {
        let caller = Caller::Operator(operator.to_string());
        CallContext { headless: !caller.is_person(), ..CallContext::new(agent, caller) }
    }

    pub fn with_session(mut self, session: Option<Uuid>) -> CallContext {
        self.session = session;
        self
    }

    /// Who acts in this call, as records name them (who posted a task, created a schedule,
    /// published an event). In a turn the model chose the call, so the agent acted:
    /// `agent:NAME`, and `agent:NAME for operator:ada` when someone else's message started the
    /// turn. Outside a turn (an operator's "try it", a call through the API) the caller
    /// acted: [`Caller::audit_label`] (`operator:ada`, `token:deploy`, `cli`).
    pub fn actor(&self) -> String {
        let agent = || format!("agent:{}", self.agent.name);
        match (&self.caller, self.turn) {
            (Caller::Agent, _) => agent(),
            (caller, Some(_)) => format!("{} for {}", agent(), caller.audit_label()),
            (caller, None) => caller.audit_label(),
        }
    }

    /// What this call's turn offers tools beyond grants: a person, a channel conversation.
    pub fn turn_scope(&self) -> super::TurnScope {
        super::TurnScope { person: !self.headless, conversation: self.channel.is_some() }
    }
}
