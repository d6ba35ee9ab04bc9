//! The machinery every tool goes through: the [`Tool`] trait, the [`Registry`], and the one
//! call [`pipeline`] (resolve → gate → validate → depth → run → spill → audit).
//!
//! A tool is one type with a typed argument struct. The JSON Schema the model sees is derived
//! from that struct, and the same struct is what the call deserialises, so schema and
//! validation cannot drift apart.
//!
//! # Design notes
//!
//! ## Layout
//!
//! `mod.rs`: `Tool` trait, `ToolDef` (with `origin` for dynamic tools), `schema_for`.
//! `dynamic.rs`: tools whose schema is data (`ArgSchema`: arguments checked by `jsonschema` before
//! anything runs, each problem at its path; `DynamicRun`; `Provided::dynamic`). `registry.rs`:
//! `Registry` (one snapshot of every tool; `standing`, `effective`, `usable_by`, pages), `Tools`
//! (the live list that dynamic providers change). `availability.rs`: the three layers
//! (`Needs`, `TurnScope`, `Layer`). `pipeline.rs`: the call path. `context.rs`: `CallContext`
//! (agent, session, caller, depth and chain, channel context, headless flag, cancel token;
//! `actor`, `turn_scope`), `Caller::audit_label`. `audit/`: the audit log and its store.
//! `meta.rs`: family `meta` (`tool_search`, `tool_load`, `find_tools`, `run_tool`). `modes.rs`:
//! what each tool mode offers the model.

pub mod audit;
pub mod availability;
pub(crate) mod config;
mod context;
pub mod dynamic;
pub mod form;
pub mod meta;
pub mod modes;
pub mod pipeline;
mod registry;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

pub use availability::{Layer, Needs, TurnScope};
pub use config::ToolResultsConfig;
pub use context::{CallContext, Caller, ChannelContext, Offered};
pub use registry::{Availability, BUILT_IN_GRANT, EffectiveTool, GrantPreview, Provided, Registry, ToolStatus, Tools};

use crate::error::{Result, from_value};

/// What the registry, the REST API and the dashboard know about a tool.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ToolDef {
    pub name: String,
    pub family: String,
    pub description: String,
    pub tags: Vec<String>,
    /// JSON Schema of the arguments, derived from the argument type.
    /// Shared, so each turn's offer points at it instead of copying it.
    #[schema(value_type = Object)]
    pub schema: ArgsSchema,
    /// Needs a person to answer (`ask_user`): left out of headless turns.
    pub needs_person: bool,
    /// Answers in the turn's channel conversation (`channel_dm`): left out of out-of-band
    /// turns (cron, trigger, API), which have none.
    pub needs_conversation: bool,
    /// Every agent may call it whatever its grants and tool mode (`read_artifact`, which
    /// reads only the caller's own spilled results); offered in every mode. Only built-in
    /// tools keep it: `Tools::provide` clears it on what a dynamic provider offers.
    pub built_in_grant: bool,
    /// Its result is never spilled to the artifact store (`read_artifact` itself).
    pub never_spill: bool,
    /// Runs alone and in order when a model asks for several calls at once (a browser tab,
    /// a process's stdin), even where it only reads; other read-only calls of one response
    /// run concurrently (`turn::tool_calls`).
    pub exclusive: bool,
    /// Changes nothing that the audit log must vouch for: it reads, or only notes in its
    /// session which tools were seen. A call of any other tool is not answered before its
    /// audit record is committed; a read-only call's record is written a moment later.
    /// Tools change state unless declared read-only, so a forgotten mark costs latency, not
    /// an audit record. Read-only calls of one response may also run side by side; the others
    /// run one after another in the model's order.
    pub read_only: bool,
    /// Its successful result is an object whose `path` (relative to the calling agent's
    /// workspace) and `media_type` (`image/…`) name an image the tool wrote there: the turn
    /// loop sends the model that image with the result where its provider accepts images
    /// (`llm::ToolImage`), else the path.
    pub returns_image: bool,
    /// Other families whose `family.*` grant gives it too: the name people guess for it
    /// (`canvas.*` for `canvas_present`, of the spec's `media` family).
    #[serde(skip)]
    pub also_in: Vec<&'static str>,
    /// Where a tool that is not built in comes from (an MCP server, a script folder).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<ToolOrigin>,
    /// The description in lower case, made once so `tool_search` does not redo it per call.
    #[serde(skip)]
    pub(crate) description_lower: String,
}

