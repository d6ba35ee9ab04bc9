//! The three layers that decide whether a granted tool can be used (spec §0.8), each with a
//! reason the Tools inspector shows:
//!
//! - **daemon**: a prerequisite of this daemon — a config section, a provider, a binary on
//!   `PATH` ([`Needs`], decided once at registration);
//! - **agent**: the family's condition on one agent (memory scopes) — [`super::Tool::excluded_for`];
//! - **turn**: what a kind of turn lacks — a person to answer, a conversation to answer in
//!   ([`TurnScope`]).
//!
//! # Design notes
//!
//! ## Availability (spec §0.8): three layers, one answer
//!
//! `Registry::decide(entry, agent, turn)` (its owned form `standing`) answers, in this order:
//! 1. **daemon layer** — the tool's `Availability` from registration (`Needs`: a config section, a
//!    binary on `PATH`): `Excluded { layer: daemon, reason }`;
//! 2. **grants** — a built-in grant (`read_artifact`) allows whatever `deny` says; else a `deny`
//!    match is `Denied`; else a grant allows (`Allowed { grant }`); else the tool mode's
//!    machinery is allowed without a grant (the grant shown is `tool_mode = "…"`); else
//!    `NotGranted`;
//! 3. **agent layer** — `Tool::excluded_for(&Agent)` (memory scopes):
//!    `Excluded { layer: agent, reason }`;
//! 4. **turn layer** — given a `TurnScope` (a person present, a channel conversation):
//!    `needs_person` tools are left out of headless turns (API, schedules, triggers),
//!    `needs_conversation` ones out of out-of-band turns: `Excluded { layer: turn, reason }`.
//!
//! The pipeline maps the answer to its error (daemon and turn: `Unavailable`; agent and grants:
//! `Forbidden`). The gate and `usable_by` (every tool on every model call) read the same decision
//! borrowed (`Registry::decide` → `Standing<'_>`); `standing` is its owned form for the API. Outside a turn (`GET /api/agents/{id}/tools`, the inspector), the turn layer is
//! shown as `left_out_of` ("turns without a person present …").
//!
//! **Tools that come and go.** The registry the kernel holds is `Tools`: a snapshot
//! (`Arc<Registry>`) behind a lock, swapped whole by `Tools::provide(provider, tools, reason)`
//! when a dynamic provider (an MCP server, the script folder: see `crate::mcp` and `crate::script`) connects,
//! changes its list or goes away. A call resolves its tool in the snapshot it started with. A
//! tool a provider removed is remembered with the reason, and a session that loaded a tool the
//! daemon no longer knows (after a restart) is told the same: `Unavailable: \`x\` is no longer
//! available: …`, never "no such tool". Tested in `tool/availability.rs` with test tools provided
//! through the real registry and pipeline.
//!
//! ## A family's conditions
//!
//! A family's daemon prerequisite is a `Needs` given to `Registry::add_needing(tool, &needs)`:
//! media's is `Needs::binary("ffmpeg", media.ffmpeg.as_deref()).and(Needs::binary("ffprobe", …))`;
//! the browser's is `Needs::section(false, "browser")` without its section, else
//! `Needs::unless(find_executable(…).err())`. Its condition on an agent is
//! `Tool::excluded_for(&Agent)`; a condition on the call's context is `Tool::gate` (it runs
//! before the arguments are read); a condition on an argument (a container in `[exec_policy]
//! docker_allowlist`, a command in `allowed_commands`) is the first thing the tool's `run`
//! checks, before anything is touched, and refuses with `Forbidden` as the gate would (audited
//! the same way). A tool that needs a person is `ToolDef::needs_person()`, one that answers in
//! the turn's channel conversation `needs_conversation()`.

use std::path::Path;

use serde::Serialize;
use utoipa::ToSchema;

use super::ToolDef;

/// Which layer left a tool out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Layer {
    Daemon,
    Agent,
    Turn,
}

impl Layer {
    pub fn as_str(self) -> &'static str {
        match self {
            Layer::Daemon => "daemon",
            Layer::Agent => "agent",
            Layer::Turn => "turn",
        }
    }
}

/// What a family needs from the daemon, or the first thing missing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Needs {
    missing: Option<String>,
}

impl Needs {
    /// No prerequisite.
    pub fn nothing() -> Needs {
        Needs::default()
    }

    /// A `[section]` of `config.toml`.
    pub fn section(present: bool, section: &str) -> Needs {
        Needs { missing: (!present).then(|| format!("[{section}] is not configured in config.toml")) }
    }

