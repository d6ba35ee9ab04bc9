//! Grants: which tools an agent may call (spec §0.2) and which memory it may touch (§4).
//!
//! A grant is either a glob over tool names (`memory_*`, `system_time`, `*`), a whole family
//! (`browser.*`), or one of the reaches over other agents ([`Reach`], `agents.kill_any`),
//! which only their exact grant gives. Patterns are parsed once into [`Grant`]; after that
//! they are trusted.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::tool::ToolDef;

const MAX_PATTERN_LEN: usize = 128;

/// A validated tool grant pattern.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Grant {
    pattern: String,
    kind: GrantKind,
}

#[derive(Clone, PartialEq, Eq, Hash)]
enum GrantKind {
    /// `family.*`: every tool of that family.
    Family(String),
    /// A glob over tool names with `*` (any run) and `?` (one character).
    Glob,
    /// A reach over agents that are not the caller's descendants: no tool is matched by it,
    /// and no glob or family grant gives it.
    Reach(Reach),
}

/// What an agent may do to agents outside its own spawn tree. Its descendants it may message
/// and stop freely; anyone else only with the exact grant (`agents.*` does not give it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reach {
    /// `agents.kill_any`: `agent_kill` any agent (never one bound to a channel or exposed over
    /// A2A or as an OpenAI model).
    KillAny,
    /// `agents.message_any`: `agent_send` to any agent.
    MessageAny,
}

impl Reach {
    pub const ALL: [Reach; 2] = [Reach::KillAny, Reach::MessageAny];

    /// The grant that gives it.
    pub fn pattern(self) -> &'static str {
        match self {
            Reach::KillAny => "agents.kill_any",
            Reach::MessageAny => "agents.message_any",
        }
    }

    pub fn grant(self) -> Grant {
        Grant { pattern: self.pattern().into(), kind: GrantKind::Reach(self) }
    }
}

impl Grant {
    pub fn parse(pattern: &str) -> Result<Grant, String> {
        if pattern.is_empty() {
            return Err("a grant pattern cannot be empty".into());
        }
        if pattern.len() > MAX_PATTERN_LEN {
            return Err(format!("a grant pattern is at most {MAX_PATTERN_LEN} characters"));
        }
        if let Some(reach) = Reach::ALL.into_iter().find(|r| r.pattern() == pattern) {
            return Ok(reach.grant());
        }
        if let Some(family) = pattern.strip_suffix(".*") {
            if !family.is_empty() && family.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_') {
                return Ok(Grant { pattern: pattern.into(), kind: GrantKind::Family(family.into()) });
            }
            return Err(format!(
                "`{pattern}` is not a family grant: write `family.*` with a family name of lowercase letters, digits and `_`"
            ));
        }
        if let Some(bad) = pattern.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '*' | '?')))
        {
            return Err(format!(
                "`{pattern}` has `{bad}`: a tool pattern uses letters, digits, `_`, `-`, `*` and `?`, or is `family.*`, `agents.kill_any` or `agents.message_any`"
            ));
        }
        Ok(Grant { pattern: pattern.into(), kind: GrantKind::Glob })
    }

    pub fn as_str(&self) -> &str {
        &self.pattern
    }

    pub fn matches(&self, tool: &ToolDef) -> bool {
        match &self.kind {
            GrantKind::Family(family) => tool.family == *family || tool.also_in.contains(&family.as_str()),
            GrantKind::Glob => glob_match(self.pattern.as_bytes(), tool.name.as_bytes()),
            GrantKind::Reach(_) => false,
        }
    }

    /// The reach this grant gives, if it is one.
    pub fn reach(&self) -> Option<Reach> {
        match self.kind {
            GrantKind::Reach(reach) => Some(reach),
            _ => None,
        }
    }
}

impl fmt::Debug for Grant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Grant({})", self.pattern)
    }
}

impl fmt::Display for Grant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.pattern)
    }
}

impl Serialize for Grant {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.pattern)
    }
}

impl<'de> Deserialize<'de> for Grant {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Grant::parse(&s).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for Grant {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Grant".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "A glob over tool names (`memory_*`) or a whole family (`browser.*`)."
        })
    }
}

