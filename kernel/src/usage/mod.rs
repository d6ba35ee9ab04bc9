//! Usage metering (issue 17): every model call's tokens, kept with its agent, session,
//! provider, model and time (`model_calls`), priced from config.toml, and reported grouped by
//! agent, provider, model or day.
//!
//! Calls are recorded off the turn's path: a writer task inserts queued rows in batches, one
//! transaction each, and every read flushes the queue first, so a report after a turn always
//! counts it. A kill may lose the last rows not yet written (like the audit of read-only
//! tools); a turn never waits for its meter.
//!
//! # Design notes
//!
//! ## Layout
//!
//! The meter (issue 17): `Meter` (every model call's tokens queued for a writer task that inserts
//! them into `model_calls` in batches; reads flush first; sums read `model_calls` and the daily
//! lines of `usage_days` together), prices from `[providers.NAME.models.MODEL]`, `report` (`GET
//! /api/usage` by agent, provider, model or day), `spent_since`, `top_sessions`; `budget.rs`
//! (`[budgets]` and `[limits]` daily budgets: `budget_day`, `Standing`, `admit` pausing an agent);
//! `store.rs`.
//!
//! ## Metering, budgets, fallbacks, provider limits
//!
//! - **Metering** (`usage/`): every model call (replies, summaries, and the LLM memory
//!   extractor's, `purpose = memory`, billed through `memory::semantic::metered_for` to the agent
//!   whose memory it fills, with the turn and session when there is one) becomes a `ModelCall`
//!   (agent, session, turn, provider, model, tokens, outcome, the kernel clock's time) queued for
//!   the meter's writer; the turn never waits for it (2.4 µs on its path). Reads (`report`,
//!   `spent_since`, the Usage page) flush the queue first. **Decision:** a kill may lose the last
//!   unwritten rows, as with read-only tools' audit rows; a meter row is bookkeeping, not a
//!   promise made to a caller. Tokens are normalised: `input_tokens` counts every input token
//!   (OpenAI's `prompt_tokens`; Anthropic's `input_tokens` + cache reads + cache writes), and
//!   `cached_tokens` the cache reads and `cache_write_tokens` the cache writes among them. Cost
//!   per million tokens: `(input − cached − written) × input_usd_per_mtok + cached ×
//!   cached_input_usd_per_mtok + written × cache_write_usd_per_mtok + output ×
//!   output_usd_per_mtok` (`usage::Prices`); the cache prices default to Anthropic's published
//!   ratios for kind `anthropic` (a read 0.1×, a write 1.25× the input price: its five-minute
//!   cache, which is what Kennel asks for) and to the input price otherwise. Calls of an
//!   unpriced model count as `unpriced_calls`.
//! - **Budgets** (`usage/budget.rs`): `[budgets] max_tokens_per_day, max_usd_per_day` for the
//!   daemon and `[limits] max_tokens_per_day, max_usd_per_day` in an agent type, over a day that
//!   starts at `[budgets] reset_hour` in `[budgets] timezone` (one day for both: **decision**,
//!   an agent type does not get its own reset hour). Before a turn stores anything, `admit`
//!   refuses it with `ResourceExhausted` naming the budget if the agent is paused or its day's use
//!   (its own, then everyone's) reached a limit; reaching it pauses the agent until the next
//!   reset (`agents.paused_until`, `pause_reason`), with one audit row (`tool = "budget"`) and
//!   one warning in the log — the next refusals only say it is paused. `POST
//!   /api/agents/{id}/lift` and the agent page's "Lift the pause" clear it; the day's budget then
//!   counts from the lift (`budget_lifted_at`). A turn that starts under a budget may end over it:
//!   budgets are checked when turns start, not mid-turn.
//! - **Fallbacks:** an agent type's `fallbacks = [{ provider, model }, …]` (provider optional: the
//!   type's own; up to 8; a provider config.toml does not define is a 422 on that field). When a
//!   call gives up after its retries (`ChatError::GaveUp`: 429, 5xx, timeouts, dropped
//!   connections — not a refusal of the request itself), the turn moves to the next and stays
//!   there: a `fallback` event, a `Fallback` note in the session (shown in the chat; listed
//!   with the session's failures by `GET /api/sessions/{id}`) and `fell_back` in the turn's
//!   result. Summaries fall back the same way. The context window follows the model in use.
//! - **Budgets are checked twice:** before anything is stored (so a refused turn opens no
//!   session) and again once the turn holds its session (turns queued behind one were admitted
//!   before it spent). A pause decided on an agent read before an operator's lift is dropped: the
//!   lift stands.
//! - **`[providers.NAME] max_in_flight = N`:** a semaphore per provider; a call that finds all
//!   places taken emits `queued` and waits (its place is held for one attempt, not across the
//!   backoff), and the agent page shows how many calls wait. A burst of cron fires waits instead
//!   of meeting the provider's rate limit.
//! - **The Usage page** (`/usage`): per agent today and per day (14) and per model (30 days) as
//!   server-rendered SVG bar charts (`widgets::BarChart`: text as SVG text, no style
//!   attributes, the numbers in a table under each), each budget with what is left, the ten
//!   costliest sessions of 30 days. The overview shows turns and tool calls per hour for 24 hours
//!   (`Kernel::activity`); the agent page its use today and what its budget leaves.
//!
//! ## Quota
//!
//! - **Model calls**: the memory extractor's are metered (see `crate::usage`), so budgets see them.