    /// A switch of `config.toml` that turns the family off: `why` when it is off.
    pub fn switched_on(on: bool, why: &str) -> Needs {
        Needs { missing: (!on).then(|| why.to_string()) }
    }

    /// A program found on `PATH` (or at `configured`, when the config names one).
    pub fn binary(name: &str, configured: Option<&Path>) -> Needs {
        let found = match configured {
            Some(path) => path.is_file(),
            None => find_on_path(name).is_some(),
        };
        let missing = match configured {
            Some(path) => format!("`{}` does not exist", path.display()),
            None => format!("`{name}` was not found on PATH"),
        };
        Needs { missing: (!found).then_some(missing) }
    }

    /// Missing for `reason`, if there is one (a provider no config line names, …).
    pub fn unless(reason: Option<String>) -> Needs {
        Needs { missing: reason }
    }

    /// Both: the first thing missing is the reason.
    pub fn and(self, other: Needs) -> Needs {
        Needs { missing: self.missing.or(other.missing) }
    }

    pub fn missing(&self) -> Option<&str> {
        self.missing.as_deref()
    }
}

/// The first executable file called `name` in a directory of `PATH`.
pub fn find_on_path(name: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(name)).find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        path.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        path.is_file()
    }
}

/// What one turn (or a call made outside any turn) can give a tool beyond the agent's grants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnScope {
    /// A person is there to answer (the dashboard's chat); not in API, schedule or trigger turns.
    pub person: bool,
    /// The turn answers a conversation on a channel; out-of-band turns (cron, trigger, API)
    /// have none.
    pub conversation: bool,
}

