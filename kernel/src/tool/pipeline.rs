//! The one call path (spec §0): resolve → gate → validate → depth → run → spill → audit.
//! The agent loop, the REST "invoke" endpoint and the dashboard all call [`call`]; nothing
//! runs a tool any other way.
//!
//! # Design notes
//!
//! ## The pipeline
//!
//! 1. **resolve** the name in the tool list as it is now → `NotFound` (pointing at
//!    `tool_search`), or `Unavailable` "no longer available" for a tool a provider removed or
//!    this session loaded once.
//! 2. **gate**: the agent's *current* record is re-read (a revoke applies to the next call);
//!    stopped agent → `Conflict` (409: its state does not allow the call); then the tool's
//!    standing (`super::availability`): excluded on this daemon → `Unavailable`; `deny` match → `Forbidden`; no
//!    grant → `Forbidden` (naming the CLI command that would grant it); excluded for this agent →
//!    `Forbidden`; excluded in this turn → `Unavailable`; then the tool's own `gate`.
//! 3. **validate**: the JSON arguments are deserialised into the tool's argument type
//!    (`deny_unknown_fields`); failure → `InvalidArguments` with the JSON path. Nothing has run.
//! 4. **depth**: `ctx.depth` above `[kernel] max_agent_call_depth` → `ResourceExhausted`
//!    (`turn::depth::check`, the same check and wording as `agent_send`, workflow steps and
//!    triggers: "refused: … would run N agent calls deep, over … (chain: a → b → a)").
//!    After the depth check (4), **approve** (`crate::approval`), for calls in a turn: one that would send a
//!    secret out of the daemon is refused (`Forbidden`, naming the rule); one an
//!    `[approvals]` rule holds waits for a person's decision (denied or timed out →
//!    `Forbidden` the model can act on). A call no rule covers pays one scan of the rules'
//!    tool globs.
//! 5. **run**, raced against the call's cancellation token; a result from outside (`browser_*`,
//!    `mcp__*`, `a2a_*`) labels the turn's provenance.
//! 6. **spill**: a result whose text exceeds `[tool_results] spill_threshold_bytes` is stored in
//!    the artifact store, recorded as the calling agent's; the caller gets `{spilled,
//!    artifact_id, size_bytes, preview, note}`. `read_artifact` pages it back by byte offset (its
//!    own results never spill). **Decision:** `read_artifact` has a built-in grant: every agent
//!    may call it whatever its grants (a `deny` included) and it is offered in every tool mode,
//!    so a spill placeholder never points at a tool the agent cannot call; it reads only the
//!    caller's own artifacts (another agent's is `NotFound`, worded like a missing one). The
//!    store stays content-addressed and shared: the same bytes are one file, owned by each agent
//!    that spilled them. Results spilled before ownership existed were given to the agents the
//!    audit log names.
//! 7. **audit**: every call, any outcome: agent, session, caller, tool, a SHA-256 prefix of the
//!    arguments (never the arguments: they may hold secrets), outcome, message, duration,
//!    artifact id. One writer task inserts queued entries in batches, one transaction each, and
//!    `AuditLog::list` flushes the queue first, so a read after a call always sees it.
//!    **A call that changes state is answered only after its audit row is committed**
//!    (`AuditLog::record_durably`: the entry goes to the writer with a oneshot that fires when
//!    its batch commits; concurrent calls share a commit). A commit in WAL mode with
//!    `synchronous = NORMAL` survives the process being killed (`kill -9`), which is what we
//!    promise; it is not fsynced, so a power cut may still lose the last commits. Read-only
//!    tools (`ToolDef::read_only()`) keep the fire-and-forget queue: a kill may lose their last
//!    rows. **Decision:** tools change state unless declared read-only, so a forgotten mark
//!    costs latency, never a record. Read-only today: `system_time`, `read_artifact`,
//!    `tool_search`, `tool_load`, `find_tools` (they only note in the session which tools were
//!    seen), `run_tool` (it routes; the inner call is audited by its own name, durably if that
//!    tool changes state), `agent_list`, `agent_find`, `task_list`, `task_status`,
//!    `schedule_list`, `cron_list`, `knowledge_query`, `memory_recall`, `memory_list`,
//!    `memory_semantic_stats` and `memory_semantic_search` (a search refreshes the hits'
//!    access times, bookkeeping written off the call's path like the meter's rows, not a change
//!    the audit must vouch for), `browser_wait` and `browser_read_page` (they look at a page the
//!    agent already opened; the navigation that opened it is audited durably), `process_list` and
//!    `process_poll` (a poll only moves the agent's own read cursor), `read_file` and
//!    `find_files` (they read the agent's workspace), `skill_read_file`, `channel_members` (a
//!    roster read), `location_get`. Everything else —
//!    `a2a_discover` (it stores the remote's
//!    card, and a model-chosen outbound fetch is the call whose record matters most), `agent_send`, `agent_spawn`, `agent_kill`, `goal_update`,
//!    `agent_type_create`, `event_publish`, `workflow_run`, `a2a_send`, `task_post`/`claim`/
//!    `complete`, the schedule and cron writers — is durable. An unknown tool's refusal is
//!    queued. Should the row fail to commit, the call answers `Internal` (500, a fault of the
//!    daemon): the log, under the ref, says the call ran but its record could not be written. Costs: `docs/BENCHMARKS.md`, *Tool call pipeline*.