/// A grant as the API writes it: a glob over tool names (`memory_*`, letters, digits, `_`, `-`,
/// `*`, `?`) or a whole family (`browser.*`). The schema of [`Grant`] on the wire.
#[derive(utoipa::ToSchema)]
#[schema(pattern = r"^([a-z0-9_]+\.\*|[A-Za-z0-9_*?-]+|agents\.kill_any|agents\.message_any)$", max_length = 128)]
#[allow(dead_code)]
pub struct GrantPattern(String);

/// A memory scope as the API writes it: `*`, `kv:<glob>` or `semantic:<glob>`.
#[derive(utoipa::ToSchema)]
#[schema(pattern = r"^(\*|(kv|semantic):[\s\S]{1,128})$")]
#[allow(dead_code)]
pub struct MemoryScopePattern(String);

/// Matches `*` (any run, including empty) and `?` (one byte). Iterative with one backtrack
/// point, so it is linear in practice and never recurses on hostile patterns.
pub fn glob_match(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && (pattern[p] == b'?' || pattern[p] == text[t]) {
            p += 1;
            t += 1;
        } else if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, t));
            p += 1;
        } else if let Some((sp, st)) = star {
            p = sp + 1;
            t = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&b| b == b'*')
}

/// A memory scope (spec §4): `*`, or a store (`kv`, `semantic`) with a glob over keys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(try_from = "String", into = "String")]
pub struct MemoryScope(String);

impl TryFrom<String> for MemoryScope {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        if s == "*" {
            return Ok(MemoryScope(s));
        }
        match s.split_once(':') {
            Some(("kv" | "semantic", glob)) if !glob.is_empty() && !crate::text::longer_than(glob, MAX_PATTERN_LEN) => {
                Ok(MemoryScope(s))
            }
            _ => Err(format!("`{s}` is not a memory scope: write `*`, `kv:<glob>` or `semantic:<glob>`")),
        }
    }
}

impl From<MemoryScope> for String {
    fn from(s: MemoryScope) -> String {
        s.0
    }
}

impl MemoryScope {
    /// Whether this scope reaches into `store` (`kv` or `semantic`) at all.
    pub fn covers_store(&self, store: &str) -> bool {
        self.0 == "*" || self.0.split_once(':').is_some_and(|(s, _)| s == store)
    }

    /// Whether this scope covers `name` in `store`: a key of the key/value store, a category
    /// of the semantic store. The glob is matched byte for byte.
    pub fn covers(&self, store: MemoryStore, name: &str) -> bool {
        if self.0 == "*" {
            return true;
        }
        match self.0.split_once(':') {
            Some((s, glob)) if s == store.as_str() => glob_match(glob.as_bytes(), name.as_bytes()),
            _ => false,
        }
    }
}

/// The two memory stores a scope can name (spec §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryStore {
    /// `kv:`: exact keys, matched against key names.
    Kv,
    /// `semantic:`: the semantic store, matched against categories.
    Semantic,
}

impl MemoryStore {
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryStore::Kv => "kv",
            MemoryStore::Semantic => "semantic",
        }
    }
}

/// Reading or writing memory: which of `memory_read` and `memory_write` decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryAccess {
    Read,
    Write,
}

impl MemoryAccess {
    /// The `[capabilities]` key that holds the scopes for this access.
    pub fn key(self) -> &'static str {
        match self {
            MemoryAccess::Read => "memory_read",
            MemoryAccess::Write => "memory_write",
        }
    }
}

/// An agent's `[capabilities]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Capabilities {
    /// Tools the agent may call.
    pub tools: Vec<Grant>,
    /// Tools refused even when `tools` allows them; a deny always wins.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<Grant>,
    /// Memory the agent may read; absent = open (spec §4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_read: Option<Vec<MemoryScope>>,
    /// Memory the agent may write; absent = open.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_write: Option<Vec<MemoryScope>>,
}

impl Capabilities {
    /// The declared scopes for `access`; `None` when none are declared (open).
    fn scopes(&self, access: MemoryAccess) -> Option<&[MemoryScope]> {
        match access {
            MemoryAccess::Read => self.memory_read.as_deref(),
            MemoryAccess::Write => self.memory_write.as_deref(),
        }
    }

