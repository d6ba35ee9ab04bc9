//! The secret egress check: before a call that sends something out of the daemon (a channel
//! message, an A2A task, a page the browser opens or types into, an MCP call, a note to the
//! owner), its arguments are searched for secrets the daemon knows and for the shapes of
//! well-known credentials. A match refuses the call; the refusal and the audit name the rule,
//! never the secret.

use base64::Engine;
use regex::RegexSet;
use serde_json::Value;

use crate::capability::glob_match;

/// The tools whose arguments leave the daemon: messages, remote agents (a card fetched from an
/// address the model chose), pages opened, typed into or scripted, notes fanned out, MCP servers.
const SINKS: &[&str] = &[
    "channel_send",
    "channel_dm",
    "a2a_send",
    "a2a_discover",
    "browser_navigate",
    "browser_type",
    "browser_run_js",
    "notify_owner",
    "mcp__*",
    "mcp_resources",
    "mcp_prompts",
];

/// Environment variables whose values are secrets whatever config names them.
const SECRET_SUFFIXES: &[&str] = &["_KEY", "_TOKEN", "_SECRET", "_PASSWORD"];

/// A value shorter than this is not searched for (`KENNEL_X_KEY=1` would match every digit).
const SHORTEST_SECRET: usize = 8;

/// Credential shapes, by the name a refusal gives them.
const SHAPES: &[(&str, &str)] = &[
    ("a Kennel API token", r"\bkn_[0-9a-f]{32,}"),
    ("the Kennel CLI token", r"\bkncli_[0-9a-f]{32,}"),
    ("an OpenAI or Anthropic API key", r"\bsk-(ant-)?[A-Za-z0-9_-]{20,}"),
    ("an AWS access key", r"\b(AKIA|ASIA)[0-9A-Z]{16}\b"),
    ("a GitHub token", r"\b(gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})"),
    ("a Slack token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    ("a Google API key", r"\bAIza[0-9A-Za-z_-]{35}"),
    ("a Telegram bot token", r"\b[0-9]{8,10}:[A-Za-z0-9_-]{35}\b"),
    ("a private key", r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
];

/// What was found: the rule, in words a refusal can show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding(pub String);

/// The secrets and shapes one daemon looks for.
pub struct SecretScan {
    /// Each known secret's name (its variable) and the forms it is searched in: as it is, and
    /// base64 at each of the three alignments a longer text may put it in.
    known: Vec<(String, Vec<String>)>,
    shapes: RegexSet,
}

impl SecretScan {
    /// The secrets in this process's environment: every variable whose name ends in `_KEY`,
    /// `_TOKEN`, `_SECRET` or `_PASSWORD` (the names providers, channels and the rest are told
    /// to use), `KENNEL_DATABASE_URL`, and whatever other variable `config` names for a secret
    /// (a hand-edited file may name any).
    pub fn from_env(config: &crate::config::Config) -> SecretScan {
        SecretScan::from_vars(config, std::env::vars())
    }

    /// [`SecretScan::from_env`] over the variables `vars`.
    fn from_vars(config: &crate::config::Config, vars: impl IntoIterator<Item = (String, String)>) -> SecretScan {
        let mut named: std::collections::BTreeSet<String> = config
            .providers
            .values()
            .filter_map(|p| p.api_key_env.clone())
            .chain(
                config
                    .channels
                    .channels
                    .values()
                    .flat_map(|c| [c.token_env.clone(), c.signing_secret_env.clone()])
                    .flatten(),
            )
            .chain(config.notify.smtp_password_env.clone())
            .collect();
        named.insert(crate::config::DATABASE_URL_ENV.to_string());
        let secrets = vars
            .into_iter()
            .filter(|(name, _)| SECRET_SUFFIXES.iter().any(|s| name.ends_with(s)) || named.contains(name));
        SecretScan::of(secrets)
    }

    pub fn of(secrets: impl IntoIterator<Item = (String, String)>) -> SecretScan {
        let known = secrets
            .into_iter()
            .filter(|(_, value)| value.trim().len() >= SHORTEST_SECRET)
            .map(|(name, value)| {
                let value = value.trim().to_string();
                let mut forms = encoded_forms(&value);
                forms.insert(0, value);
                (name, forms)
            })
            .collect();
        let shapes = RegexSet::new(SHAPES.iter().map(|(_, pattern)| pattern)).expect("the credential shapes compile");
        SecretScan { known, shapes }
    }

    /// Whether `tool` sends its arguments out of the daemon.
    pub fn is_sink(tool: &str) -> bool {
        SINKS.iter().any(|s| glob_match(s.as_bytes(), tool.as_bytes()))
    }

    /// The first secret or credential shape in any string of `args` (keys included).
    pub fn find(&self, args: &Value) -> Option<Finding> {
        let mut texts = Vec::new();
        strings(args, &mut texts);
        texts.iter().find_map(|text| self.find_in(text))
    }

    fn find_in(&self, text: &str) -> Option<Finding> {
        // A URL may carry a secret percent-encoded, even twice over.
        let mut candidates = vec![text.to_string()];
        while candidates.len() < 4
            && let Some(decoded) = percent_decoded(candidates.last().expect("one at least"))
            && !candidates.contains(&decoded)
        {
            candidates.push(decoded);
        }
        for candidate in candidates.iter().map(String::as_str) {
            if let Some((name, _)) = self.known.iter().find(|(_, forms)| forms.iter().any(|f| candidate.contains(f))) {
                return Some(Finding(format!("the value of ${name}")));
            }
            if let Some(i) = self.shapes.matches(candidate).iter().next() {
                return Some(Finding(SHAPES[i].0.to_string()));
            }
        }
        None
    }
}

/// Base64 of `secret` as it shows inside the base64 of a longer text, at each of the three
/// byte alignments: the characters that depend only on the secret's own bytes.
fn encoded_forms(secret: &str) -> Vec<String> {
    let engine = base64::engine::general_purpose::STANDARD;
    let mut forms = Vec::new();
    for pad in 0..3 {
        let mut bytes = vec![0u8; pad];
        bytes.extend_from_slice(secret.as_bytes());
        let encoded = engine.encode(&bytes);
        // Skip the characters the padding bytes touched, and the last group, which the bytes
        // after the secret change.
        let skip = if pad == 0 { 0 } else { (pad * 8).div_ceil(6) };
        let whole = (pad + secret.len()) / 3 * 4;
        if whole > skip + SHORTEST_SECRET {
            let form = &encoded[skip..whole];
            // The URL-safe alphabet differs only where `+` or `/` fall.
            forms.push(form.replace('+', "-").replace('/', "_"));
            forms.push(form.to_string());
        }
    }
    let hex = hex::encode(secret.as_bytes());
    forms.push(hex.to_uppercase());
    forms.push(hex);
    forms.dedup();
    forms
}

fn strings<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::String(s) => out.push(s),
        Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
        Value::Object(map) => map.iter().for_each(|(k, v)| {
            out.push(k);
            strings(v, out);
        }),
        _ => {}
    }
}