pub mod budget;
pub(crate) mod config;
pub mod overview;
mod store;

pub use config::BudgetsConfig;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, oneshot};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::config::Config;
use crate::db::Db;
use crate::error::Result;
use crate::llm::ProviderKind;
use crate::llm::Usage as Tokens;
use crate::page::{Key, Page, PageRequest, bad_cursor};

/// One model call, as the meter keeps it.
#[derive(Debug, Clone)]
pub struct ModelCall {
    pub turn: Uuid,
    pub agent: Uuid,
    pub session: Uuid,
    pub provider: String,
    pub model: String,
    /// `reply` or `summary`.
    pub purpose: &'static str,
    /// The session's compaction the call started from.
    pub compaction: Option<i64>,
    /// The first stored message it sent.
    pub first_seq: Option<i64>,
    pub messages: usize,
    pub estimated_tokens: u64,
    pub tokens: Tokens,
    /// `ok`, or the error's kind.
    pub outcome: String,
    /// When, on the kernel's clock (RFC 3339 as stored).
    pub at: String,
}

/// How `GET /api/usage` groups the calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Group {
    #[default]
    Agent,
    Provider,
    /// `provider / model`.
    Model,
    /// The UTC day (`YYYY-MM-DD`).
    Day,
}

/// What a group of calls used.
#[derive(Debug, Clone, Default, PartialEq, Serialize, ToSchema)]
pub struct Line {
    /// The agent's id, the provider's name, `provider / model`, or the day.
    pub key: String,
    /// The agent's name, for agent groups.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub calls: u64,
    /// Every input token, cached ones included.
    pub input_tokens: u64,
    /// Input tokens the provider read from its prompt cache.
    pub cached_tokens: u64,
    /// Input tokens the provider wrote into its prompt cache.
    pub cache_write_tokens: u64,
    pub output_tokens: u64,
    /// In US dollars, from the prices config.toml gives; calls of a model without prices
    /// count nothing (see `unpriced_calls`).
    pub cost_usd: f64,
    /// Calls of models config.toml gives no prices for.
    pub unpriced_calls: u64,
    /// Calls whose provider reported no usage: their tokens are Kennel's estimate.
    pub estimated_calls: u64,
}

impl Line {
    pub fn tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }

    fn add(&mut self, row: &store::Sum, prices: Option<&Prices>) {
        self.calls += row.calls;
        self.input_tokens += row.input;
        self.cached_tokens += row.cached;
        self.cache_write_tokens += row.cache_write;
        self.output_tokens += row.output;
        self.estimated_calls += row.estimated;
        match prices {
            Some(p) => self.cost_usd += p.cost(&row.tokens()),
            None => self.unpriced_calls += row.calls,
        }
    }
}

/// A model's prices per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prices {
    pub input: f64,
    /// Input tokens read from the provider's prompt cache.
    pub cached_input: f64,
    /// Input tokens written into the provider's prompt cache.
    pub cache_write: f64,
    pub output: f64,
}