    /// Why `access` to `store` is withdrawn altogether, if it is: scopes are declared and
    /// none of them names the store. What the agent layer of availability reports.
    pub fn memory_withdrawn(&self, access: MemoryAccess, store: MemoryStore) -> Option<String> {
        let scopes = self.scopes(access)?;
        (!scopes.iter().any(|s| s.covers_store(store.as_str()))).then(|| {
            let what = match store {
                MemoryStore::Kv => "the key/value store",
                MemoryStore::Semantic => "the semantic store",
            };
            format!(
                "its {} scopes ({}) do not reach {what}: add `{}:*` (or a narrower glob) to capabilities.{}",
                access.key(),
                list_scopes(scopes),
                store.as_str(),
                access.key()
            )
        })
    }

    /// Whether `access` may touch `name` (a key or a category) in `store`. No scopes
    /// declared: open.
    pub fn memory_allows(&self, access: MemoryAccess, store: MemoryStore, name: &str) -> bool {
        self.scopes(access).is_none_or(|scopes| scopes.iter().any(|s| s.covers(store, name)))
    }

    /// The refusal for `name` outside the scopes, naming what they are.
    pub fn memory_refusal(&self, access: MemoryAccess, store: MemoryStore, name: &str) -> crate::Error {
        let what = match store {
            MemoryStore::Kv => "key",
            MemoryStore::Semantic => "category",
        };
        let scopes = self.scopes(access).map(list_scopes).unwrap_or_default();
        crate::Error::forbidden(format!(
            "the {what} `{name}` is outside this agent's capabilities.{} ({scopes})",
            access.key()
        ))
    }
}

fn list_scopes(scopes: &[MemoryScope]) -> String {
    scopes.iter().map(|s| format!("`{}`", s.0)).collect::<Vec<_>>().join(", ")
}

