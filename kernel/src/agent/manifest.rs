//! Agent types: the seven-field [`AgentTypeSpec`] an agent may write, the full [`Manifest`]
//! an operator may write, and the one validator both go through.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::capability::{Capabilities, Grant, GrantPattern, MemoryScope, MemoryScopePattern};
use crate::error::{Error, FieldError, Result, from_value};
use crate::text::{is_blank, is_space, longer_than};

const MAX_DESCRIPTION: usize = 2_000;
const MAX_SYSTEM_PROMPT: usize = 100_000;
const MAX_MODEL: usize = 200;
const MAX_LIST: usize = 256;
const MAX_BLOCKS: usize = 32;
const MAX_FALLBACKS: usize = 8;
/// The largest daily token budget (as `[budgets]` allows): far above any real day's use.
const MAX_TOKENS_PER_DAY: u64 = 1_000_000_000_000;
const MAX_PROMPT: usize = 10_000;

/// Names of agent types, agents and providers: 1–64 lowercase letters, digits, `-`, `_`.
pub fn is_valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

pub const NAME_RULE: &str = "1-64 characters: lowercase letters, digits, `-` or `_`";

/// A name as the API writes it (agent types, agents, providers, skills): the schema of
/// [`is_valid_name`].
#[derive(ToSchema)]
#[schema(pattern = r"^[a-z0-9_-]{1,64}$")]
#[allow(dead_code)]
pub struct Name(String);

/// Which tool schemas a turn sends the model (spec §1, §1b).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ToolMode {
    /// Every granted tool's schema, every turn.
    #[default]
    All,
    /// Meta tools plus tools loaded in this session.
    Lazy,
    /// A fixed, byte-identical array (`find_tools`, `run_tool`, …) for prompt caching.
    Stable,
}

impl ToolMode {
    pub fn as_str(self) -> &'static str {
        match self {
            ToolMode::All => "all",
            ToolMode::Lazy => "lazy",
            ToolMode::Stable => "stable",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema, ToSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Model calls one turn may make before it is ended (1–200, default 25).
    #[schema(minimum = 1, maximum = 200)]
    pub max_iterations: u32,
    /// Input and output tokens an agent of this type may use a day (the day of `[budgets]`),
    /// 1 to 10^12.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 1000000000000_u64)]
    pub max_tokens_per_day: Option<u64>,
    /// US dollars an agent of this type may spend a day, from the models' prices: above 0,
    /// at most 1,000,000.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(exclusive_minimum = 0.0, maximum = 1000000.0)]
    pub max_usd_per_day: Option<f64>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_iterations: 25, max_tokens_per_day: None, max_usd_per_day: None }
    }
}

/// A `[[cron]]` block: a recurring turn declared in the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CronBlock {
    /// Five-field cron expression (minute hour day-of-month month day-of-week), or a
    /// nickname such as `@daily`.
    #[schema(min_length = 1)]
    pub schedule: String,
    /// What the agent is told at each fire; 1–10,000 characters, not blank.
    #[schema(pattern = r"[^ \t\n\r\f\v]", max_length = 10000)]
    pub prompt: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// IANA time zone; UTC when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
}

/// A `[[trigger]]` block: a turn started by a matching event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TriggerBlock {
    /// Event type pattern (glob), e.g. `inbox.*`: 1–128 characters, no spaces.
    #[schema(pattern = r"^[^ \t\n\r\f\v]{1,128}$")]
    pub event: String,
    /// Prompt template; `{{payload}}` is replaced by the event's payload. 1–10,000
    /// characters, not blank.
    #[schema(pattern = r"[^ \t\n\r\f\v]", max_length = 10000)]
    pub prompt: String,
    /// Seconds before the trigger may fire again (at most a year).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(maximum = 31536000)]
    pub cooldown_secs: Option<u64>,
    /// Fires at most this many times in all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(maximum = 1000000000)]
    pub max_fires: Option<u64>,
}