impl ToolDef {
    pub fn new(name: impl Into<String>, family: impl Into<String>, description: impl Into<String>) -> ToolDef {
        let description = description.into();
        ToolDef {
            name: name.into(),
            family: family.into(),
            description_lower: description.to_lowercase(),
            description,
            tags: Vec::new(),
            schema: ArgsSchema::given(serde_json::json!({"type": "object"})),
            needs_person: false,
            needs_conversation: false,
            built_in_grant: false,
            never_spill: false,
            also_in: Vec::new(),
            exclusive: false,
            read_only: false,
            returns_image: false,
            origin: None,
        }
    }

    /// Marks a tool a dynamic provider offers.
    pub fn origin(mut self, origin: ToolOrigin) -> ToolDef {
        self.origin = Some(origin);
        self
    }

    pub fn tags(mut self, tags: &[&str]) -> ToolDef {
        self.tags = tags.iter().map(|t| t.to_string()).collect();
        self
    }

    /// Granted by `family.*` too (see [`ToolDef::also_in`]).
    pub fn also_in(mut self, family: &'static str) -> ToolDef {
        self.also_in.push(family);
        self
    }

    /// Marks a tool that asks a person and waits (`ask_user`): never offered in headless turns.
    pub fn needs_person(mut self) -> ToolDef {
        self.needs_person = true;
        self
    }

    /// Marks a tool that answers in the turn's channel conversation: never offered in
    /// out-of-band turns.
    pub fn needs_conversation(mut self) -> ToolDef {
        self.needs_conversation = true;
        self
    }

    /// Marks a tool every agent may call, granted or not (see [`ToolDef::built_in_grant`]).
    pub(crate) fn built_in_grant(mut self) -> ToolDef {
        self.built_in_grant = true;
        self
    }

    /// Marks a tool whose calls must not overlap (one browser tab, one stdin).
    pub fn exclusive(mut self) -> ToolDef {
        self.exclusive = true;
        self
    }

    /// Marks a tool that changes no state (see [`ToolDef::read_only`]): its audit record is
    /// queued and the call answered without waiting for the write.
    pub fn read_only(mut self) -> ToolDef {
        self.read_only = true;
        self
    }

    /// Marks a tool whose result names an image it wrote to the agent's workspace (see
    /// [`ToolDef::returns_image`]).
    pub fn returns_image(mut self) -> ToolDef {
        self.returns_image = true;
        self
    }

    pub fn never_spill(mut self) -> ToolDef {
        self.never_spill = true;
        self
    }
}

/// Where a dynamic tool comes from, as the Tools inspector and `GET /api/tools` show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct ToolOrigin {
    /// `mcp:SERVER`, `script` or `ext:PACKAGE`.
    pub provider: String,
    /// The provider's own name for the tool, when the model is offered another (a name
    /// with characters or a length model APIs refuse).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub original_name: Option<String>,
    /// What an operator should know about how it runs ("runs without a sandbox: …").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A built-in tool. Implement this in its family, holding the services it uses, and register
/// it in the family's `register(&mut Registry, &Services)` (see [`crate::family`]).
pub trait Tool: Send + Sync + 'static {
    /// The arguments; their schema is what the model sees.
    type Args: DeserializeOwned + JsonSchema + Send + 'static;

    /// Name, family, description, tags. The schema is filled in by the registry.
    fn def(&self) -> ToolDef;

    /// The agent layer of availability: why this tool is left out for `agent` although it
    /// may be granted (its memory scopes do not cover the family), if it is. The model is
    /// not offered it and the inspector shows the reason.
    fn excluded_for(&self, _agent: &crate::agent::Agent) -> Option<String> {
        None
    }

    /// A family's extra condition on one call beyond the grant (an allowlist for this
    /// argument).
    fn gate(&self, _ctx: &CallContext) -> Result<()> {
        Ok(())
    }

    fn run(&self, ctx: CallContext, args: Self::Args) -> impl Future<Output = Result<Value>> + Send;
}