use std::time::Instant;

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::audit::AuditEntry;
use super::registry::{Entry, Standing};
use super::{CallContext, Layer, Registry};
use crate::Kernel;
use crate::agent::ToolMode;
use crate::approval::{Approvals, Label};
use crate::artifact::ArtifactStore;
use crate::error::{Error, Result};
pub use crate::runtime::CallOutput;
use crate::session::Sessions;

/// How many characters of a spilled result the placeholder previews.
const PREVIEW_CHARS: usize = 1024;

/// Runs one tool call through every step of the pipeline and records it in the audit log,
/// whatever the outcome. A call of a tool that changes state (not [`ToolDef::read_only`]) is
/// answered only once its audit record is committed.
pub(crate) async fn call(kernel: &Kernel, ctx: CallContext, name: &str, args: Value) -> Result<CallOutput> {
    let started = Instant::now();
    let digest = args_digest(&args);
    let (agent_id, session, caller) = (ctx.agent.id, ctx.session, ctx.caller.audit_label());

    // 1. resolve, in the tool list as it is now; this call keeps that snapshot.
    let registry = kernel.tools();
    let entry = registry.resolve(name);
    let durable = entry.is_some_and(|e| !e.def.read_only);
    let resolved = entry.is_some();
    let result = match entry {
        Some(entry) => run_steps(kernel, ctx, &registry, entry, args, started).await,
        None => Err(unresolved(kernel.sessions(), &ctx, &registry, name).await),
    };

    // 7. audit
    let duration_us = started.elapsed().as_micros() as u64;
    let (outcome, message, artifact_id) = match &result {
        Ok(out) => ("ok", None, out.artifact_id.clone()),
        Err(e) => (e.kind.as_str(), Some(e.message.clone()), None),
    };
    // A name no tool has is `unknown`: a caller cannot grow the series with made-up names.
    crate::metrics::metrics().tool_called(if resolved { name } else { "unknown" }, outcome, duration_us);
    let audit_entry = AuditEntry {
        agent_id,
        session_id: session,
        caller,
        tool: name.to_string(),
        args_digest: digest,
        outcome,
        message,
        duration_us,
        artifact_id,
    };
    if !durable {
        kernel.audit().record(audit_entry);
        return result;
    }
    kernel.audit().record_durably(audit_entry).await?;
    result
}

/// Why `name` is not in the tool list: a provider removed it (or this session loaded it once,
/// so it existed), or there never was such a tool.
pub(crate) async fn unresolved(sessions: &Sessions, ctx: &CallContext, registry: &Registry, name: &str) -> Error {
    if let Some(reason) = registry.gone(name) {
        return super::meta::no_longer_available(name, reason);
    }
    if let Some(session) = ctx.session
        && sessions.loaded_tools(session).await.is_ok_and(|loaded| loaded.iter().any(|t| t == name))
    {
        return super::meta::no_longer_available(name, "this session loaded it, but this daemon offers it no more");
    }
    Error::not_found(format!("no tool named `{name}`; tool_search finds tools by name, description or tag"))
}