/// A provider and model a turn moves to when the one before it keeps failing (429, 5xx,
/// timeouts, dropped connections) through its retries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Fallback {
    /// A `[providers.NAME]` of config.toml; absent: the agent type's own provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Name>)]
    pub provider: Option<String>,
    /// The model's name at that provider; at most 200 printable characters.
    #[schema(max_length = 200, pattern = r"^[^\u0000-\u001f\u007f-\u009f]+$")]
    pub model: String,
}

/// A full, validated agent manifest. Only [`validate`] makes one from outside input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Manifest {
    pub name: String,
    pub description: String,
    pub system_prompt: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Tried in order when the provider and model before keep failing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fallbacks: Vec<Fallback>,
    pub skills: Vec<String>,
    pub tool_mode: ToolMode,
    #[schema(value_type = CapabilitiesDoc)]
    pub capabilities: Capabilities,
    pub limits: Limits,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cron: Vec<CronBlock>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trigger: Vec<TriggerBlock>,
    /// Whether this type's canvases may load from and connect to `https:` (off: a canvas
    /// reaches nothing outside itself). An operator's choice: `agent_type_create` cannot set it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub canvas_network: bool,
    /// Where this type's agents are, for `location_get` (wins over IP geolocation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
    /// Approval rules for this type's agents, checked after `config.toml`'s: a type can hold
    /// more calls for a person, never fewer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approvals: Vec<crate::approval::Rule>,
}

/// A fixed place: an agent type's answer to `location_get`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Location {
    /// Degrees, -90 to 90.
    #[schema(minimum = -90, maximum = 90)]
    pub latitude: f64,
    /// Degrees, -180 to 180.
    #[schema(minimum = -180, maximum = 180)]
    pub longitude: f64,
    /// A place name (a city, an address); at most 200 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(min_length = 1, max_length = 200)]
    pub place: Option<String>,
    /// An IANA time zone such as `Europe/Berlin`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
}

/// OpenAPI shape of `[capabilities]` (grants are strings on the wire).
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct CapabilitiesDoc {
    tools: Vec<String>,
    deny: Option<Vec<String>>,
    memory_read: Option<Vec<String>>,
    memory_write: Option<Vec<String>>,
}

/// The seven fields an agent may set when it creates an agent type (spec §3). Everything
/// else in the manifest takes its default.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentTypeSpec {
    /// Name of the new agent type: lowercase letters, digits, `-`, `_`.
    pub name: String,
    pub description: Option<String>,
    pub system_prompt: Option<String>,
    pub provider: Option<String>,
    pub model: Option<String>,
    /// Tool grants: globs over tool names or `family.*`.
    pub tools: Option<Vec<String>>,
    pub skills: Option<Vec<String>>,
}