/// Arguments of a tool that takes none.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

pub(crate) type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// A call whose arguments have been validated, ready to run.
pub(crate) type PreparedCall = Box<dyn FnOnce(CallContext) -> BoxFuture<Result<Value>> + Send>;

/// [`Tool`] with its argument type erased, so the registry can hold every tool in one map.
pub(crate) trait ErasedTool: Send + Sync {
    fn excluded_for(&self, agent: &crate::agent::Agent) -> Option<String>;
    fn gate(&self, ctx: &CallContext) -> Result<()>;
    fn prepare(self: Arc<Self>, args: Value) -> Result<PreparedCall>;
}

impl<T: Tool> ErasedTool for T {
    fn excluded_for(&self, agent: &crate::agent::Agent) -> Option<String> {
        Tool::excluded_for(self, agent)
    }

    fn gate(&self, ctx: &CallContext) -> Result<()> {
        Tool::gate(self, ctx)
    }

    fn prepare(self: Arc<Self>, args: Value) -> Result<PreparedCall> {
        let args: T::Args = from_value(call_arguments(args)?)?;
        Ok(Box::new(move |ctx| Box::pin(async move { self.run(ctx, args).await })))
    }
}

/// A call's arguments as every tool's check reads them: `null` (what models send for tools
/// without arguments) is `{}`; text is what a model sent that was not JSON at all (see
/// `llm::parse_arguments`), refused with a piece of it.
pub(crate) fn call_arguments(args: Value) -> Result<Value> {
    match args {
        Value::Null => Ok(Value::Object(Default::default())),
        Value::String(raw) => {
            let shown: String = raw.chars().take(200).collect();
            Err(crate::Error::invalid(format!(
                "the arguments must be a JSON object; got text that is not JSON: {shown}"
            )))
        }
        args => Ok(args),
    }
}

/// A tool's argument schema. A built-in tool's is derived from its argument type the first
/// time something asks (a turn's offer, the tool list, a page): deriving all 86 when the
/// daemon opened took most of a millisecond of its start, and an idle daemon held them all.
/// A script's or an MCP server's tool comes with its schema given. Reads as the JSON
/// [`Value`] it is, and serialises as one.
#[derive(Clone)]
pub struct ArgsSchema(Arc<LazySchema>);

struct LazySchema {
    value: std::sync::OnceLock<Arc<Value>>,
    derive: fn() -> Value,
}

impl ArgsSchema {
    /// `T`'s schema ([`schema_for`]), derived when first read.
    pub fn of<T: JsonSchema>() -> ArgsSchema {
        ArgsSchema(Arc::new(LazySchema { value: std::sync::OnceLock::new(), derive: schema_for::<T> }))
    }

    /// A schema given whole.
    pub fn given(schema: Value) -> ArgsSchema {
        ArgsSchema(Arc::new(LazySchema { value: Arc::new(schema).into(), derive: || Value::Null }))
    }

    /// The schema, shared: a turn's offer points at it instead of copying it.
    pub fn shared(&self) -> Arc<Value> {
        self.0.derived().clone()
    }
}

impl LazySchema {
    fn derived(&self) -> &Arc<Value> {
        self.value.get_or_init(|| Arc::new((self.derive)()))
    }
}

impl std::ops::Deref for ArgsSchema {
    type Target = Value;

    fn deref(&self) -> &Value {
        self.0.derived()
    }
}

impl Serialize for ArgsSchema {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        (**self).serialize(serializer)
    }
}

impl std::fmt::Debug for ArgsSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

/// The model-facing JSON Schema of `T`: subschemas inlined, no `$schema`/`title` noise.
pub fn schema_for<T: JsonSchema>() -> Value {
    let generator =
        schemars::generate::SchemaSettings::draft2020_12().with(|s| s.inline_subschemas = true).into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Some(obj) = schema.as_object_mut() {
        obj.remove("$schema");
        obj.remove("title");
        if obj.get("type") == Some(&Value::String("object".into())) && !obj.contains_key("properties") {
            obj.insert("properties".into(), Value::Object(Default::default()));
        }
    }
    schema
}
