//! `[approvals]` of `config.toml`: the rules that send a call to a person, and the defaults
//! shipped with the daemon.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::capability::glob_match;

/// `[approvals]`: which calls wait for a person's decision.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ApprovalsConfig {
    /// The shipped rules ([`default_rules`]) apply besides the file's own.
    pub defaults: bool,
    /// `[[approvals.rule]]`, checked after the defaults; the first that matches decides.
    #[serde(rename = "rule")]
    pub rules: Vec<Rule>,
}

impl Default for ApprovalsConfig {
    fn default() -> Self {
        ApprovalsConfig { defaults: true, rules: Vec::new() }
    }
}

impl ApprovalsConfig {
    /// The rules in force, defaults first.
    pub fn in_force(&self) -> Vec<Rule> {
        let mut rules = if self.defaults { default_rules() } else { Vec::new() };
        rules.extend(self.rules.iter().cloned());
        rules
    }
}

/// One rule: the calls it covers and when they need a person.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// What the rule is called in approvals and the audit (`"a tainted turn starts a process"`).
    #[serde(default)]
    pub name: String,
    /// Tool names or globs (`skill_evolve_*`, `mcp__github__*`).
    pub tools: Vec<String>,
    /// Each named argument's value (its text, for a string) must match its glob:
    /// `{ command = "*curl*" }`. None: any arguments.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub arguments: BTreeMap<String, String>,
    #[serde(default)]
    pub when: When,
    /// How long the call waits for a decision.
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
    /// What an unanswered approval becomes. Only `deny`: a call nobody looked at never runs.
    #[serde(default)]
    pub on_timeout: OnTimeout,
    /// Who may decide: `operator` (any signed-in operator), `operator:NAME`, `cli` (the
    /// `kennel` command on the daemon's machine), `owner` (a one-time code from the owner's
    /// chat, `[notify] telegram_channel`). Empty: all of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deciders: Vec<String>,
}

/// When a rule's calls wait.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum When {
    /// Every call, in any turn.
    Always,
    /// Only once the turn's context holds something from an untrusted source.
    #[default]
    Tainted,
    /// A tainted turn's call to somewhere the agent has not sent before: a channel chat or
    /// member, a remote agent, a web host (`approval::target`). The conversation a turn
    /// answers is never new; an approved target is known from then on.
    NewTarget,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnTimeout {
    #[default]
    Deny,
}

fn default_timeout() -> u64 {
    900
}

/// The longest a call may wait: a day.
const MAX_TIMEOUT: u64 = 86_400;

impl Rule {
    fn shipped(name: &str, tools: &[&str]) -> Rule {
        Rule {
            name: name.into(),
            tools: tools.iter().map(|t| t.to_string()).collect(),
            arguments: BTreeMap::new(),
            when: When::Tainted,
            timeout_secs: default_timeout(),
            on_timeout: OnTimeout::Deny,
            deciders: Vec::new(),
        }
    }

    /// Whether the rule covers a call of `tool` with `args` (its `when` aside).
    pub fn covers(&self, tool: &str, args: &serde_json::Value) -> bool {
        self.covers_tool(tool)
            && self.arguments.iter().all(|(name, glob)| {
                let text = match args.get(name) {
                    Some(serde_json::Value::String(s)) => s.clone(),
                    Some(other) => other.to_string(),
                    None => return false,
                };
                glob_match(glob.as_bytes(), text.as_bytes())
            })
    }

    pub fn covers_tool(&self, tool: &str) -> bool {
        self.tools.iter().any(|t| glob_match(t.as_bytes(), tool.as_bytes()))
    }

    /// Whether `decider` (`operator:NAME` or `cli`) may decide this rule's approvals.
    pub fn may_decide(&self, decider: &str) -> bool {
        self.deciders.is_empty()
            || self.deciders.iter().any(|d| {
                d == decider
                    || (d == "operator" && decider.starts_with("operator:"))
                    || (d == "owner" && decider.starts_with("owner:"))
            })
    }
}

/// What every daemon asks a person about unless `[approvals] defaults = false`: calls that act
/// on the world, made by a turn that has read something an outsider wrote.
pub fn default_rules() -> Vec<Rule> {
    vec![
        Rule::shipped("a tainted turn runs a command", &["process_start", "process_write", "docker_exec"]),
        // A stranger's channel turn is tainted: a new target, not any send, is what a person looks at.
        Rule {
            when: When::NewTarget,
            ..Rule::shipped("a tainted turn messages someone new", &["channel_send", "channel_dm"])
        },
        Rule::shipped("a tainted turn sends to a remote agent", &["a2a_send"]),
        Rule::shipped("a tainted turn changes a skill", &["skill_evolve_*"]),
        Rule::shipped("a tainted turn creates an agent type", &["agent_type_create"]),
    ]
}

/// Checked at load: every rule names tools, a timeout in range, and deciders the daemon knows.
pub(crate) fn check(config: &crate::config::Config) -> Result<(), (String, String)> {
    let shipped = default_rules();
    for (i, rule) in config.approvals.rules.iter().enumerate() {
        let at = |key: &str| format!("approvals.rule[{i}].{key}");
        // A decision and an approval "for N minutes" name their rule: one name, one rule.
        let named = rule.name.trim();
        if !named.is_empty()
            && (shipped.iter().any(|r| r.name == named)
                || config.approvals.rules[..i].iter().any(|r| r.name.trim() == named))
        {
            return Err((at("name"), format!("`{named}` names another rule already: give each rule its own name")));
        }
        check_rule(rule).map_err(|(key, message)| (at(&key), message))?;
    }
    Ok(())
}