/// A manifest as it arrives from outside, before validation. Accepts the seven-field
/// [`AgentTypeSpec`] shape too: top-level `tools` is shorthand for `capabilities.tools`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ManifestInput {
    /// The agent type's name (required to create one; given by the path to replace one).
    #[schema(value_type = Option<Name>)]
    pub name: Option<String>,
    /// At most 2,000 characters.
    #[schema(max_length = 2000)]
    pub description: Option<String>,
    /// At most 100,000 characters.
    #[schema(max_length = 100000)]
    pub system_prompt: Option<String>,
    /// A `[providers.NAME]` of config.toml (a name it does not define is refused); empty or
    /// absent: the daemon's default when a turn runs (`[kernel] default_provider`, or the only
    /// one configured).
    #[schema(pattern = r"^[a-z0-9_-]{0,64}$")]
    pub provider: Option<String>,
    /// The model's name at the provider; at most 200 printable characters.
    #[schema(max_length = 200, pattern = r"^[^\u0000-\u001f\u007f-\u009f]*$")]
    pub model: Option<String>,
    /// Providers and models a turn moves to, in order, when the one before keeps failing
    /// through its retries. At most 8.
    #[schema(max_items = 8)]
    pub fallbacks: Option<Vec<Fallback>>,
    /// Shorthand for `capabilities.tools` (give one or the other).
    #[schema(value_type = Option<Vec<GrantPattern>>, max_items = 256)]
    pub tools: Option<Vec<String>>,
    #[schema(value_type = Option<Vec<Name>>, max_items = 256)]
    pub skills: Option<Vec<String>>,
    pub tool_mode: Option<ToolMode>,
    /// Synonym for `tool_mode = "lazy"`.
    pub lazy_tools: Option<bool>,
    pub capabilities: Option<CapabilitiesInput>,
    pub limits: Option<Limits>,
    /// At most 32 blocks.
    #[schema(max_items = 32)]
    pub cron: Option<Vec<CronBlock>>,
    /// At most 32 blocks.
    #[schema(max_items = 32)]
    pub trigger: Option<Vec<TriggerBlock>>,
    /// Lets this type's canvases load from and connect to `https:` (default false).
    pub canvas_network: Option<bool>,
    /// Where this type's agents are, for `location_get` (wins over IP geolocation).
    pub location: Option<Location>,
    /// Approval rules for this type's agents, checked after `config.toml`'s (`[[approvals.rule]]`'s
    /// fields; README: Approvals).
    pub approvals: Option<Vec<crate::approval::Rule>>,
}

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CapabilitiesInput {
    /// Tool grants: globs over tool names or `family.*`.
    #[schema(value_type = Option<Vec<GrantPattern>>, max_items = 256)]
    pub tools: Option<Vec<String>>,
    /// Tools refused even when `tools` allows them.
    #[schema(value_type = Option<Vec<GrantPattern>>, max_items = 256)]
    pub deny: Option<Vec<String>>,
    /// Memory the agent may read; absent = open.
    #[schema(value_type = Option<Vec<MemoryScopePattern>>)]
    pub memory_read: Option<Vec<String>>,
    /// Memory the agent may write; absent = open.
    #[schema(value_type = Option<Vec<MemoryScopePattern>>)]
    pub memory_write: Option<Vec<String>>,
}

/// An agent's new `[capabilities]`, replacing the old ones whole. `tools` is required (`[]`
/// clears every grant), so an empty or forgotten body cannot wipe an agent's grants; the
/// rest may be left out (then empty or, for memory scopes, open).
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewCapabilities {
    /// Tool grants: globs over tool names or `family.*`.
    #[schema(value_type = Vec<GrantPattern>, max_items = 256)]
    pub tools: Vec<String>,
    /// Tools refused even when `tools` allows them.
    #[schema(value_type = Option<Vec<GrantPattern>>, max_items = 256)]
    pub deny: Option<Vec<String>>,
    /// Memory the agent may read; absent = open.
    #[schema(value_type = Option<Vec<MemoryScopePattern>>)]
    pub memory_read: Option<Vec<String>>,
    /// Memory the agent may write; absent = open.
    #[schema(value_type = Option<Vec<MemoryScopePattern>>)]
    pub memory_write: Option<Vec<String>>,
}

impl From<NewCapabilities> for CapabilitiesInput {
    fn from(c: NewCapabilities) -> Self {
        CapabilitiesInput {
            tools: Some(c.tools),
            deny: c.deny,
            memory_read: c.memory_read,
            memory_write: c.memory_write,
        }
    }
}

impl From<AgentTypeSpec> for ManifestInput {
    fn from(s: AgentTypeSpec) -> Self {
        ManifestInput {
            name: Some(s.name),
            description: s.description,
            system_prompt: s.system_prompt,
            provider: s.provider,
            model: s.model,
            tools: s.tools,
            skills: s.skills,
            ..Default::default()
        }
    }
}