/// `text` with its `%XX` escapes decoded, when it has any.
fn percent_decoded(text: &str) -> Option<String> {
    if !text.contains('%') {
        return None;
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (b'+', _) => {
                out.push(b' ');
                i += 1;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn scan() -> SecretScan {
        SecretScan::of([("LOCAL_API_KEY".to_string(), "zq8-local-provider-secret".to_string())])
    }

    #[test]
    fn a_known_secret_is_found_as_it_is_encoded_and_inside_a_url() {
        let secret = "zq8-local-provider-secret";
        let found = Some(Finding("the value of $LOCAL_API_KEY".into()));
        assert_eq!(scan().find(&json!({"text": format!("here: {secret}")})), found);
        assert_eq!(scan().find(&json!({"url": "https://x.example/?k=zq8%2Dlocal%2Dprovider%2Dsecret"})), found);
        assert_eq!(scan().find(&json!({"nested": [{"deep": hex::encode(secret)}]})), found);
        assert_eq!(scan().find(&json!({"deep": hex::encode(secret).to_uppercase()})), found);
        assert_eq!(scan().find(&json!({"url": "https://x.example/?k=zq8%252Dlocal%252Dprovider%252Dsecret"})), found);
        let engines = [base64::engine::general_purpose::STANDARD, base64::engine::general_purpose::URL_SAFE_NO_PAD];
        for (engine, prefix) in engines.iter().flat_map(|e| ["", "a", "ab", "abc", "?>?"].map(|p| (e, p))) {
            let text = engine.encode(format!("{prefix}{secret} and more??>"));
            assert_eq!(scan().find(&json!({ "text": text })), found, "base64 after {prefix:?}");
        }
        assert_eq!(scan().find(&json!({"text": "nothing secret here"})), None);
    }

    #[test]
    fn credential_shapes_are_named_not_shown() {
        let cases = [
            ("kn_0123456789abcdef0123456789abcdef", "a Kennel API token"),
            ("sk-ant-abcdefghijklmnopqrstuvwxyz", "an OpenAI or Anthropic API key"),
            ("AKIAABCDEFGHIJKLMNOP", "an AWS access key"),
            ("-----BEGIN OPENSSH PRIVATE KEY-----", "a private key"),
            ("ghp_abcdefghijklmnopqrstuvwxyz0123456789", "a GitHub token"),
        ];
        for (text, named) in cases {
            assert_eq!(scan().find(&json!({ "text": format!("x {text} y") })), Some(Finding(named.into())), "{text}");
        }
    }

    #[test]
    fn a_variable_config_names_for_a_secret_is_one_whatever_its_name() {
        let config = crate::config::parse_for_test(
            "[providers.local]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:1/v1\"\napi_key_env = \"LOCAL_LLM_CREDS\"\n",
        )
        .expect("a config");
        let vars = [
            ("LOCAL_LLM_CREDS", "zq8-named-in-config-only"),
            ("UNRELATED_SETTING", "zq8-not-a-secret-at-all"),
            ("KENNEL_DATABASE_URL", "postgres://kennel:zq8-db-password@db/kennel"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()));
        let scan = SecretScan::from_vars(&config, vars);
        assert_eq!(
            scan.find(&json!({"t": "zq8-named-in-config-only"})),
            Some(Finding("the value of $LOCAL_LLM_CREDS".into()))
        );
        assert!(scan.find(&json!({"t": "postgres://kennel:zq8-db-password@db/kennel"})).is_some());
        assert_eq!(scan.find(&json!({"t": "zq8-not-a-secret-at-all"})), None);
    }

    #[test]
    fn short_values_are_not_secrets_and_sinks_are_the_outbound_tools() {
        assert!(SecretScan::of([("X_KEY".to_string(), "1".to_string())]).find(&json!({"t": "1 2 3"})).is_none());
        assert!(SecretScan::is_sink("channel_send") && SecretScan::is_sink("mcp__github__issues"));
        assert!(
            SecretScan::is_sink("a2a_discover")
                && SecretScan::is_sink("browser_run_js")
                && SecretScan::is_sink("mcp_resources")
        );
        assert!(!SecretScan::is_sink("memory_store") && !SecretScan::is_sink("process_start"));
    }
}
