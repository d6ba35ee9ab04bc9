//! `[exec_policy]` applied to one `process_start`: the command it may run and the
//! environment the child gets.
//!
//! The environment is built, never inherited: a minimal base, the daemon variables
//! `pass_env` names, then the call's own `env`. Nothing else of the daemon's environment
//! reaches a child, so provider keys cannot leak by omission; names `secret_env` matches (and
//! every provider's `api_key_env`) are refused even when named.

use std::collections::BTreeMap;
use std::path::Path;

use crate::capability::glob_match;
use crate::config::Config;
use crate::error::{Error, Result};

/// The daemon variables every child gets when the daemon has them.
const BASE: [&str; 5] = ["PATH", "LANG", "LC_ALL", "TZ", "TMPDIR"];
/// A `PATH` for a daemon started without one.
const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";
const MAX_ENV_VARS: usize = 64;
const MAX_ENV_VALUE_BYTES: usize = 32 * 1024;
pub(super) const MAX_COMMAND_BYTES: usize = 64 * 1024;

/// The daemon's variables that every program Kennel starts gets (children of `process_start`,
/// Chromium, ffmpeg), with a `PATH` when the daemon has none. Nothing else of the daemon's
/// environment — provider keys, tokens, the CLI token's path — reaches them by omission.
pub(crate) fn base_environment(daemon: impl Fn(&str) -> Option<String>) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> =
        BASE.iter().filter_map(|name| daemon(name).map(|value| (name.to_string(), value))).collect();
    env.entry("PATH".into()).or_insert_with(|| DEFAULT_PATH.into());
    env
}

/// What a child may and may not get, read once from the config.
pub(crate) struct Policy {
    allowed_commands: Option<Vec<String>>,
    pass_env: Vec<String>,
    secret_env: Vec<String>,
}

impl Policy {
    pub fn new(config: &Config) -> Policy {
        Policy {
            allowed_commands: config.exec_policy.allowed_commands.clone(),
            pass_env: config.exec_policy.pass_env.clone(),
            secret_env: config.secret_env_names(),
        }
    }

    /// Refuses a command line `allowed_commands` does not let through.
    pub fn check_command(&self, line: &str) -> Result<()> {
        if line.trim().is_empty() {
            return Err(Error::invalid("the command is empty").with_field("command"));
        }
        if line.len() > MAX_COMMAND_BYTES {
            return Err(Error::invalid(format!("a command is at most {MAX_COMMAND_BYTES} bytes")).with_field("command"));
        }
        if line.contains('\0') {
            return Err(Error::invalid("the command has a NUL byte").with_field("command"));
        }
        let Some(allowed) = &self.allowed_commands else { return Ok(()) };
        // With a list, the line must start one command and only one: each of these could
        // start another after (or inside) the first word that was checked. The shell splits
        // words at spaces and tabs only, so anything else unusual (a no-break space, other
        // control characters) is refused rather than read differently from the shell.
        if let Some(c) = line.chars().find(|c| {
            matches!(c, ';' | '&' | '|' | '`' | '$' | '<' | '>' | '(' | ')')
                || !(c.is_ascii_graphic() || *c == ' ' || *c == '\t')
        }) {
            return Err(Error::forbidden(format!(
                "[exec_policy] allowed_commands is set, so a command is one simple command in plain ASCII: {c:?} is not allowed"
            )));
        }
        let first = line.split([' ', '\t']).find(|w| !w.is_empty()).unwrap_or_default();
        // A name, never a path: `./x` or `/tmp/x/cargo` would run a file the agent wrote.
        let is_name = first.bytes().all(|b| b.is_ascii_alphanumeric() || b"._+-".contains(&b));
        if is_name && allowed.iter().any(|a| a == first) {
            Ok(())
        } else {
            Err(Error::forbidden(format!(
                "`{first}` is not in [exec_policy] allowed_commands ({})",
                allowed.iter().map(|a| format!("`{a}`")).collect::<Vec<_>>().join(", ")
            )))
        }
    }