impl From<&Manifest> for ManifestInput {
    fn from(m: &Manifest) -> Self {
        let strings = |gs: &[Grant]| gs.iter().map(|g| g.as_str().to_string()).collect::<Vec<_>>();
        let scopes =
            |s: &Option<Vec<MemoryScope>>| s.as_ref().map(|v| v.iter().map(|s| String::from(s.clone())).collect());
        ManifestInput {
            name: Some(m.name.clone()),
            description: Some(m.description.clone()),
            system_prompt: Some(m.system_prompt.clone()),
            provider: m.provider.clone(),
            model: m.model.clone(),
            fallbacks: Some(m.fallbacks.clone()),
            tools: None,
            skills: Some(m.skills.clone()),
            tool_mode: Some(m.tool_mode),
            lazy_tools: None,
            capabilities: Some(CapabilitiesInput {
                tools: Some(strings(&m.capabilities.tools)),
                deny: Some(strings(&m.capabilities.deny)),
                memory_read: scopes(&m.capabilities.memory_read),
                memory_write: scopes(&m.capabilities.memory_write),
            }),
            limits: Some(m.limits.clone()),
            cron: Some(m.cron.clone()),
            trigger: Some(m.trigger.clone()),
            canvas_network: Some(m.canvas_network),
            location: m.location.clone(),
            approvals: Some(m.approvals.clone()),
        }
    }
}

