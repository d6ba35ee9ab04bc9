//! The daemon's Prometheus metrics (`GET /metrics`, text exposition format 0.0.4, with the
//! `prometheus-client` crate: no protobuf, no global registry of other crates).
//!
//! - **Counters and histograms** are counted where the thing happens, once: a turn's end
//!   (`turn::run_here`), a model call's record (`usage::Meter::record`), a tool call's audit
//!   (`tool::pipeline`), a schedule fire (`schedule::runner`), a channel message stored or
//!   sent (`channel`), an HTTP request (the server's edge). They count since this process
//!   started, as Prometheus expects (`rate()` handles restarts).
//! - **Gauges** (queue depth, task board, pool, processes, browsers, the cluster, agents) are
//!   read when the metrics are asked for ([`Metrics::render`]), from the services that know
//!   them: nothing is kept up to date between scrapes.
//! - One set per process ([`metrics`]): the daemon runs one kernel. Label values are bounded
//!   by what the operator configured (agents, tools, providers and models, channels, routes
//!   as declared, never a raw path); what callers or agents choose is folded: agents spawned
//!   by agents are `spawned`, unknown tools `unknown`, other methods `other`.

#[cfg(test)]
use std::path::Path;
use std::sync::LazyLock;
use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};

use crate::Kernel;
use crate::error::{Error, Result};

/// `[metrics]` of `config.toml`.
#[derive(Debug, Clone, Default, serde::Deserialize, serde::Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct MetricsConfig {
    /// A second address serving `GET /metrics` alone, without a token (for a Prometheus
    /// that scrapes without credentials). Nothing else answers there. Read at start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listen: Option<std::net::SocketAddr>,
}

