//! `[exec_policy]` of `config.toml`: its type, defaults, check at load and lines in the default file.

use serde::{Deserialize, Serialize};

use crate::config::{Config, in_range};
use crate::net::guard::AllowedHosts;

/// `[exec_policy]`: what agents' subprocesses (family `process`) and `docker_exec` may do.
/// The grant is the first gate; this section bounds what a granted agent runs.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ExecPolicyConfig {
    /// A child still running this long after it started is stopped (SIGTERM, then SIGKILL).
    #[serde(deserialize_with = "in_range::<_, 1, 604800>")]
    pub wall_clock_secs: u64,
    /// Children one agent may have running at once.
    #[serde(deserialize_with = "in_range::<_, 1, 256>")]
    pub max_children: u64,
    /// Output kept per child and stream until polled; older output is dropped (the poll
    /// says how much).
    #[serde(deserialize_with = "in_range::<_, 1024, 67108864>")]
    pub output_buffer_bytes: u64,
    /// How long a child has after SIGTERM (or SIGINT, SIGQUIT) before SIGKILL.
    #[serde(deserialize_with = "in_range::<_, 0, 300>")]
    pub kill_grace_secs: u64,
    /// The commands a child may start (the command line's first word, compared exactly);
    /// absent: any. When set, the line must be one simple command (no `;`, `|`, `&`,
    /// redirections or substitutions), since each of those would start a second one.
    pub allowed_commands: Option<Vec<String>>,
    /// The daemon's environment variables handed on to children (names, exactly), on top
    /// of the minimal base (`PATH`, `HOME` = the workspace, `LANG`, `TZ`, `TERM`, `TMPDIR`).
    pub pass_env: Vec<String>,
    /// Variable names (globs: `*_TOKEN`) a child never gets, from `pass_env` or from a call's
    /// `env`. Every provider's `api_key_env` is secret without being listed.
    pub secret_env: Vec<String>,
    /// Run each child in bubblewrap (the workspace, the system read-only, a private `/tmp`
    /// and `HOME`, its own PID namespace, nothing of `$KENNEL_HOME`). `false` runs children as
    /// the daemon's user with everything it can reach — its CLI token included: only for a
    /// machine where bubblewrap cannot run, and logged at every start.
    pub sandbox: bool,
    /// Keep the host's network inside the sandbox (default: none, not even loopback's
    /// services outside it).
    pub network: bool,
    /// Host folders a sandboxed child sees read-only besides the system's (a toolchain in
    /// `/opt` or a user's `~/.cargo`).
    pub read_only: Vec<std::path::PathBuf>,
    /// With `network` (and for script tools whose manifest asks for one): where a sandbox's
    /// requests may go, checked by the address guard's proxy like `[browser] allowed_hosts`
    /// (empty: public addresses only; the daemon's own port never).
    pub allowed_hosts: AllowedHosts,
    /// Hosts refused even when `allowed_hosts` lets them through.
    pub blocked_hosts: AllowedHosts,
    /// Processes and threads one child's whole tree may have at once (its cgroup's `pids.max`).
    #[serde(deserialize_with = "in_range::<_, 8, 1048576>")]
    pub max_processes: u64,
    /// Memory one child's whole tree may use, in MiB (its cgroup's memory limit; where no
    /// cgroup can be made, each process's address space instead).
    #[serde(deserialize_with = "in_range::<_, 16, 1048576>")]
    pub max_memory_mib: u64,
    /// The Docker engine's Unix socket, for `docker_exec`.
    pub docker_socket: std::path::PathBuf,
    /// The containers `docker_exec` may run commands in, by name; empty: none.
    pub docker_allowlist: Vec<String>,
}

impl Default for ExecPolicyConfig {
    fn default() -> Self {
        ExecPolicyConfig {
            wall_clock_secs: 3600,
            max_children: 8,
            output_buffer_bytes: 1 << 20,
            kill_grace_secs: 5,
            allowed_commands: None,
            pass_env: Vec::new(),
            secret_env: ["*_API_KEY", "*_TOKEN", "*_SECRET", "*PASSWORD*"].map(String::from).to_vec(),
            sandbox: true,
            network: false,
            read_only: Vec::new(),
            allowed_hosts: AllowedHosts::default(),
            blocked_hosts: AllowedHosts::default(),
            max_processes: 512,
            max_memory_mib: 4096,
            docker_socket: "/var/run/docker.sock".into(),
            docker_allowlist: Vec::new(),
        }
    }
}

/// Every variable `[exec_policy] pass_env` hands on must be one a child may see.
pub(crate) fn check(config: &Config) -> Result<(), (String, String)> {
    let secrets = config.secret_env_names();
    if let Some(name) = config
        .exec_policy
        .pass_env
        .iter()
        .find(|n| secrets.iter().any(|s| crate::capability::glob_match(s.as_bytes(), n.as_bytes())))
    {
        return Err((
            "pass_env".into(),
            format!(
                "[exec_policy] pass_env names `{name}`, a secret (secret_env or a provider's api_key_env): children never get it"
            ),
        ));
    }
    if let Some(commands) = &config.exec_policy.allowed_commands
        && let Some(bad) = commands.iter().find(|c| c.is_empty() || c.chars().any(char::is_whitespace))
    {
        return Err((
            "allowed_commands".into(),
            format!("[exec_policy] allowed_commands: `{bad}` is not one word (a command's name, like \"cargo\")"),
        ));
    }
    Ok(())
}

/// `[exec_policy]`'s commented lines in the default `config.toml`.
pub(crate) const DEFAULT_TEXT: &str = r#"# [exec_policy]             # agents' subprocesses (process_*) and docker_exec
# wall_clock_secs = 3600    # a child running longer is stopped
# max_children = 8          # running at once, per agent
# output_buffer_bytes = 1048576   # per child and stream, until polled (oldest dropped)
# kill_grace_secs = 5       # SIGTERM, then SIGKILL this much later
# allowed_commands = ["cargo", "python3"]   # absent: any (the grant is the gate)
# pass_env = ["CARGO_HOME"]  # daemon variables children get, besides PATH, LANG, TZ...
# secret_env = ["*_API_KEY", "*_TOKEN", "*_SECRET", "*PASSWORD*"]   # never given to a child
# sandbox = true            # children run in bubblewrap; false: as the daemon, its files and token included
# network = false           # true: requests through the address guard's proxy (HTTP_PROXY)
# [exec_policy] allowed_hosts = []   # where they may go (like [browser] allowed_hosts); script tools too
# read_only = ["/opt"]      # host folders a child sees read-only, besides the system's
# max_processes = 512       # processes and threads of one child's tree (its cgroup)
# max_memory_mib = 4096     # memory of one child's tree (its cgroup; else each process's address space)
# docker_socket = "/var/run/docker.sock"
# docker_allowlist = []     # containers docker_exec may run commands in, by name
"#;