/// Anthropic's published prompt-cache prices against the model's input price: a read costs a
/// tenth, a write (five-minute cache) a quarter more. The defaults when config.toml gives none.
const ANTHROPIC_CACHE_READ: f64 = 0.1;
const ANTHROPIC_CACHE_WRITE: f64 = 1.25;

impl Prices {
    /// A model's prices from config.toml, the prompt cache's from the provider's kind where
    /// config.toml leaves them out: Anthropic's published ratios, else the input price.
    pub fn of(kind: ProviderKind, m: &crate::llm::ModelConfig) -> Option<Prices> {
        let input = m.input_usd_per_mtok?;
        let (read, write) = match kind {
            ProviderKind::Anthropic => (input * ANTHROPIC_CACHE_READ, input * ANTHROPIC_CACHE_WRITE),
            ProviderKind::Openai => (input, input),
        };
        Some(Prices {
            input,
            cached_input: m.cached_input_usd_per_mtok.unwrap_or(read),
            cache_write: m.cache_write_usd_per_mtok.unwrap_or(write),
            output: m.output_usd_per_mtok.unwrap_or(0.0),
        })
    }

    /// What `t` costs in US dollars: its input tokens read from the cache and written into
    /// it at their prices, the rest at the input price.
    pub fn cost(&self, t: &Tokens) -> f64 {
        let cached = t.cached_tokens.min(t.input_tokens);
        let written = t.cache_write_tokens.min(t.input_tokens - cached);
        let plain = t.input_tokens - cached - written;
        (plain as f64 * self.input
            + cached as f64 * self.cached_input
            + written as f64 * self.cache_write
            + t.output_tokens as f64 * self.output)
            / 1e6
    }
}

enum Queued {
    Call(Box<ModelCall>),
    Flush(oneshot::Sender<()>),
}

/// Prices by (provider, model) of every model config.toml prices.
fn prices_of(config: &Config) -> BTreeMap<(String, String), Prices> {
    config
        .providers
        .iter()
        .flat_map(|(provider, p)| p.models.iter().map(move |(model, m)| ((provider, p.kind, model), m)))
        .filter_map(|((provider, kind, model), m)| Some(((provider.clone(), model.clone()), Prices::of(kind, m)?)))
        .collect()
}

pub struct Meter {
    db: Db,
    queue: mpsc::UnboundedSender<Queued>,
    /// Prices by (provider, model), from config.toml (replaced when the providers are edited).
    prices: std::sync::RwLock<BTreeMap<(String, String), Prices>>,
}

impl Meter {
    /// Starts the writer task.
    pub(crate) fn start(db: Db, config: &Config) -> Meter {
        let (queue, rx) = mpsc::unbounded_channel();
        tokio::spawn(write(db.clone(), rx));
        Meter { db, queue, prices: std::sync::RwLock::new(prices_of(config)) }
    }

    /// Takes the prices of `config`'s models (after the providers were edited).
    pub(crate) fn set_prices(&self, config: &Config) {
        *self.prices.write().expect("prices lock") = prices_of(config);
    }

    /// Queues a call's record; the turn goes on at once.
    pub fn record(&self, call: ModelCall) {
        let cost = self.prices(&call.provider, &call.model).map(|p| p.cost(&call.tokens));
        crate::metrics::metrics().model_called(&call, cost);
        if self.queue.send(Queued::Call(Box::new(call))).is_err() {
            tracing::warn!("the meter's writer has stopped; a model call went unrecorded");
        }
    }

    /// Waits until every call queued so far is written.
    pub async fn flush(&self) {
        let (done, written) = oneshot::channel();
        if self.queue.send(Queued::Flush(done)).is_ok() {
            let _ = written.await;
        }
    }

    pub fn prices(&self, provider: &str, model: &str) -> Option<Prices> {
        self.prices.read().expect("prices lock").get(&(provider.to_string(), model.to_string())).copied()
    }