async fn run_steps(
    kernel: &Kernel,
    mut ctx: CallContext,
    registry: &Registry,
    entry: &Entry,
    args: Value,
    started: Instant,
) -> Result<CallOutput> {
    let name = entry.def.name.as_str();

    // 2. gate: the agent's current grants (a revoke applies to the very next call), then the
    //    tool's standing for it in this turn (every layer), then the family's own condition.
    if let Some(current) = kernel.agents().get_by_id(ctx.agent.id) {
        ctx.agent = current;
    }
    gate(&ctx, registry, entry)?;
    entry.tool.gate(&ctx)?;
    if let Some(offered) = &ctx.offered
        && !offered.names.contains(name)
    {
        return Err(not_offered(offered.mode, name));
    }

    // 3. validate: the typed arguments are parsed here; nothing has run yet. The arguments
    //    are kept only for a call a person may have to approve, or that sends them out.
    let approvals = kernel.service::<Approvals>();
    let kept = approvals.may_hold(&ctx, name).then(|| args.clone());
    let prepared = entry.tool.clone().prepare(args)?;

    // 4. depth, before a person is asked about a call that would be refused anyway
    crate::turn::depth::check(kernel, ctx.depth, &ctx.chain, || format!("calling `{name}`"))?;

    // then approve: a call a model chose that sends a secret out is refused; one a rule holds
    // waits for a person's decision.
    if let Some(args) = &kept {
        approvals.clear(&ctx, name, args).await?;
    }

    // 5. run, unless the turn was cancelled meanwhile
    let cancel = ctx.cancel.clone();
    let agent = ctx.agent.id;
    let provenance = ctx.provenance.clone();
    let value = tokio::select! {
        biased;
        _ = cancel.cancelled() => return Err(Error::failed("cancelled: the agent's turn was stopped")),
        value = prepared(ctx) => value,
    };
    // What came from outside is in the model's context from now on, an error's text included
    // (an MCP server's `isError` result, a page quoted in a browser error).
    if let (Some(provenance), Some(label)) = (provenance, Label::of_result(name, &entry.def.family)) {
        provenance.add(label);
    }
    let value = value?;

    // 6. spill
    let threshold = kernel.config().tool_results.spill_threshold_bytes as usize;
    let (content, artifact_id) =
        if entry.def.never_spill { (value, None) } else { spill(kernel, agent, value, threshold).await? };
    Ok(CallOutput { content, artifact_id, duration_us: started.elapsed().as_micros() as u64 })
}

/// The tool's standing for the caller in this turn ([`Registry::standing`]) as the error a
/// refused call gets.
fn gate(ctx: &CallContext, registry: &Registry, entry: &Entry) -> Result<()> {
    ctx.agent.ensure_running()?;
    standing_refusal(ctx, registry, entry).map_or(Ok(()), Err)
}

/// Why the caller may not use this tool in this turn, if it may not: the one mapping from a
/// standing to an error, for the gate and for the meta tools that load or run other tools.
pub(crate) fn standing_refusal(ctx: &CallContext, registry: &Registry, entry: &Entry) -> Option<Error> {
    let (agent, def) = (&ctx.agent, &entry.def);
    Some(match registry.decide(entry, agent, Some(ctx.turn_scope())) {
        Standing::Allowed(_) => return None,
        Standing::Denied(grant) => {
            Error::forbidden(format!("`{}` is denied to agent `{}` by `{grant}`", def.name, agent.name))
        }
        Standing::NotGranted => Error::forbidden(format!(
            "agent `{}` has no grant for `{}` (family `{}`); an operator can add one: kennel agent grant {} {}",
            agent.name, def.name, def.family, agent.name, def.name
        )),
        Standing::Excluded(Layer::Daemon, reason) => {
            Error::unavailable(format!("`{}` is not available on this daemon: {reason}", def.name))
        }
        Standing::Excluded(Layer::Agent, reason) => {
            Error::forbidden(format!("`{}` is not available to agent `{}`: {reason}", def.name, agent.name))
        }
        Standing::Excluded(Layer::Turn, reason) => {
            Error::unavailable(format!("`{}` is not available in this turn: {reason}", def.name))
        }
    })
}