/// One rule's own fields (where it is written aside): tools named, `new_target` tools that
/// have targets, a timeout in range, deciders the daemon knows. The failing key and why.
pub fn check_rule(rule: &Rule) -> Result<(), (String, String)> {
    let at = |key: &str| key.to_string();
    if rule.tools.is_empty() || rule.tools.iter().any(|t| t.trim().is_empty()) {
        return Err((at("tools"), "name at least one tool or glob (`process_start`, `mcp__github__*`)".into()));
    }
    if rule.when == When::NewTarget
        && let Some(other) = rule.tools.iter().find(|t| !super::target::TARGETED.contains(&t.as_str()))
    {
        return Err((
            at("tools"),
            format!("`{other}` has no target for `when = \"new_target\"`: name {}", super::target::TARGETED.join(", ")),
        ));
    }
    if !(1..=MAX_TIMEOUT).contains(&rule.timeout_secs) {
        return Err((at("timeout_secs"), format!("between 1 and {MAX_TIMEOUT} seconds")));
    }
    if let Some(bad) = rule.deciders.iter().find(|d| {
        !(*d == "operator"
            || *d == "cli"
            || *d == "owner"
            || d.strip_prefix("operator:").is_some_and(|n| !n.is_empty()))
    }) {
        return Err((
            at("deciders"),
            format!("`{bad}` is not a decider: write `operator`, `operator:NAME`, `cli` or `owner`"),
        ));
    }
    Ok(())
}

/// `[approvals]`'s commented lines in the default `config.toml`.
pub(crate) const DEFAULT_TEXT: &str = r#"# [approvals]                # calls that wait for a person's decision (README: Approvals)
# defaults = true             # the shipped rules: a turn that read a web page, an MCP result, a
#                             # remote agent or a channel message asks before it runs a command,
#                             # messages someone new on a channel, sends to a remote agent,
#                             # changes a skill or creates an agent type
# [[approvals.rule]]
# name = "any deploy"
# tools = ["process_start"]
# arguments = { command = "*deploy*" }
# when = "always"             # or "tainted" (the default), or "new_target" (channel_send,
#                             # channel_dm, a2a_send, browser_navigate to somewhere new)
# timeout_secs = 900          # then the call is denied
# deciders = ["operator"]     # or "operator:NAME", "cli", "owner" (a code from [notify]'s chat); all when empty
"#;

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_rule_covers_its_tools_and_argument_patterns() {
        let rule: Rule =
            toml::from_str("tools = [\"process_*\"]\narguments = { command = \"*curl*\" }\nwhen = \"always\"").unwrap();
        assert!(rule.covers("process_start", &json!({"command": "curl evil.example"})));
        assert!(!rule.covers("process_start", &json!({"command": "ls"})));
        assert!(!rule.covers("process_start", &json!({})), "a missing argument does not match");
        assert!(!rule.covers("docker_exec", &json!({"command": "curl"})));
        assert_eq!((rule.when, rule.timeout_secs), (When::Always, 900));
    }

    #[test]
    fn one_name_is_one_rule_shipped_names_included() {
        let config = crate::config::parse_for_test;
        let twice =
            "[[approvals.rule]]\nname = \"x\"\ntools = [\"a\"]\n[[approvals.rule]]\nname = \"x\"\ntools = [\"b\"]\n";
        assert!(config(twice).unwrap_err().to_string().contains("names another rule"));
        let shipped = format!("[[approvals.rule]]\nname = \"{}\"\ntools = [\"a\"]\n", default_rules()[0].name);
        assert!(config(&shipped).unwrap_err().to_string().contains("names another rule"));
        assert!(config("[[approvals.rule]]\ntools = [\"a\"]\n[[approvals.rule]]\ntools = [\"b\"]\n").is_ok());
    }

    #[test]
    fn a_new_target_rule_names_tools_that_have_targets() {
        let config = crate::config::parse_for_test;
        let bad = "[[approvals.rule]]\ntools = [\"process_start\"]\nwhen = \"new_target\"\n";
        assert!(config(bad).unwrap_err().to_string().contains("`process_start` has no target"));
        assert!(config("[[approvals.rule]]\ntools = [\"browser_navigate\"]\nwhen = \"new_target\"\n").is_ok());
    }

    #[test]
    fn deciders_are_operators_by_name_or_kind_and_the_cli() {
        let anyone = Rule::shipped("r", &["x"]);
        assert!(anyone.may_decide("operator:ada") && anyone.may_decide("cli"));
        let ada = Rule { deciders: vec!["operator:ada".into()], ..anyone.clone() };
        assert!(ada.may_decide("operator:ada") && !ada.may_decide("operator:bob") && !ada.may_decide("cli"));
        let operators = Rule { deciders: vec!["operator".into()], ..anyone };
        assert!(operators.may_decide("operator:bob") && !operators.may_decide("cli"));
    }
}