    /// A page of what the calls since `since` (RFC 3339; all when `None`) used, grouped,
    /// ordered by key. `names` names agents by id.
    pub async fn report(
        &self,
        group: Group,
        since: Option<&str>,
        page: &PageRequest,
        names: impl Fn(&str) -> Option<String>,
    ) -> Result<Page<Line>> {
        self.flush().await;
        let rows = store::sums(&self.db, group, since).await?;
        let mut lines: BTreeMap<String, Line> = BTreeMap::new();
        for row in &rows {
            let line = lines.entry(row.key.clone()).or_insert_with(|| Line { key: row.key.clone(), ..Line::default() });
            line.add(row, self.prices(&row.provider, &row.model).as_ref());
        }
        let mut lines: Vec<Line> = lines.into_values().collect();
        if group == Group::Agent {
            for line in &mut lines {
                line.name = names(&line.key);
            }
        }
        let after = match page.after(Key::Position)? {
            Some(c) => Some(c.parse::<usize>().map_err(|_| bad_cursor())?),
            None => None,
        };
        let total = lines.len() as u64;
        let start = after.map_or(0, |a| a + 1);
        let rows: Vec<(usize, Line)> =
            lines.into_iter().enumerate().skip(start).take(page.fetch_limit() as usize).collect();
        let page = Page::from_rows(rows, page, total, |(i, _)| format!("{i:06}"));
        Ok(Page { items: page.items.into_iter().map(|(_, l)| l).collect(), next: page.next, total: page.total })
    }

    /// Per UTC day and per `provider / model` since `since`, each ordered by key, from one
    /// scan of the calls (the Usage page shows both).
    pub async fn days_and_models(&self, since: &str) -> Result<(Vec<Line>, Vec<Line>)> {
        self.flush().await;
        let (mut days, mut models): (BTreeMap<String, Line>, BTreeMap<String, Line>) = Default::default();
        for row in store::day_sums(&self.db, since).await? {
            let prices = self.prices(&row.provider, &row.model);
            let model = format!("{} / {}", row.provider, row.model);
            days.entry(row.key.clone())
                .or_insert_with(|| Line { key: row.key.clone(), ..Line::default() })
                .add(&row, prices.as_ref());
            models
                .entry(model.clone())
                .or_insert_with(|| Line { key: model, ..Line::default() })
                .add(&row, prices.as_ref());
        }
        Ok((days.into_values().collect(), models.into_values().collect()))
    }

    /// What `agent` (or, with `None`, every agent) used since `since`: tokens and dollars.
    pub async fn spent_since(&self, agent: Option<Uuid>, since: &str) -> Result<Line> {
        self.flush().await;
        let mut line = Line::default();
        for row in store::sums_of(&self.db, agent, since).await? {
            line.add(&row, self.prices(&row.provider, &row.model).as_ref());
        }
        Ok(line)
    }

    /// The sessions that cost most since `since`, most first, at most `limit`.
    pub async fn top_sessions(&self, since: Option<&str>, limit: usize) -> Result<Vec<SessionCost>> {
        self.flush().await;
        let mut by_session: BTreeMap<(String, String), Line> = BTreeMap::new();
        for row in store::session_sums(&self.db, since).await? {
            let (session, agent) =
                row.key.split_once(' ').map(|(s, a)| (s.to_string(), a.to_string())).unwrap_or_default();
            by_session.entry((session, agent)).or_default().add(&row, self.prices(&row.provider, &row.model).as_ref());
        }
        let mut costs: Vec<SessionCost> =
            by_session.into_iter().map(|((session, agent), line)| SessionCost { session, agent, line }).collect();
        costs.sort_by(|a, b| b.line.cost_usd.total_cmp(&a.line.cost_usd).then(b.line.tokens().cmp(&a.line.tokens())));
        costs.truncate(limit);
        Ok(costs)
    }
}

/// A session's usage.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SessionCost {
    pub session: String,
    pub agent: String,
    #[serde(flatten)]
    pub line: Line,
}

/// The writer: each wake-up writes what is queued in one transaction, then answers flushes.
async fn write(db: Db, mut rx: mpsc::UnboundedReceiver<Queued>) {
    while let Some(first) = rx.recv().await {
        let mut calls = Vec::new();
        let mut flushes = Vec::new();
        let mut take = |q: Queued| match q {
            Queued::Call(c) => calls.push(*c),
            Queued::Flush(done) => flushes.push(done),
        };
        take(first);
        while let Ok(q) = rx.try_recv() {
            take(q);
        }
        if !calls.is_empty()
            && let Err(e) = store::insert(&db, &calls).await
        {
            tracing::error!(error = %e, calls = calls.len(), "recording model calls failed");
        }
        for done in flushes {
            let _ = done.send(());
        }
    }
}