/// Why a usable tool that this model call was not offered is refused, and what to do instead.
fn not_offered(mode: ToolMode, name: &str) -> Error {
    Error::forbidden(match mode {
        ToolMode::Stable => format!(
            "`{name}` is not called directly in stable tool mode: call run_tool(name=\"{name}\", args={{…}}); find_tools(names=[\"{name}\"]) shows its arguments"
        ),
        ToolMode::Lazy => format!("`{name}` is not loaded in this session: call tool_load(name=\"{name}\") first"),
        ToolMode::All => format!("`{name}` was not offered in this turn"),
    })
}

/// The text a result occupies in the model's context: strings as they are, the rest as JSON.
pub fn result_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

async fn spill(kernel: &Kernel, agent: uuid::Uuid, value: Value, threshold: usize) -> Result<(Value, Option<String>)> {
    let text = result_text(&value);
    if text.len() <= threshold {
        return Ok((value, None));
    }
    let id = kernel.service::<ArtifactStore>().put_for(agent, text.as_bytes()).await?;
    let preview: String = text.chars().take(PREVIEW_CHARS).collect();
    let placeholder = serde_json::json!({
        "spilled": true,
        "artifact_id": id,
        "size_bytes": text.len(),
        "preview": preview,
        "note": "The full result is in the artifact store: read it with read_artifact(artifact_id, offset, length).",
    });
    Ok((placeholder, Some(id)))
}

/// A short fingerprint of the arguments for the audit log (the arguments themselves may hold
/// secrets or personal data, so they are not stored).
pub fn args_digest(args: &Value) -> String {
    let hash = Sha256::digest(args.to_string().as_bytes());
    hex::encode(&hash[..8])
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::Kernel;
    use crate::agent::{AgentTypeSpec, ManifestInput, SpawnRequest};
    use crate::config::Config;
    use crate::tool::{CallContext, Caller};

    async fn audit_rows(kernel: &Kernel, tool: &str) -> i64 {
        // Straight from the table: `AuditLog::list` would flush the queue first.
        crate::db::query_scalar("SELECT count(*) FROM audit WHERE tool = $1")
            .bind(tool)
            .fetch_one(kernel.db())
            .await
            .unwrap()
    }

    /// The split documented in ARCHITECTURE.md (pipeline step 7); a new read-only mark is a
    /// decision, so it shows up here.
    #[tokio::test]
    async fn only_these_built_in_tools_skip_the_durable_audit() {
        let registry = crate::family::builtin_registry(Config::default()).await;
        let read_only: Vec<&str> = registry.all().filter(|(d, _)| d.read_only).map(|(d, _)| d.name.as_str()).collect();
        assert_eq!(
            read_only,
            [
                "system_time",
                "read_artifact",
                "tool_search",
                "tool_load",
                "find_tools",
                "run_tool",
                "memory_recall",
                "memory_list",
                "memory_semantic_search",
                "memory_semantic_stats",
                "agent_list",
                "agent_find",
                "task_list",
                "task_status",
                "schedule_list",
                "cron_list",
                "knowledge_query",
                "browser_wait",
                "browser_read_page",
                "process_list",
                "process_poll",
                "read_file",
                "find_files",
                "skill_read_file",
                "channel_members",
                "location_get",
            ]
        );
    }

    #[tokio::test]
    async fn a_state_changing_call_returns_only_once_its_audit_row_is_committed() {
        let dir = tempfile::tempdir().unwrap();
        let kernel = Kernel::open_with(dir.path(), Config::default()).await.unwrap();
        let spec = AgentTypeSpec { name: "poster".into(), tools: Some(vec!["task_post".into()]), ..Default::default() };
        kernel.agents().create_type(ManifestInput::from(spec)).await.unwrap();
        let agent =
            kernel.spawn_agent(SpawnRequest { agent_type: "poster".into(), ..Default::default() }).await.unwrap();
        assert!(!kernel.tools().get("task_post").unwrap().0.read_only);
        for i in 1..=50 {
            let ctx = CallContext::new(agent.clone(), Caller::Agent);
            kernel.call_tool(ctx, "task_post", json!({"title": format!("t{i}"), "body": ""})).await.unwrap();
            assert_eq!(audit_rows(&kernel, "task_post").await, i, "call {i} was answered before its row was written");
        }
        kernel.close().await;
    }
}