impl TurnScope {
    /// Why this kind of turn leaves `def` out, if it does.
    pub fn leaves_out(self, def: &ToolDef) -> Option<&'static str> {
        if def.needs_person && !self.person {
            Some("it needs a person to answer and this turn has none")
        } else if def.needs_conversation && !self.conversation {
            Some("it answers in a channel conversation and this turn has none (cron, trigger and API turns)")
        } else {
            None
        }
    }

    /// The kinds of turn that leave `def` out, for lists shown outside a turn.
    pub fn left_out_of(def: &ToolDef) -> Option<String> {
        match (def.needs_person, def.needs_conversation) {
            (false, false) => None,
            (true, false) => Some("turns without a person present (API, schedules, triggers)".into()),
            (false, true) => Some("turns outside a channel conversation (API, schedules, triggers)".into()),
            (true, true) => Some("turns without a person in a channel conversation".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    //! Each layer proved through the real path: the registry's standing, the offer a turn
    //! sends the model, `GET /api/agents/{id}/tools`'s effective set, and the pipeline's gate.

    use std::sync::Arc;

    use serde_json::{Value, json};

    use super::*;
    use crate::Kernel;
    use crate::agent::{Agent, ManifestInput, SpawnRequest};
    use crate::config::Config;
    use crate::error::{ErrorKind, Result};
    use crate::tool::modes::offer;
    use crate::tool::{CallContext, Caller, ChannelContext, NoArgs, Provided, Tool, ToolStatus};

    /// A tool built for these tests: its def is given, its run echoes.
    struct Probe(fn() -> ToolDef, Option<fn(&Agent) -> Option<String>>);

    impl Tool for Probe {
        type Args = NoArgs;
        fn def(&self) -> ToolDef {
            (self.0)()
        }
        fn excluded_for(&self, agent: &Agent) -> Option<String> {
            self.1.and_then(|f| f(agent))
        }
        async fn run(&self, _: CallContext, _: NoArgs) -> Result<Value> {
            Ok(json!("ran"))
        }
    }

    fn probe(name: &'static str) -> ToolDef {
        ToolDef::new(name, "probe", "a test tool").read_only()
    }

    async fn kernel_with(
        tools: Vec<Provided>,
        grants: &[&str],
        memory_read: Option<Vec<&str>>,
    ) -> (tempfile::TempDir, Kernel, Arc<Agent>) {
        let dir = tempfile::tempdir().unwrap();
        let kernel = Kernel::open_with(dir.path(), Config::default()).await.unwrap();
        kernel.tool_list().provide("probes", tools, "the probes went away");
        let manifest = json!({"name": "prober", "capabilities": {"tools": grants, "memory_read": memory_read}});
        kernel.agents().create_type(crate::error::from_value::<ManifestInput>(manifest).unwrap()).await.unwrap();
        let agent =
            kernel.spawn_agent(SpawnRequest { agent_type: "prober".into(), ..Default::default() }).await.unwrap();
        (dir, kernel, agent)
    }

    const API_TURN: TurnScope = TurnScope { person: false, conversation: false };

    fn standing(kernel: &Kernel, agent: &Agent, name: &str) -> ToolStatus {
        kernel.tools().effective(agent).into_iter().find(|t| t.name == name).unwrap().status
    }

    fn offered(kernel: &Kernel, agent: &Agent, turn: TurnScope) -> Vec<String> {
        offer(&kernel.tools(), agent, &[], turn).specs.into_iter().map(|s| s.name).collect()
    }

    async fn call(kernel: &Kernel, agent: &Arc<Agent>, name: &str, turn: TurnScope) -> Result<Value> {
        let mut ctx = CallContext::new(agent.clone(), Caller::Agent);
        ctx.headless = !turn.person;
        ctx.channel = turn.conversation.then(|| ChannelContext {
            channel: "chat".into(),
            chat_id: "1".into(),
            user_id: None,
            is_group: false,
        });
        kernel.call_tool(ctx, name, json!({})).await.map(|out| out.content)
    }

    #[tokio::test]
    async fn the_daemon_layer_excludes_a_tool_whose_prerequisite_is_missing() {
        let tools = vec![
            Provided::typed(Probe(|| probe("needs_browser"), None), &Needs::section(false, "browser")),
            Provided::typed(Probe(|| probe("needs_binary"), None), &Needs::binary("no-such-binary-kennel", None)),
            Provided::typed(Probe(|| probe("has_sh"), None), &Needs::binary("sh", None)),
        ];
        let (_dir, kernel, agent) = kernel_with(tools, &["probe.*"], None).await;
        assert_eq!(
            standing(&kernel, &agent, "needs_browser"),
            ToolStatus::Excluded { layer: Layer::Daemon, reason: "[browser] is not configured in config.toml".into() }
        );
        assert_eq!(
            standing(&kernel, &agent, "needs_binary"),
            ToolStatus::Excluded {
                layer: Layer::Daemon,
                reason: "`no-such-binary-kennel` was not found on PATH".into()
            }
        );
        assert!(standing(&kernel, &agent, "has_sh").is_allowed());
        let names = offered(&kernel, &agent, API_TURN);
        assert!(names.contains(&"has_sh".into()) && !names.contains(&"needs_browser".into()), "{names:?}");
        let e = call(&kernel, &agent, "needs_browser", API_TURN).await.unwrap_err();
        assert_eq!(e.kind, ErrorKind::Unavailable);
        assert!(e.message.contains("[browser] is not configured"), "{e}");
    }

    #[tokio::test]
    async fn the_agent_layer_excludes_a_tool_for_one_agent_and_not_another() {
        fn needs_kv_scope(agent: &Agent) -> Option<String> {
            let scopes = agent.manifest.capabilities.memory_read.as_ref()?;
            (!scopes.iter().any(|s| s.covers_store("kv"))).then(|| "its memory_read scopes do not reach kv".into())
        }
        let tool = || vec![Provided::typed(Probe(|| probe("scoped"), Some(needs_kv_scope)), &Needs::nothing())];
        let (_dir, kernel, narrow) = kernel_with(tool(), &["scoped"], Some(vec!["semantic:notes*"])).await;
        assert_eq!(
            standing(&kernel, &narrow, "scoped"),
            ToolStatus::Excluded { layer: Layer::Agent, reason: "its memory_read scopes do not reach kv".into() }
        );
        assert!(!offered(&kernel, &narrow, API_TURN).contains(&"scoped".into()));
        let e = call(&kernel, &narrow, "scoped", API_TURN).await.unwrap_err();
        assert_eq!(e.kind, ErrorKind::Forbidden, "{e}");
        assert!(e.message.contains("memory_read scopes"), "{e}");

        let (_dir, kernel, open) = kernel_with(tool(), &["scoped"], Some(vec!["kv:*"])).await;
        assert!(standing(&kernel, &open, "scoped").is_allowed());
        assert_eq!(call(&kernel, &open, "scoped", API_TURN).await.unwrap(), json!("ran"));
    }

    #[tokio::test]
    async fn the_turn_layer_leaves_out_what_a_turn_lacks() {
        let tools = vec![
            Provided::typed(Probe(|| probe("asks").needs_person(), None), &Needs::nothing()),
            Provided::typed(Probe(|| probe("replies_privately").needs_conversation(), None), &Needs::nothing()),
        ];
        let (_dir, kernel, agent) = kernel_with(tools, &["probe.*"], None).await;
        let effective = kernel.tools().effective(&agent);
        let asks = effective.iter().find(|t| t.name == "asks").unwrap();
        assert!(asks.status.is_allowed() && asks.left_out_of.as_deref().unwrap().contains("without a person"));

        let chat = TurnScope { person: true, conversation: true };
        let (names, headless) = (offered(&kernel, &agent, chat), offered(&kernel, &agent, API_TURN));
        for tool in ["asks", "replies_privately"] {
            assert!(names.contains(&tool.into()) && !headless.contains(&tool.into()), "{tool}");
            assert_eq!(call(&kernel, &agent, tool, chat).await.unwrap(), json!("ran"));
            let e = call(&kernel, &agent, tool, API_TURN).await.unwrap_err();
            assert_eq!(e.kind, ErrorKind::Unavailable, "{tool}: {e}");
        }
        let e = call(&kernel, &agent, "replies_privately", TurnScope { person: true, conversation: false }).await;
        assert!(e.unwrap_err().message.contains("channel conversation"));
    }

    #[tokio::test]
    async fn a_loaded_tool_that_its_provider_removed_is_no_longer_available() {
        let tools = vec![Provided::typed(Probe(|| probe("mcp__demo__echo"), None), &Needs::nothing())];
        let (_dir, kernel, agent) = kernel_with(tools, &["mcp__demo__*", "tool_load"], None).await;
        let session = kernel.sessions().create(agent.id, None).await.unwrap().id;
        let ctx = CallContext::new(agent.clone(), Caller::Agent).with_session(Some(session));
        kernel.call_tool(ctx.clone(), "tool_load", json!({"name": "mcp__demo__echo"})).await.unwrap();
        assert_eq!(kernel.call_tool(ctx.clone(), "mcp__demo__echo", json!({})).await.unwrap().content, json!("ran"));

        kernel.tool_list().provide("probes", Vec::new(), "the MCP server `demo` disconnected");
        for e in [
            kernel.call_tool(ctx.clone(), "mcp__demo__echo", json!({})).await.unwrap_err(),
            kernel.call_tool(ctx.clone(), "tool_load", json!({"name": "mcp__demo__echo"})).await.unwrap_err(),
        ] {
            assert_eq!(e.kind, ErrorKind::Unavailable, "{e}");
            assert_eq!(e.message, "`mcp__demo__echo` is no longer available: the MCP server `demo` disconnected");
        }
        // A tool this session loaded that the daemon no longer knows at all (a restart since):
        // still "no longer available", not "no such tool".
        let (_dir2, fresh, other) = kernel_with(Vec::new(), &["*"], None).await;
        let s = fresh.sessions().create(other.id, None).await.unwrap().id;
        fresh.sessions().load_tool(s, "mcp__demo__echo").await.unwrap();
        let ctx = CallContext::new(other, Caller::Agent).with_session(Some(s));
        let e = fresh.call_tool(ctx.clone(), "mcp__demo__echo", json!({})).await.unwrap_err();
        assert_eq!(e.kind, ErrorKind::Unavailable, "{e}");
        let through_run_tool = fresh.call_tool(ctx, "run_tool", json!({"name": "mcp__demo__echo"})).await;
        assert_eq!(through_run_tool.unwrap_err().kind, ErrorKind::Unavailable, "run_tool says the same");
        let never = fresh.call_tool(CallContext::new(agent.clone(), Caller::Agent), "nope", json!({}));
        assert_eq!(never.await.unwrap_err().kind, ErrorKind::NotFound);
    }

    /// A provider cannot hand its tools the built-in grant `read_artifact` has.
    #[tokio::test]
    async fn a_provided_tool_never_goes_ungranted() {
        let tools = vec![Provided::typed(Probe(|| probe("mcp__x__sneaky").built_in_grant(), None), &Needs::nothing())];
        let (_dir, kernel, agent) = kernel_with(tools, &["system_time"], None).await;
        assert_eq!(standing(&kernel, &agent, "mcp__x__sneaky"), ToolStatus::NotGranted);
        assert!(!offered(&kernel, &agent, API_TURN).contains(&"mcp__x__sneaky".into()));
    }
}