/// Why a tool is or is not in an agent's effective set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision<'a> {
    Allowed { by: &'a Grant },
    Denied { by: &'a Grant },
    NotGranted,
}

impl Capabilities {
    pub fn decide(&self, tool: &ToolDef) -> Decision<'_> {
        if let Some(by) = self.deny.iter().find(|g| g.matches(tool)) {
            return Decision::Denied { by };
        }
        match self.tools.iter().find(|g| g.matches(tool)) {
            Some(by) => Decision::Allowed { by },
            None => Decision::NotGranted,
        }
    }

    pub fn allows(&self, tool: &ToolDef) -> bool {
        matches!(self.decide(tool), Decision::Allowed { .. })
    }

    /// Whether these capabilities give `reach`: its exact grant, not denied.
    pub fn reaches(&self, reach: Reach) -> bool {
        let grant = reach.grant();
        self.tools.contains(&grant) && !self.deny.contains(&grant)
    }

    /// What of `self` (an agent type's or a child's capabilities, as asked for) `maker` may
    /// give, with `self`'s deny list and memory scopes kept: each of `self`'s grants that
    /// `maker` holds as it is (or under `*`) and may use every tool of; the exact names of the
    /// other tools both allow; and the reaches both have. The second value names what was
    /// dropped: each tool `self` asked for that `maker` may not call, and each reach it lacks.
    pub fn narrowed_to<'a>(
        &self,
        maker: &Capabilities,
        tools: impl Iterator<Item = &'a ToolDef>,
    ) -> (Capabilities, Vec<String>) {
        let tools: Vec<&ToolDef> = tools.collect();
        let holds_as_is = |g: &Grant| {
            g.reach().is_none()
                && (maker.tools.contains(g) || maker.tools.iter().any(|m| m.as_str() == "*"))
                && tools.iter().filter(|t| g.matches(t)).all(|t| maker.allows(t))
        };
        let as_is: Vec<Grant> = self.tools.iter().filter(|g| holds_as_is(g)).cloned().collect();
        let (mut kept, mut dropped) = (as_is.clone(), Vec::new());
        for tool in tools.iter().filter(|t| self.allows(t) && !as_is.iter().any(|g| g.matches(t))) {
            if maker.allows(tool) {
                kept.extend(Grant::parse(&tool.name).ok());
            } else {
                dropped.push(tool.name.clone());
            }
        }
        for reach in Reach::ALL.into_iter().filter(|r| self.reaches(*r)) {
            if maker.reaches(reach) {
                kept.push(reach.grant());
            } else {
                dropped.push(reach.pattern().to_string());
            }
        }
        dropped.sort();
        (Capabilities { tools: kept, ..self.clone() }, dropped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(name: &'static str, family: &'static str) -> ToolDef {
        ToolDef::new(name, family, "test tool")
    }

    #[test]
    fn glob_matching() {
        assert!(glob_match(b"memory_*", b"memory_store"));
        assert!(glob_match(b"memory_*", b"memory_"));
        assert!(!glob_match(b"memory_*", b"memor"));
        assert!(glob_match(b"*", b"anything"));
        assert!(glob_match(b"*_time", b"system_time"));
        assert!(glob_match(b"a*b*c", b"aXXbYYc"));
        assert!(!glob_match(b"a*b*c", b"aXXbYY"));
        assert!(glob_match(b"task_????", b"task_post"));
        assert!(!glob_match(b"task_???", b"task_post"));
        assert!(!glob_match(b"system_time", b"system_times"));
        // Hostile pattern stays fast.
        assert!(!glob_match(b"*a*a*a*a*a*a*a*b", &[b'a'; 200]));
    }

    #[test]
    fn family_grants_match_the_family_only() {
        let g = Grant::parse("browser.*").unwrap();
        assert!(g.matches(&def("browser_click", "browser")));
        assert!(!g.matches(&def("browser_click", "media")));
        assert!(!g.matches(&def("system_time", "system")));
    }

    #[test]
    fn bad_patterns_are_refused_with_a_reason() {
        assert!(Grant::parse("").is_err());
        assert!(Grant::parse("Browser.*").unwrap_err().contains("family"));
        assert!(Grant::parse("rm -rf").unwrap_err().contains("` `"));
        assert!(Grant::parse("a.b").is_err());
        assert!(Grant::parse(&"x".repeat(200)).is_err());
        assert!(Grant::parse("mcp__github__*").is_ok());
    }

    #[test]
    fn deny_wins_over_allow() {
        let caps = Capabilities {
            tools: vec![Grant::parse("agents.*").unwrap()],
            deny: vec![Grant::parse("agent_spawn").unwrap()],
            ..Default::default()
        };
        assert!(caps.allows(&def("agent_list", "agents")));
        assert!(matches!(caps.decide(&def("agent_spawn", "agents")), Decision::Denied { .. }));
        assert_eq!(caps.decide(&def("system_time", "system")), Decision::NotGranted);
    }

    #[test]
    fn memory_scopes() {
        let kv = MemoryScope::try_from("kv:*".to_string()).unwrap();
        assert!(kv.covers_store("kv"));
        assert!(!kv.covers_store("semantic"));
        assert!(MemoryScope::try_from("*".to_string()).unwrap().covers_store("semantic"));
        assert!(MemoryScope::try_from("files:*".to_string()).is_err());
        let notes = MemoryScope::try_from("semantic:note*".to_string()).unwrap();
        assert!(notes.covers(MemoryStore::Semantic, "notes") && !notes.covers(MemoryStore::Semantic, "person"));
        assert!(!notes.covers(MemoryStore::Kv, "notes"), "a semantic scope never opens a key");
    }

    #[test]
    fn memory_access_is_open_until_declared_and_then_only_what_the_scopes_cover() {
        let scope = |s: &str| MemoryScope::try_from(s.to_string()).unwrap();
        let open = Capabilities::default();
        assert!(open.memory_allows(MemoryAccess::Write, MemoryStore::Kv, "anything"));
        assert_eq!(open.memory_withdrawn(MemoryAccess::Read, MemoryStore::Semantic), None);

        let kv_only = Capabilities { memory_read: Some(vec![scope("kv:*")]), ..Default::default() };
        let why = kv_only.memory_withdrawn(MemoryAccess::Read, MemoryStore::Semantic).unwrap();
        assert!(why.contains("`kv:*`") && why.contains("semantic:*"), "{why}");
        assert_eq!(kv_only.memory_withdrawn(MemoryAccess::Read, MemoryStore::Kv), None);
        assert_eq!(kv_only.memory_withdrawn(MemoryAccess::Write, MemoryStore::Semantic), None, "writes stay open");

        let prefs = Capabilities { memory_write: Some(vec![scope("kv:prefs.*")]), ..Default::default() };
        assert!(prefs.memory_allows(MemoryAccess::Write, MemoryStore::Kv, "prefs.theme"));
        assert!(!prefs.memory_allows(MemoryAccess::Write, MemoryStore::Kv, "secrets"));
        let e = prefs.memory_refusal(MemoryAccess::Write, MemoryStore::Kv, "secrets");
        assert!(e.message.contains("`secrets`") && e.message.contains("memory_write"), "{e}");
    }
}
