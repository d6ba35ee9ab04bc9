//! Meta tools (spec §1): find tools and load their schemas into a session.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{CallContext, Registry, Tool, ToolDef, Tools, TurnScope};
use crate::agent::Agent;
use crate::error::{Error, Result};
use crate::family::{Family, Services};
use crate::runtime::Runtime;
use crate::session::Sessions;

/// The family's part in the kernel (see [`crate::family`]).
pub const FAMILY: Family = Family::tools_only("meta", register);

/// What the meta tools reach, taken from the kernel's services when they are registered.
#[derive(Clone)]
pub struct Uses {
    /// The tool list as it is at each call (providers add and remove tools).
    tools: Arc<Tools>,
    /// The tools each session has loaded.
    sessions: Arc<Sessions>,
    /// `run_tool`'s inner call, through the pipeline.
    runtime: Runtime,
}

pub(crate) fn register(r: &mut Registry, services: &Services) {
    let uses = Uses { tools: services.need(), sessions: services.need(), runtime: services.get::<Runtime>().clone() };
    r.add(ToolSearch(uses.clone()));
    r.add(ToolLoad(uses.clone()));
    r.add(FindTools(uses.clone()));
    r.add(RunTool(uses));
}

/// Why the caller cannot load `name`: the refusal the pipeline would give a call of it (its
/// standing for the caller in this turn), or why it is not in the tool list at all.
async fn unusable(sessions: &Sessions, registry: &Registry, ctx: &CallContext, name: &str) -> Error {
    match registry.resolve(name) {
        Some(entry) => super::pipeline::standing_refusal(ctx, registry, entry)
            .unwrap_or_else(|| Error::forbidden(format!("`{name}` cannot be loaded here"))),
        None => super::pipeline::unresolved(sessions, ctx, registry, name).await,
    }
}

/// The refusal for a tool a provider removed while the daemon ran.
pub(crate) fn no_longer_available(name: &str, reason: &str) -> Error {
    Error::unavailable(format!("`{name}` is no longer available: {reason}"))
}

/// `tool_search(query)`: the agent's usable tools whose name, description or tags match.
pub struct ToolSearch(Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolSearchArgs {
    /// Words to look for in tool names, descriptions and tags.
    pub query: String,
    /// At most this many results (default 10, at most 50).
    pub limit: Option<usize>,
}

/// One hit of [`search`], best first.
pub struct SearchHit<'a> {
    pub def: &'a ToolDef,
    pub score: u32,
}

/// Ranks the tools `agent` can use against `query`: a word in the name counts most, then a
/// tag, then the description. An empty query lists every usable tool.
pub fn search<'a>(
    registry: &'a Registry,
    agent: &'a Agent,
    turn: Option<TurnScope>,
    query: &str,
    limit: usize,
) -> Vec<SearchHit<'a>> {
    let words: Vec<String> =
        query.split(|c: char| c.is_whitespace() || c == ',').filter(|w| !w.is_empty()).map(str::to_lowercase).collect();
    let mut hits: Vec<SearchHit<'a>> = registry
        .usable_by(agent, turn)
        .filter_map(|def| {
            let score = if words.is_empty() { 1 } else { words.iter().map(|w| score_word(def, w)).sum() };
            (score > 0).then_some(SearchHit { def, score })
        })
        .collect();
    hits.sort_by(|a, b| b.score.cmp(&a.score).then_with(|| a.def.name.cmp(&b.def.name)));
    hits.truncate(limit);
    hits
}

/// Whether every word of `query` appears in the tool's name, family, tags or description
/// (the Tools inspector's filter). An empty query matches everything.
pub fn matches_query(def: &ToolDef, query: &str) -> bool {
    query.split_whitespace().map(str::to_lowercase).all(|w| score_word(def, &w) > 0)
}

fn score_word(def: &ToolDef, word: &str) -> u32 {
    let mut score = 0;
    if def.name == word {
        score += 8;
    } else if def.name.contains(word) {
        score += 4;
    }
    if def.family.contains(word) || def.tags.iter().any(|t| t == word) {
        score += 3;
    }
    if def.description_lower.contains(word) {
        score += 1;
    }
    score
}

impl Tool for ToolSearch {
    type Args = ToolSearchArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "tool_search",
            "meta",
            "Find tools you may use by words in their name, description or tags. No side effects.",
        )
        .tags(&["tools", "discover", "lazy"])
        .read_only()
    }

    async fn run(&self, ctx: CallContext, args: ToolSearchArgs) -> Result<Value> {
        let limit = args.limit.unwrap_or(10).clamp(1, 50);
        let loaded = match ctx.session {
            Some(s) => self.0.sessions.loaded_tools(s).await?,
            None => Vec::new(),
        };
        let registry = self.0.tools.snapshot();
        let hits = search(&registry, &ctx.agent, Some(ctx.turn_scope()), &args.query, limit);
        let tools: Vec<Value> = hits
            .iter()
            .map(|h| {
                json!({
                    "name": h.def.name,
                    "family": h.def.family,
                    "description": h.def.description,
                    "tags": h.def.tags,
                    "loaded": loaded.contains(&h.def.name),
                })
            })
            .collect();
        Ok(json!({ "query": args.query, "tools": tools }))
    }
}