/// Parses a manifest from JSON or TOML text into a [`ManifestInput`]; a type error names the
/// field's path.
pub fn parse_manifest(text: &str, format: ManifestFormat) -> Result<ManifestInput> {
    let value: serde_json::Value = match format {
        ManifestFormat::Json => {
            serde_json::from_str(text).map_err(|e| Error::invalid(format!("body is not valid JSON: {e}")))?
        }
        ManifestFormat::Toml => toml::from_str(text)
            .map_err(|e| Error::invalid(format!("body is not valid TOML: {}", e.message().trim())))?,
    };
    from_value(value)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ManifestFormat {
    Json,
    Toml,
}

/// Renders a manifest as TOML (the format operators edit).
pub fn to_toml(m: &Manifest) -> String {
    toml::to_string_pretty(m).unwrap_or_else(|e| format!("# cannot render manifest as TOML: {e}\n"))
}

/// The one validator for agent types, used by `POST /api/templates`, `agent_type_create`,
/// the dashboard and the CLI. Collects every problem, not just the first.
pub fn validate(input: ManifestInput) -> Result<Manifest> {
    let mut errors = Vec::new();
    let mut err = |field: &str, message: String| errors.push(FieldError { field: field.into(), message });

    let name = input.name.unwrap_or_default();
    if name.is_empty() {
        err("name", "is required".into());
    } else if !is_valid_name(&name) {
        err("name", format!("`{name}` is not a valid name: {NAME_RULE}"));
    }
    let description = input.description.unwrap_or_default();
    if description.chars().count() > MAX_DESCRIPTION {
        err("description", format!("is at most {MAX_DESCRIPTION} characters"));
    }
    let system_prompt = input.system_prompt.unwrap_or_default();
    if longer_than(&system_prompt, MAX_SYSTEM_PROMPT) {
        err("system_prompt", format!("is at most {MAX_SYSTEM_PROMPT} characters"));
    }
    let provider = input.provider.filter(|p| !p.is_empty());
    if let Some(p) = &provider
        && !is_valid_name(p)
    {
        err("provider", format!("`{p}` is not a valid provider name: {NAME_RULE}"));
    }
    let model = input.model.filter(|m| !m.is_empty());
    if let Some(m) = &model
        && (longer_than(m, MAX_MODEL) || m.chars().any(char::is_control))
    {
        err("model", format!("is at most {MAX_MODEL} printable characters"));
    }
    let fallbacks = input.fallbacks.unwrap_or_default();
    if fallbacks.len() > MAX_FALLBACKS {
        err("fallbacks", format!("at most {MAX_FALLBACKS}"));
    }
    for (i, f) in fallbacks.iter().enumerate() {
        if let Some(p) = &f.provider
            && !is_valid_name(p)
        {
            err(&format!("fallbacks[{i}].provider"), format!("`{p}` is not a valid provider name: {NAME_RULE}"));
        }
        if f.model.is_empty() || longer_than(&f.model, MAX_MODEL) || f.model.chars().any(char::is_control) {
            err(&format!("fallbacks[{i}].model"), format!("is 1 to {MAX_MODEL} printable characters"));
        }
    }
    let skills = input.skills.unwrap_or_default();
    if skills.len() > MAX_LIST {
        err("skills", format!("lists at most {MAX_LIST} skills"));
    }
    for (i, s) in skills.iter().enumerate() {
        if !is_valid_name(s) {
            err(&format!("skills[{i}]"), format!("`{s}` is not a valid skill name: {NAME_RULE}"));
        }
    }

    let tool_mode = match (input.tool_mode, input.lazy_tools) {
        (Some(mode), Some(true)) if mode != ToolMode::Lazy => {
            err("lazy_tools", "`lazy_tools = true` contradicts `tool_mode`; set only `tool_mode`".into());
            mode
        }
        (Some(mode), _) => mode,
        (None, Some(true)) => ToolMode::Lazy,
        (None, _) => ToolMode::All,
    };

    let mut caps_in = input.capabilities.unwrap_or_default();
    let (tools_field, tool_patterns) = match (input.tools, caps_in.tools.take()) {
        (Some(_), Some(_)) => {
            err("tools", "given twice: use either `tools` or `capabilities.tools`".into());
            ("tools", Vec::new())
        }
        (Some(t), None) => ("tools", t),
        (None, Some(t)) => ("capabilities.tools", t),
        (None, None) => ("capabilities.tools", Vec::new()),
    };
    let capabilities = capabilities_of((tools_field, &tool_patterns), caps_in, &mut err);

    let limits = input.limits.unwrap_or_default();
    if !(1..=200).contains(&limits.max_iterations) {
        err("limits.max_iterations", "expected a whole number from 1 to 200".into());
    }
    if limits.max_tokens_per_day.is_some_and(|t| !(1..=MAX_TOKENS_PER_DAY).contains(&t)) {
        err(
            "limits.max_tokens_per_day",
            format!("expected a whole number from 1 to {MAX_TOKENS_PER_DAY} (leave it out for no budget)"),
        );
    }
    if let Some(usd) = limits.max_usd_per_day
        && (crate::usage::check_price(usd).is_err() || usd == 0.0)
    {
        err(
            "limits.max_usd_per_day",
            "expected US dollars above 0, at most 1000000 (leave it out for no budget)".into(),
        );
    }
    let cron = input.cron.unwrap_or_default();
    if cron.len() > MAX_BLOCKS {
        err("cron", format!("at most {MAX_BLOCKS} blocks"));
    }
    // Over the limit, the blocks are not read at all: each costs a cron parse.
    for (i, c) in cron.iter().enumerate().take_while(|_| cron.len() <= MAX_BLOCKS) {
        if let Err(message) = crate::schedule::cron::parse_cron(&c.schedule, c.timezone.as_deref()) {
            let field = if message.contains("time zone") { "timezone" } else { "schedule" };
            err(&format!("cron[{i}].{field}"), message);
        }
        check_prompt(&format!("cron[{i}].prompt"), &c.prompt, &mut err);
    }
    let trigger = input.trigger.unwrap_or_default();
    if trigger.len() > MAX_BLOCKS {
        err("trigger", format!("at most {MAX_BLOCKS} blocks"));
    }
    for (i, t) in trigger.iter().enumerate().take_while(|_| trigger.len() <= MAX_BLOCKS) {
        if t.event.is_empty() || longer_than(&t.event, 128) || t.event.chars().any(is_space) {
            err(&format!("trigger[{i}].event"), "an event type pattern of 1-128 characters without spaces".into());
        }
        check_prompt(&format!("trigger[{i}].prompt"), &t.prompt, &mut err);
        if t.cooldown_secs.is_some_and(|c| c > MAX_COOLDOWN_SECS) {
            err(&format!("trigger[{i}].cooldown_secs"), format!("at most {MAX_COOLDOWN_SECS} (a year)"));
        }
        if t.max_fires.is_some_and(|m| m > MAX_FIRES) {
            err(&format!("trigger[{i}].max_fires"), format!("at most {MAX_FIRES}"));
        }
    }

    if let Some(l) = &input.location {
        if !(-90.0..=90.0).contains(&l.latitude) {
            err("location.latitude", "degrees from -90 to 90".into());
        }
        if !(-180.0..=180.0).contains(&l.longitude) {
            err("location.longitude", "degrees from -180 to 180".into());
        }
        if l.place.as_ref().is_some_and(|p| crate::text::is_blank(p) || p.chars().count() > 200) {
            err("location.place", "1 to 200 characters, not blank".into());
        }
        if l.timezone.as_ref().is_some_and(|t| t.parse::<chrono_tz::Tz>().is_err()) {
            err("location.timezone", "an IANA time zone name, like Europe/Berlin".into());
        }
    }

    let mut approvals = input.approvals.unwrap_or_default();
    let shipped = crate::approval::config::default_rules();
    for i in 0..approvals.len() {
        // Approvals and decisions name their rule: a type's unnamed rule is named by its place.
        if approvals[i].name.trim().is_empty() {
            approvals[i].name = format!("{name} approvals[{i}]");
        }
        let named = approvals[i].name.trim();
        if shipped.iter().any(|r| r.name == named) || approvals[..i].iter().any(|r| r.name.trim() == named) {
            err(
                &format!("approvals[{i}].name"),
                format!("`{named}` names another rule already: give each rule its own name"),
            );
        }
        if let Err((key, message)) = crate::approval::config::check_rule(&approvals[i]) {
            err(&format!("approvals[{i}].{key}"), message);
        }
    }

    if !errors.is_empty() {
        return Err(Error::invalid_fields(errors));
    }
    Ok(Manifest {
        name,
        description,
        system_prompt,
        provider,
        model,
        fallbacks,
        skills,
        tool_mode,
        capabilities,
        limits,
        cron,
        trigger,
        canvas_network: input.canvas_network.unwrap_or(false),
        location: input.location,
        approvals,
    })
}

impl Manifest {
    /// A type's manifest as its unset fields make it: what the editor previews a type not
    /// saved yet against.
    pub fn unsaved() -> Manifest {
        validate(ManifestInput { name: Some("unsaved".into()), ..Default::default() })
            .expect("a manifest of defaults is valid")
    }

    /// This manifest with `patterns` as its tool grants, checked as a save checks them (the
    /// rest of `[capabilities]` kept): the type editor's preview of grants not saved yet.
    pub fn with_tools(&self, patterns: Vec<String>) -> Result<Manifest> {
        let mut caps = ManifestInput::from(self).capabilities.unwrap_or_default();
        caps.tools = Some(patterns);
        Ok(Manifest { capabilities: validate_capabilities(caps)?, ..self.clone() })
    }
}

/// `[capabilities]` alone, as an agent's grants are replaced: the rest of its stored manifest
/// is not judged again by rules made after it was stored (a `[[cron]]` a later rule refuses
/// must not keep an operator from changing the agent's grants).
pub fn validate_capabilities(caps: CapabilitiesInput) -> Result<Capabilities> {
    let mut errors = Vec::new();
    let mut err = |field: &str, message: String| errors.push(FieldError { field: field.into(), message });
    let mut caps = caps;
    let tools = caps.tools.take().unwrap_or_default();
    let capabilities = capabilities_of(("capabilities.tools", &tools), caps, &mut err);
    if errors.is_empty() { Ok(capabilities) } else { Err(Error::invalid_fields(errors)) }
}

/// The grants and memory scopes of `caps`, with `tools` (the field it came from and its
/// patterns) given apart: a manifest may give them as top-level `tools`.
fn capabilities_of(
    (tools_field, tool_patterns): (&str, &[String]),
    caps: CapabilitiesInput,
    err: &mut impl FnMut(&str, String),
) -> Capabilities {
    Capabilities {
        tools: parse_grants(tools_field, tool_patterns, err),
        deny: parse_grants("capabilities.deny", &caps.deny.unwrap_or_default(), err),
        memory_read: parse_scopes("capabilities.memory_read", caps.memory_read, err),
        memory_write: parse_scopes("capabilities.memory_write", caps.memory_write, err),
    }
}

fn parse_grants(field: &str, patterns: &[String], err: &mut impl FnMut(&str, String)) -> Vec<Grant> {
    if patterns.len() > MAX_LIST {
        err(field, format!("lists at most {MAX_LIST} patterns"));
    }
    let mut grants = Vec::with_capacity(patterns.len());
    for (i, p) in patterns.iter().enumerate() {
        match Grant::parse(p) {
            Ok(g) if !grants.contains(&g) => grants.push(g),
            Ok(_) => {}
            Err(e) => err(&format!("{field}[{i}]"), e),
        }
    }
    grants
}

fn parse_scopes(
    field: &str,
    scopes: Option<Vec<String>>,
    err: &mut impl FnMut(&str, String),
) -> Option<Vec<MemoryScope>> {
    let scopes = scopes?;
    let mut parsed = Vec::with_capacity(scopes.len());
    for (i, s) in scopes.into_iter().enumerate() {
        match MemoryScope::try_from(s) {
            Ok(s) => parsed.push(s),
            Err(e) => err(&format!("{field}[{i}]"), e),
        }
    }
    Some(parsed)
}

/// Bounds that keep trigger limits inside what time and counter arithmetic can hold.
const MAX_COOLDOWN_SECS: u64 = 365 * 24 * 3600;
const MAX_FIRES: u64 = 1_000_000_000;

fn check_prompt(field: &str, prompt: &str, err: &mut impl FnMut(&str, String)) {
    if is_blank(prompt) {
        err(field, "is required".into());
    } else if longer_than(prompt, MAX_PROMPT) {
        err(field, format!("is at most {MAX_PROMPT} characters"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(json: serde_json::Value) -> ManifestInput {
        from_value(json).unwrap()
    }

    #[test]
    fn blocks_over_the_limit_are_refused_without_being_read() {
        let bad_cron = serde_json::json!({ "schedule": "61 * * * *", "prompt": "p" });
        let bad_trigger = serde_json::json!({ "event": "has space", "prompt": "p" });
        let e = validate(input(serde_json::json!({
            "name": "many",
            "cron": vec![bad_cron; MAX_BLOCKS + 1],
            "trigger": vec![bad_trigger; MAX_BLOCKS + 1],
        })))
        .unwrap_err();
        let fields: Vec<&str> = e.fields.iter().map(|f| f.field.as_str()).collect();
        assert_eq!(fields, ["cron", "trigger"], "only the limits, no block was parsed: {e}");
    }

    #[test]
    fn the_seven_field_spec_becomes_a_manifest_with_defaults() {
        let m = validate(
            AgentTypeSpec {
                name: "coder".into(),
                tools: Some(vec!["meta.*".into(), "system_time".into()]),
                ..Default::default()
            }
            .into(),
        )
        .unwrap();
        assert_eq!(m.capabilities.tools.len(), 2);
        assert_eq!(m.tool_mode, ToolMode::All);
        assert_eq!(m.limits.max_iterations, 25);
    }

    #[test]
    fn every_problem_is_reported_with_its_field() {
        let e = validate(input(serde_json::json!({
            "name": "Bad Name",
            "tools": ["ok_*", "bad pattern"],
            "skills": ["Nope"],
            "cron": [{"schedule": "* * *", "prompt": ""}, {"schedule": "* * * * *", "prompt": "p", "timezone": "Nowhere"}],
            "trigger": [{"event": "e", "prompt": "p", "cooldown_secs": 10_000_000_000_000u64, "max_fires": u64::MAX}],
        })))
        .unwrap_err();
        let fields: Vec<_> = e.fields.iter().map(|f| f.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "name",
                "skills[0]",
                "tools[1]",
                "cron[0].schedule",
                "cron[0].prompt",
                "cron[1].timezone",
                "trigger[0].cooldown_secs",
                "trigger[0].max_fires"
            ]
        );
    }

    #[test]
    fn type_errors_name_the_path_and_unknown_fields_are_refused() {
        let e =
            from_value::<ManifestInput>(serde_json::json!({"name": "a", "capabilities": {"tools": "x"}})).unwrap_err();
        assert_eq!(e.fields[0].field, "capabilities.tools");
        let e = from_value::<ManifestInput>(serde_json::json!({"name": "a", "colour": "red"})).unwrap_err();
        assert!(e.message.contains("unknown field `colour`"), "{}", e.message);
    }

    #[test]
    fn lazy_tools_is_a_synonym_and_contradictions_are_refused() {
        let m = validate(input(serde_json::json!({"name": "a", "lazy_tools": true}))).unwrap();
        assert_eq!(m.tool_mode, ToolMode::Lazy);
        assert!(validate(input(serde_json::json!({"name": "a", "lazy_tools": true, "tool_mode": "stable"}))).is_err());
        assert!(validate(input(serde_json::json!({"name": "a", "tools": [], "capabilities": {"tools": []}}))).is_err());
    }

    #[test]
    fn toml_round_trip_is_lossless() {
        let m = validate(input(serde_json::json!({
            "name": "ops", "description": "on call", "provider": "local", "model": "m",
            "tool_mode": "stable",
            "capabilities": {"tools": ["tasks.*"], "deny": ["task_post"], "memory_read": ["kv:*"]},
            "cron": [{"schedule": "0 9 * * 1", "prompt": "weekly report"}],
            "trigger": [{"event": "inbox.*", "prompt": "look at {{payload}}", "cooldown_secs": 60}],
        })))
        .unwrap();
        let text = to_toml(&m);
        let back = validate(parse_manifest(&text, ManifestFormat::Toml).unwrap()).unwrap();
        assert_eq!(back, m);
        let back = validate((&m).into()).unwrap();
        assert_eq!(back, m);
    }

    #[test]
    fn the_stored_json_form_reads_back_with_and_without_optional_blocks() {
        for json in [
            serde_json::json!({"name": "a"}),
            serde_json::json!({"name": "b", "cron": [{"schedule": "0 * * * *", "prompt": "p"}]}),
        ] {
            let m = validate(input(json)).unwrap();
            let stored = serde_json::to_string(&m).unwrap();
            let back: Manifest = serde_json::from_str(&stored).unwrap();
            assert_eq!(back, m);
        }
    }

    #[test]
    fn previewed_grants_replace_the_tools_only_and_are_checked_as_a_save_checks_them() {
        let m = validate(input(serde_json::json!({
            "name": "a", "tool_mode": "lazy",
            "capabilities": {"tools": ["tasks.*"], "deny": ["task_post"], "memory_read": ["kv:*"]},
        })))
        .unwrap();
        let previewed = m.with_tools(vec!["system_time".into(), "browser.*".into()]).unwrap();
        let grants: Vec<&str> = previewed.capabilities.tools.iter().map(|g| g.as_str()).collect();
        assert_eq!(grants, ["system_time", "browser.*"]);
        assert_eq!(previewed.capabilities.deny, m.capabilities.deny);
        assert_eq!(previewed.capabilities.memory_read, m.capabilities.memory_read);
        assert_eq!(previewed.tool_mode, ToolMode::Lazy);
        let refused = m.with_tools(vec!["Browser.*".into()]).unwrap_err();
        assert_eq!(refused.fields[0].field, "capabilities.tools[0]");
        assert_eq!(Manifest::unsaved().capabilities.tools, Vec::new());
    }
}