/// Checks a price from config.toml.
pub(crate) fn check_price(value: f64) -> std::result::Result<f64, String> {
    if value.is_finite() && (0.0..=1e6).contains(&value) {
        Ok(value)
    } else {
        Err(format!("expected a price in US dollars per million tokens from 0 to 1000000, found {value}"))
    }
}
/// Rolls the calls made before `before` up into daily lines (`[retention] model_calls_days`):
/// every report still counts them, by day, agent, session, provider and model. How many call
/// rows went.
pub(crate) async fn roll_up(db: &Db, before: &str) -> Result<u64> {
    store::roll_up(db, before).await
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn call(agent: Uuid, session: Uuid, model: &str, at: &str, input: u64) -> ModelCall {
        ModelCall {
            turn: Uuid::now_v7(),
            agent,
            session,
            provider: "p".into(),
            model: model.into(),
            purpose: "reply",
            compaction: None,
            first_seq: None,
            messages: 1,
            estimated_tokens: input,
            tokens: Tokens {
                input_tokens: input,
                output_tokens: 1,
                cached_tokens: input / 2,
                cache_write_tokens: 3,
                // Some calls' tokens are estimates: their count survives the roll-up too.
                estimated: input % 2 == 1,
            },
            outcome: "ok".into(),
            at: at.into(),
        }
    }

    /// Every report's figures, comparable.
    async fn figures(db: &Db) -> Vec<Vec<(String, String, String, [u64; 6])>> {
        let as_rows = |sums: Vec<store::Sum>| {
            let mut rows: Vec<_> = sums
                .into_iter()
                .map(|s| {
                    (s.key, s.provider, s.model, [s.calls, s.input, s.cached, s.cache_write, s.output, s.estimated])
                })
                .collect();
            rows.sort();
            rows
        };
        let mut out = Vec::new();
        for group in [Group::Agent, Group::Provider, Group::Model, Group::Day] {
            out.push(as_rows(store::sums(db, group, None).await.unwrap()));
        }
        out.push(as_rows(store::session_sums(db, None).await.unwrap()));
        out.push(as_rows(store::sums_of(db, None, "2026-01-02T00:00:00.000Z").await.unwrap()));
        out
    }

    #[tokio::test]
    async fn calls_past_their_retention_become_daily_lines_and_every_report_counts_them_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::db::open_for_test(dir.path()).await;
        let (a, b, s1, s2) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
        let calls = [
            call(a, s1, "m1", "2026-01-01T08:00:00.000Z", 100),
            call(a, s1, "m1", "2026-01-01T09:00:00.000Z", 50),
            call(a, s1, "m2", "2026-01-01T10:00:00.000Z", 7),
            call(b, s2, "m1", "2026-01-02T10:00:00.000Z", 5),
            call(a, s1, "m1", "2026-03-30T10:00:00.000Z", 1000),
        ];
        store::insert(&db, &calls).await.unwrap();
        let before = figures(&db).await;
        let estimated: u64 = before[1].iter().map(|(.., f)| f[5]).sum();
        assert_eq!(estimated, 2, "the calls of 7 and 5 tokens were estimated");

        assert_eq!(roll_up(&db, "2026-03-01T00:00:00.000Z").await.unwrap(), 4);
        let count = |table: &'static str| {
            let db = db.clone();
            async move {
                crate::db::query_scalar::<i64>(sqlx::AssertSqlSafe(format!("SELECT count(*) FROM {table}")))
                    .fetch_one(&db)
                    .await
                    .unwrap()
            }
        };
        assert_eq!((count("model_calls").await, count("usage_days").await), (1, 3), "two calls share a day's line");
        assert_eq!(figures(&db).await, before, "every report counts the rolled-up calls as before");

        // A call of a day already rolled up (written late) adds to its line.
        store::insert(&db, &[call(a, s1, "m1", "2026-01-01T23:00:00.000Z", 1)]).await.unwrap();
        let with_late = figures(&db).await;
        assert_eq!(roll_up(&db, "2026-03-01T00:00:00.000Z").await.unwrap(), 1);
        assert_eq!(count("usage_days").await, 3);
        assert_eq!(figures(&db).await, with_late);
        assert_eq!(roll_up(&db, "2026-03-01T00:00:00.000Z").await.unwrap(), 0, "nothing left to roll up");
    }
}