/// `[metrics]`'s commented lines in the default `config.toml`.
pub(crate) const DEFAULT_TEXT: &str = r#"# [metrics]
# GET /metrics answers an API token on the daemon's own address. `listen` adds an address
# that serves it without a token, and nothing else: bind it where only your Prometheus
# reaches (it shows agents', tools' and models' names and counts).
# listen = "127.0.0.1:9464"
"#;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TurnLabels {
    agent: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ModelLabels {
    provider: String,
    model: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TokenLabels {
    provider: String,
    model: String,
    /// `input`, `output`, `cached` (input read from the provider's cache).
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PricedLabels {
    provider: String,
    model: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabels {
    tool: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolName {
    tool: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Outcome {
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ChannelLabels {
    channel: String,
    /// `in` or `out`.
    direction: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HttpLabels {
    route: String,
    method: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabel {
    route: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ProviderLabel {
    provider: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabel {
    state: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabel {
    status: String,
}

type Timings<L> = Family<L, Histogram, fn() -> Histogram>;

/// 1 ms to about 4.4 min, each bucket four times the last: a tool call is a clock read or a
/// page load.
fn tool_buckets() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 4.0, 10))
}

/// 50 µs to about 13 s: most requests are answered from memory, a few run a turn.
fn http_buckets() -> Histogram {
    Histogram::new(exponential_buckets(0.000_05, 4.0, 12))
}

pub struct Metrics {
    registry: Registry,
    turns: Family<TurnLabels, Counter>,
    model_calls: Family<ModelLabels, Counter>,
    model_tokens: Family<TokenLabels, Counter>,
    model_cost: Family<PricedLabels, Counter<f64, AtomicU64>>,
    tool_calls: Family<ToolLabels, Counter>,
    tool_seconds: Timings<ToolName>,
    schedule_fires: Family<Outcome, Counter>,
    schedule_lateness: Histogram,
    channel_messages: Family<ChannelLabels, Counter>,
    http_requests: Family<HttpLabels, Counter>,
    http_seconds: Timings<RouteLabel>,
    live_streams: Gauge,
    provider_queue: Family<ProviderLabel, Gauge>,
    tasks: Family<StatusLabel, Gauge>,
    agents: Family<StateLabel, Gauge>,
    db_connections: Family<StateLabel, Gauge>,
    processes: Gauge,
    browser_contexts: Gauge,
    cluster_daemons: Family<StateLabel, Gauge>,
    /// One scrape at a time: a scrape clears the providers' series before setting them again,
    /// which another scrape's encoding must not see half done.
    scraping: tokio::sync::Mutex<()>,
}

static METRICS: LazyLock<Metrics> = LazyLock::new(Metrics::new);

/// This process's metrics.
pub fn metrics() -> &'static Metrics {
    &METRICS
}

impl Metrics {
    fn new() -> Metrics {
        let mut registry = Registry::with_prefix("kennel");
        let m = Metrics {
            registry: Registry::default(),
            turns: Family::default(),
            model_calls: Family::default(),
            model_tokens: Family::default(),
            model_cost: Family::default(),
            tool_calls: Family::default(),
            tool_seconds: Family::new_with_constructor(tool_buckets),
            schedule_fires: Family::default(),
            schedule_lateness: Histogram::new([0.1, 0.5, 1.0, 5.0, 15.0, 60.0, 300.0, 3600.0]),
            channel_messages: Family::default(),
            http_requests: Family::default(),
            http_seconds: Family::new_with_constructor(http_buckets),
            live_streams: Gauge::default(),
            provider_queue: Family::default(),
            tasks: Family::default(),
            agents: Family::default(),
            db_connections: Family::default(),
            processes: Gauge::default(),
            browser_contexts: Gauge::default(),
            cluster_daemons: Family::default(),
            scraping: tokio::sync::Mutex::new(()),
        };
        let r = &mut registry;
        r.register("turns", "Turns ended, by agent and how they ended (reply, parked, failed, …)", m.turns.clone());
        r.register(
            "model_calls",
            "Model calls, by provider, model and outcome (ok or an error kind)",
            m.model_calls.clone(),
        );
        r.register("model_tokens", "Tokens of model calls, by provider, model and kind", m.model_tokens.clone());
        r.register("model_cost_usd", "Cost of model calls in US dollars, for models with prices", m.model_cost.clone());
        r.register("tool_calls", "Tool calls, by tool and outcome (ok or an error kind)", m.tool_calls.clone());
        r.register_with_unit(
            "tool_call_duration",
            "Tool calls' duration, by tool",
            Unit::Seconds,
            m.tool_seconds.clone(),
        );
        r.register("schedule_fires", "Schedule fires, by outcome", m.schedule_fires.clone());
        r.register_with_unit(
            "schedule_fire_lateness",
            "How long after its time each schedule fire started",
            Unit::Seconds,
            m.schedule_lateness.clone(),
        );
        r.register(
            "channel_messages",
            "Channel messages, by channel and direction (in, out)",
            m.channel_messages.clone(),
        );
        r.register("http_requests", "HTTP requests, by route, method and status", m.http_requests.clone());
        r.register_with_unit(
            "http_request_duration",
            "HTTP requests' duration, by route",
            Unit::Seconds,
            m.http_seconds.clone(),
        );
        r.register(
            "live_streams",
            "Live event streams open (API, dashboard, OpenAI-compatible)",
            m.live_streams.clone(),
        );
        r.register(
            "provider_queue_depth",
            "Model calls waiting for a place among the provider's max_in_flight",
            m.provider_queue.clone(),
        );
        r.register("tasks", "Tasks on the board, by status", m.tasks.clone());
        r.register("agents", "Agents, by state", m.agents.clone());
        r.register("db_connections", "Database pool connections, by state (idle, used)", m.db_connections.clone());
        r.register("processes", "Child processes this daemon runs for agents", m.processes.clone());
        r.register("browser_contexts", "Agents with an open browser context", m.browser_contexts.clone());
        r.register("cluster_daemons", "Daemons of the cluster, by state (alive, dead)", m.cluster_daemons.clone());
        Metrics { registry, ..m }
    }

    /// A turn ended (`outcome`: how, or `failed`).
    pub fn turn_ended(&self, agent: &str, outcome: &str) {
        self.turns.get_or_create(&TurnLabels { agent: agent.into(), outcome: outcome.into() }).inc();
    }

    /// A model call was made: its outcome, tokens and (priced) cost.
    pub fn model_called(&self, call: &crate::usage::ModelCall, cost: Option<f64>) {
        let (provider, model) = (call.provider.clone(), call.model.clone());
        let labels = ModelLabels { provider: provider.clone(), model: model.clone(), outcome: call.outcome.clone() };
        self.model_calls.get_or_create(&labels).inc();
        let t = &call.tokens;
        for (kind, n) in [("input", t.input_tokens), ("output", t.output_tokens), ("cached", t.cached_tokens)] {
            if n > 0 {
                let labels = TokenLabels { provider: provider.clone(), model: model.clone(), kind };
                self.model_tokens.get_or_create(&labels).inc_by(n);
            }
        }
        if let Some(cost) = cost {
            self.model_cost.get_or_create(&PricedLabels { provider, model }).inc_by(cost);
        }
    }

    pub fn tool_called(&self, tool: &str, outcome: &str, duration_us: u64) {
        self.tool_calls.get_or_create(&ToolLabels { tool: tool.into(), outcome: outcome.into() }).inc();
        self.tool_seconds.get_or_create(&ToolName { tool: tool.into() }).observe(duration_us as f64 / 1e6);
    }

    pub fn schedule_fired(&self, outcome: &str) {
        self.schedule_fires.get_or_create(&Outcome { outcome: outcome.into() }).inc();
    }

    pub fn schedule_late(&self, seconds: f64) {
        self.schedule_lateness.observe(seconds.max(0.0));
    }

    /// A message came in on `channel` (`inbound`) or was sent on it.
    pub fn channel_message(&self, channel: &str, inbound: bool) {
        let direction = if inbound { "in" } else { "out" };
        self.channel_messages.get_or_create(&ChannelLabels { channel: channel.into(), direction }).inc();
    }

    /// An HTTP request was answered; `route` as declared (`/api/agents/{id}`), never the path.
    pub fn http_answered(&self, route: &str, method: &str, status: u16, seconds: f64) {
        let labels = HttpLabels { route: route.into(), method: method.into(), status };
        self.http_requests.get_or_create(&labels).inc();
        self.http_seconds.get_or_create(&RouteLabel { route: route.into() }).observe(seconds);
    }

    /// Counts a live stream while the guard lives.
    pub fn live_stream(&self) -> LiveStream {
        self.live_streams.inc();
        LiveStream(())
    }

    /// Reads the gauges from `kernel`'s services, then writes every metric in the text
    /// exposition format.
    pub async fn render(&self, kernel: &Kernel) -> Result<String> {
        let _one_at_a_time = self.scraping.lock().await;
        self.read_gauges(kernel).await;
        let mut text = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut text, &self.registry)
            .map_err(|e| Error::internal(format_args!("encoding the metrics failed: {e}")))?;
        Ok(text)
    }

    async fn read_gauges(&self, kernel: &Kernel) {
        // Providers come and go with `kennel provider set|remove`: a removed one's series goes.
        self.provider_queue.clear();
        for provider in kernel.providers().iter() {
            let waiting = provider.queue().map_or(0, |(waiting, _)| waiting);
            self.provider_queue.get_or_create(&ProviderLabel { provider: provider.name().into() }).set(waiting as i64);
        }
        // The two gauges read from the database: one that cannot be read keeps its last value
        // and says so in the log, and the scrape goes on (its counters matter most then).
        match kernel.service::<crate::tasks::TaskBoard>().counts_by_status().await {
            Ok(counts) => {
                for (status, count) in counts {
                    self.tasks.get_or_create(&StatusLabel { status }).set(count as i64);
                }
            }
            Err(e) => tracing::warn!(error = %e.message, "metrics: the task board's counts were not read"),
        }
        let counts = crate::status::AgentCounts::of(&kernel.agents().list(), &kernel.clock().now_text());
        for (state, n) in [
            ("running", counts.running),
            ("paused", counts.paused),
            ("stopped", counts.stopped),
            ("workflow_step", counts.workflow_steps),
        ] {
            self.agents.get_or_create(&StateLabel { state }).set(n as i64);
        }
        let (idle, used) = kernel.db().connections_in_use();
        self.db_connections.get_or_create(&StateLabel { state: "idle" }).set(idle as i64);
        self.db_connections.get_or_create(&StateLabel { state: "used" }).set(used as i64);
        self.processes.set(kernel.service::<crate::process::Processes>().running() as i64);
        let contexts = kernel.optional::<crate::browser::Browsers>().map_or(0, |b| b.contexts());
        self.browser_contexts.set(contexts as i64);
        match kernel.cluster().overview().await {
            Ok(overview) => {
                let alive = overview.daemons.iter().filter(|d| d.alive).count();
                self.cluster_daemons.get_or_create(&StateLabel { state: "alive" }).set(alive as i64);
                let dead = overview.daemons.len() - alive;
                self.cluster_daemons.get_or_create(&StateLabel { state: "dead" }).set(dead as i64);
            }
            Err(e) => tracing::warn!(error = %e.message, "metrics: the cluster's daemons were not read"),
        }
    }
}

/// A live stream, counted in `kennel_live_streams` until it is dropped.
pub struct LiveStream(());

impl Drop for LiveStream {
    fn drop(&mut self) {
        metrics().live_streams.dec();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scrape while the database cannot be read (closed here; locked or down in life)
    /// still answers, with the counters and the gauges it could read.
    #[tokio::test]
    async fn a_scrape_answers_when_the_database_does_not() {
        let home = tempfile::tempdir().unwrap();
        let kernel = crate::Kernel::open(home.path()).await.unwrap();
        kernel.close().await;
        let m = Metrics::new();
        m.turn_ended("helper", "reply");
        let text = m.render(&kernel).await.expect("a scrape without the database");
        assert!(text.contains("kennel_turns_total{agent=\"helper\",outcome=\"reply\"} 1"), "{text}");
        assert!(text.contains("kennel_agents{state=\"running\"} 0"), "{text}");
        assert!(!text.contains("kennel_tasks{"), "no task counts were read: {text}");
    }

    /// Every series a metric of this set writes, each counted or set once.
    fn exposition() -> String {
        let m = Metrics::new();
        m.turn_ended("helper", "reply");
        let call = crate::usage::ModelCall {
            turn: uuid::Uuid::nil(),
            agent: uuid::Uuid::nil(),
            session: uuid::Uuid::nil(),
            provider: "p".into(),
            model: "m".into(),
            purpose: "reply",
            compaction: None,
            first_seq: None,
            messages: 1,
            estimated_tokens: 1,
            tokens: crate::llm::Usage { input_tokens: 3, output_tokens: 2, cached_tokens: 1, ..Default::default() },
            outcome: "ok".into(),
            at: String::new(),
        };
        m.model_called(&call, Some(0.5));
        m.tool_called("system_time", "ok", 1500);
        m.schedule_fired("ok");
        m.schedule_late(2.0);
        m.channel_message("tg", true);
        m.http_answered("/api/templates", "GET", 200, 0.0001);
        m.provider_queue.get_or_create(&ProviderLabel { provider: "p".into() }).set(0);
        m.tasks.get_or_create(&StatusLabel { status: "pending".into() }).set(0);
        for family in [&m.agents, &m.db_connections, &m.cluster_daemons] {
            family.get_or_create(&StateLabel { state: "x" }).set(0);
        }
        let mut text = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut text, &m.registry).unwrap();
        text
    }

    /// The metric names `text` mentions (`kennel_…`).
    fn names_in(text: &str) -> std::collections::BTreeSet<String> {
        let mut names = std::collections::BTreeSet::new();
        let mut rest = text;
        while let Some(at) = rest.find("kennel_") {
            let name: String = rest[at..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            rest = &rest[at + name.len()..];
            names.insert(name);
        }
        names
    }

    /// The Grafana dashboard and the README's table name only metrics Kennel writes, by the
    /// names it writes them under (counters end in `_total`, durations in `_seconds`).
    #[test]
    fn the_dashboard_and_the_readme_name_metrics_that_exist() {
        let written = exposition();
        // Each series, and each family by its `# TYPE` (a histogram's name, without suffix).
        let series: std::collections::BTreeSet<String> = written
            .lines()
            .filter_map(|l| match l.strip_prefix("# TYPE ") {
                Some(family) => family.split(' ').next(),
                None if l.starts_with('#') => None,
                None => l.split(['{', ' ']).next(),
            })
            .map(String::from)
            .collect();
        assert!(series.contains("kennel_turns_total") && series.contains("kennel_tool_call_duration_seconds_bucket"));
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let dashboard = std::fs::read_to_string(root.join("docs/grafana-kennel.json")).unwrap();
        let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
        let table = &readme[readme.find("## Metrics").unwrap()..readme.find("## Storage").unwrap()];
        for (source, text) in [("docs/grafana-kennel.json", dashboard.as_str()), ("README.md", table)] {
            let named = names_in(text);
            assert!(named.len() > 10, "{source}: {named:?}");
            for name in named {
                assert!(series.contains(&name), "{source} names `{name}`, which Kennel does not write: {series:?}");
            }
        }
    }
}