/// `tool_load(name)`: adds a tool's schema to this session; later turns can call it.
pub struct ToolLoad(Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolLoadArgs {
    /// Exact tool name, as `tool_search` returned it.
    pub name: String,
}

impl Tool for ToolLoad {
    type Args = ToolLoadArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new("tool_load", "meta", "Load a tool's full schema into this session so later turns can call it.")
            .tags(&["tools", "load", "lazy"])
            .read_only()
    }

    async fn run(&self, ctx: CallContext, args: ToolLoadArgs) -> Result<Value> {
        let session = ctx
            .session
            .ok_or_else(|| Error::unavailable("tool_load needs a session: loaded tools are remembered per session"))?;
        let registry = self.0.tools.snapshot();
        let Some(def) = registry.usable_by(&ctx.agent, Some(ctx.turn_scope())).find(|d| d.name == args.name) else {
            return Err(unusable(&self.0.sessions, &registry, &ctx, &args.name).await);
        };
        self.0.sessions.load_tool(session, &def.name).await?;
        Ok(json!({
            "loaded": def.name,
            "description": def.description,
            "parameters": def.schema,
        }))
    }
}

/// `find_tools(names)`: stable mode's way to see tools' arguments (spec §1b).
pub struct FindTools(Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FindToolsArgs {
    /// Tool names from the `Tools (call through run_tool)` line.
    pub names: Vec<String>,
}

const MAX_FIND: usize = 32;

impl Tool for FindTools {
    type Args = FindToolsArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            "find_tools",
            "meta",
            "Get the argument schemas of tools named in your context, so you can call them with run_tool.",
        )
        .tags(&["tools", "schema", "stable"])
        .read_only()
    }

    async fn run(&self, ctx: CallContext, args: FindToolsArgs) -> Result<Value> {
        if args.names.is_empty() || args.names.len() > MAX_FIND {
            return Err(Error::invalid(format!("`names` lists 1 to {MAX_FIND} tool names")));
        }
        let session = ctx.session.ok_or_else(|| Error::unavailable("find_tools needs a session"))?;
        let registry = self.0.tools.snapshot();
        let (mut tools, mut unknown, mut not_permitted) = (Vec::new(), Vec::new(), Vec::new());
        for name in &args.names {
            match registry.usable_by(&ctx.agent, Some(ctx.turn_scope())).find(|d| &d.name == name) {
                Some(def) => {
                    self.0.sessions.load_tool(session, &def.name).await?;
                    tools.push(json!({"name": def.name, "description": def.description, "parameters": def.schema}));
                }
                None if registry.get(name).is_some() => not_permitted.push(name.clone()),
                None => unknown.push(name.clone()),
            }
        }
        Ok(json!({ "tools": tools, "unknown": unknown, "not_permitted": not_permitted }))
    }
}

/// `run_tool(name, args)`: runs another tool through the whole pipeline under its own name,
/// so its grant, argument validation and audit apply to the real tool (spec §1b).
pub struct RunTool(Uses);

/// The tool that runs another by name (stable mode's way to every granted tool).
pub const RUN_TOOL: &str = "run_tool";

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunToolArgs {
    /// The tool to run.
    pub name: String,
    /// Its arguments, as find_tools described them.
    #[serde(default)]
    pub args: Value,
}

impl Tool for RunTool {
    type Args = RunToolArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(RUN_TOOL, "meta", "Run a tool named in your context with its arguments (see find_tools for them).")
            .tags(&["tools", "run", "stable"])
            // Itself it only routes: the inner call is audited under the inner tool's name, and
            // durably before run_tool returns if that tool changes state.
            .read_only()
    }

    async fn run(&self, ctx: CallContext, args: RunToolArgs) -> Result<Value> {
        let RunToolArgs { name, args } = args;
        if super::modes::is_machinery(crate::agent::ToolMode::Stable, &name) {
            return Err(Error::invalid(format!("run_tool runs other tools; call `{name}` directly")));
        }
        let session = ctx.session.ok_or_else(|| Error::unavailable("run_tool needs a session"))?;
        let uses = &self.0;
        let registry = uses.tools.snapshot();
        let mut inner = ctx;
        inner.offered = None;
        let Some((def, _)) = registry.get(&name) else {
            // The pipeline says why (no longer available, or no such tool) and audits the name.
            return Ok(uses.runtime.call_tool(inner, &name, args).await?.content);
        };
        let ctx = inner;
        let usable = registry.usable_by(&ctx.agent, Some(ctx.turn_scope())).any(|d| d.name == name);
        if usable && !uses.sessions.loaded_tools(session).await?.contains(&name) {
            // Seen now: the next run_tool of it runs.
            uses.sessions.load_tool(session, &name).await?;
            return Ok(json!({
                "not_run": true,
                "name": name,
                "description": def.description,
                "parameters": def.schema,
                "note": "This tool's arguments had not been fetched in this session, so it did not run. Call run_tool again with args that match `parameters`.",
            }));
        }
        // The inner call is a call of its own: gate, validation, spill and audit by its name.
        Ok(uses.runtime.call_tool(ctx, &name, args).await?.content)
    }
}