    /// The child's whole environment: the base, `pass_env`, `HOME` and `TERM=dumb`, then the
    /// call's `env` (checked). The call may never set a variable that loads code into the
    /// programs it runs or configures them from elsewhere (`LD_*`, `GIT_CONFIG_*`, `PYTHON*`,
    /// `BASH_ENV`…: [`loads_code`]); with `allowed_commands`, nor `PATH`.
    pub fn environment(
        &self,
        home: &Path,
        call: &BTreeMap<String, String>,
        daemon: impl Fn(&str) -> Option<String>,
    ) -> Result<BTreeMap<String, String>> {
        if call.len() > MAX_ENV_VARS {
            return Err(Error::invalid(format!("at most {MAX_ENV_VARS} variables")).with_field("env"));
        }
        let mut env = base_environment(&daemon);
        for name in &self.pass_env {
            if let Some(value) = daemon(name) {
                env.insert(name.clone(), value);
            }
        }
        env.retain(|name, _| name == "PATH" || !self.is_secret(name));
        env.insert("HOME".into(), home.display().to_string());
        env.insert("TERM".into(), "dumb".into());
        for (name, value) in call {
            let field = format!("env.{name}");
            if !is_variable_name(name) {
                return Err(Error::invalid(format!(
                    "`{name}` is not a variable name (letters, digits, `_`; not a digit first)"
                ))
                .with_field(&field));
            }
            if loads_code(name) {
                return Err(Error::forbidden(format!(
                    "`{name}` loads code into the programs a child runs, or configures them from elsewhere: a call cannot set it"
                ))
                .with_field(&field));
            }
            if self.allowed_commands.is_some() && name == "PATH" {
                return Err(Error::forbidden(
                    "`PATH` changes which program runs: not settable while [exec_policy] allowed_commands is set",
                )
                .with_field(&field));
            }
            if self.is_secret(name) {
                return Err(Error::forbidden(format!(
                    "`{name}` is a secret ([exec_policy] secret_env or a provider's api_key_env): children never get it"
                )));
            }
            if value.len() > MAX_ENV_VALUE_BYTES || value.contains('\0') {
                return Err(Error::invalid(format!("a value is at most {MAX_ENV_VALUE_BYTES} bytes, without NUL"))
                    .with_field(&field));
            }
            env.insert(name.clone(), value.clone());
        }
        Ok(env)
    }

    fn is_secret(&self, name: &str) -> bool {
        self.secret_env.iter().any(|s| glob_match(s.as_bytes(), name.as_bytes()))
    }
}

/// Variables that load code into a program (`LD_PRELOAD`, `PYTHONSTARTUP`, `NODE_OPTIONS`,
/// `RUSTC_WRAPPER`), make the shell run code (`BASH_ENV`, `SHELLOPTS` with `PS4`, `IFS`
/// changing how it splits words), or configure a program from elsewhere (git's
/// `GIT_CONFIG_*`, `GIT_SSH_COMMAND`, `GIT_EXEC_PATH`…: with them `git` runs any command), and
/// `HOME` and `TMPDIR`, which are the sandbox's. Git's identity variables stay settable.
fn loads_code(name: &str) -> bool {
    const NAMES: [&str; 17] = [
        "HOME",
        "TMPDIR",
        "IFS",
        "ENV",
        "BASH_ENV",
        "SHELLOPTS",
        "BASHOPTS",
        "PS4",
        "PROMPT_COMMAND",
        "PERLLIB",
        "NODE_OPTIONS",
        "NODE_PATH",
        "JAVA_TOOL_OPTIONS",
        "_JAVA_OPTIONS",
        "JDK_JAVA_OPTIONS",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
    ];
    const PREFIXES: [&str; 6] = ["LD_", "BASH_FUNC_", "PYTHON", "PERL5", "RUBY", "CARGO_"];
    const GIT_IDENTITY: [&str; 3] = ["GIT_AUTHOR_", "GIT_COMMITTER_", "GIT_TERMINAL_PROMPT"];
    NAMES.contains(&name)
        || PREFIXES.iter().any(|p| name.starts_with(p))
        || (name.starts_with("GIT_") && !GIT_IDENTITY.iter().any(|p| name.starts_with(p)))
}

fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= 256
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(toml: &str) -> Policy {
        Policy::new(&Config::parse(Path::new("config.toml"), toml).unwrap())
    }

    #[test]
    fn only_the_base_and_what_is_named_reach_a_child() {
        let p = policy(
            "[exec_policy]\npass_env = [\"CARGO_HOME\"]\n[providers.openai]\nkind = \"openai\"\nbase_url = \"http://x\"\napi_key_env = \"MY_KEY\"\n",
        );
        let daemon = |name: &str| Some(format!("daemon-{name}"));
        let call = BTreeMap::from([("GREETING".to_string(), "hi".to_string())]);
        let env = p.environment(Path::new("/w"), &call, daemon).unwrap();
        let names: Vec<&str> = env.keys().map(String::as_str).collect();
        assert_eq!(names, ["CARGO_HOME", "GREETING", "HOME", "LANG", "LC_ALL", "PATH", "TERM", "TMPDIR", "TZ"]);
        assert_eq!(env["HOME"], "/w");
        for secret in ["MY_KEY", "GITHUB_TOKEN", "DB_PASSWORD_FILE"] {
            let call = BTreeMap::from([(secret.to_string(), "x".to_string())]);
            let e = p.environment(Path::new("/w"), &call, daemon).unwrap_err();
            assert_eq!(e.kind, crate::error::ErrorKind::Forbidden, "{secret}");
        }
        let call = BTreeMap::from([("1BAD".to_string(), "x".to_string())]);
        assert_eq!(
            p.environment(Path::new("/w"), &call, daemon).unwrap_err().kind,
            crate::error::ErrorKind::InvalidArguments
        );
    }

    #[test]
    fn no_call_sets_a_variable_that_loads_code_or_configures_git() {
        let open = policy("");
        let refused = [
            "LD_PRELOAD",
            "GIT_CONFIG_COUNT",
            "GIT_CONFIG_KEY_0",
            "GIT_SSH_COMMAND",
            "GIT_EXEC_PATH",
            "PYTHONSTARTUP",
            "PYTHONPATH",
            "BASH_ENV",
            "NODE_OPTIONS",
            "PERL5OPT",
            "RUSTC_WRAPPER",
            "HOME",
        ];
        for name in refused {
            let call = BTreeMap::from([(name.to_string(), "x".to_string())]);
            let e = open.environment(Path::new("/w"), &call, |_| None).unwrap_err();
            assert_eq!(e.kind, crate::error::ErrorKind::Forbidden, "{name}");
        }
        for allowed in ["GIT_AUTHOR_NAME", "GIT_COMMITTER_EMAIL", "RUST_LOG", "GREETING"] {
            let call = BTreeMap::from([(allowed.to_string(), "x".to_string())]);
            assert!(open.environment(Path::new("/w"), &call, |_| None).is_ok(), "{allowed}");
        }
    }

    #[test]
    fn with_allowed_commands_the_call_cannot_change_what_runs() {
        let listed = policy("[exec_policy]\nallowed_commands = [\"cargo\"]\n");
        for name in ["PATH", "LD_PRELOAD", "BASH_ENV", "SHELLOPTS", "PS4", "IFS"] {
            let call = BTreeMap::from([(name.to_string(), "x".to_string())]);
            let e = listed.environment(Path::new("/w"), &call, |_| None).unwrap_err();
            assert_eq!(e.kind, crate::error::ErrorKind::Forbidden, "{name}");
        }
        let call = BTreeMap::from([("PATH".to_string(), "/w/bin".to_string())]);
        assert!(
            policy("").environment(Path::new("/w"), &call, |_| None).is_ok(),
            "without a list the shell is the agent's"
        );
    }

    #[test]
    fn a_secret_in_pass_env_is_a_config_error() {
        let e = Config::parse(Path::new("c.toml"), "[exec_policy]\npass_env = [\"GITHUB_TOKEN\"]\n").unwrap_err();
        assert!(e.message.contains("GITHUB_TOKEN") && e.line == 2, "{e}");
    }

    #[test]
    fn allowed_commands_check_the_first_word_of_one_simple_command() {
        let p = policy("[exec_policy]\nallowed_commands = [\"echo\", \"cargo\"]\n");
        assert!(p.check_command("cargo test --workspace").is_ok());
        assert!(p.check_command("  echo 'hi there'").is_ok());
        let refused = [
            "rm -rf x",
            "echo hi; rm -rf x",
            "echo $(id)",
            "echo `id`",
            "echo hi > f",
            "echo hi\nid",
            "/bin/echo",
            "./echo",
            // dash splits at spaces and tabs only: this first word is `echo\u{a0}/../../bin/sh`.
            "echo\u{a0}/../../bin/sh -c id",
            "echo\u{b}x",
        ];
        for refused in refused {
            assert_eq!(p.check_command(refused).unwrap_err().kind, crate::error::ErrorKind::Forbidden, "{refused}");
        }
        assert!(p.check_command("echo\thi").is_ok(), "a tab separates words");
        assert!(policy("").check_command("anything | goes; here").is_ok());
        assert_eq!(policy("").check_command("  ").unwrap_err().kind, crate::error::ErrorKind::InvalidArguments);
    }
}
