//! Fitting a conversation into a model's context window.
//!
//! Each model has a window: `[providers.NAME.models.MODEL] context_tokens`, else what the
//! provider's refusal taught us (kept in `model_windows`), else its family's known window.
//! Before each call the request is estimated on the safe side (a token per three bytes, more
//! than any tokenizer we know gives for text, code or JSON), and when it would not fit the
//! session is compacted: older tool results become stubs, then older turns are summarised by
//! the model into one message. The stored history keeps every message; a compaction is a
//! view over it ([`View`]), stored per session, that every later call starts from.
//!
//! The planning here is pure and fast (a 2,000-message session plans in well under a
//! millisecond: `docs/BENCHMARKS.md`); the model call that writes a summary is the caller's.
//!
//! # Design notes
//!
//! ## Context windows and compaction
//!
//! - **The window** of a model: `[providers.NAME.models.MODEL] context_tokens`, else a window a
//!   refusal taught (kept in `model_windows` across restarts), else its family's known window
//!   (`KNOWN_WINDOWS`: `gpt-4o` 128k, `claude` 200k, `llama3` 8k, …, longest prefix, a router's
//!   `vendor/` prefix ignored), else none: the request is sent as it is until a refusal says
//!   otherwise. The reply's share is `min([kernel] max_reply_tokens, window / 4)`, sent as
//!   `max_tokens`, so a small model is never asked for more than it holds.
//! - **The estimate** is a token per three bytes of every text (plus a few per message and tool):
//!   more than real tokenizers count for English (~4 bytes), code and JSON (~3), and as much as
//!   CJK (3 bytes a character). **Calibration** (`Calibration`, per provider and model, in
//!   memory): every usage report and every refusal that names the prompt's tokens says how many
//!   estimate tokens a model token is (SmolLM2: ~1.7); the budget in estimate tokens is the
//!   window's in model tokens times that ratio, less a tenth. Ratios outside 0.4–2.4 are not a
//!   count of the text (a fixed number, cache-only counts) and teach nothing. Until a model has
//!   counted, a turn the estimate finds too large on its own is sent anyway, once, for the model
//!   to serve or refuse with its count; once counted, it is `TooLarge` (413) with the sizes,
//!   nothing sent. **Decision:** never refuse by estimate alone what the model has not counted.
//!   A refusal's count sets the ratio at once when lower (`learn_refused`), where a reply's
//!   usage is averaged in. A summary's transcript is sized with the ratio at most 1: it is plain
//!   text, which the estimate never undercounts, while a ratio learned on tool calls runs high
//!   (long call ids the server's template does not render). Found against llama-cpp-python's
//!   function-calling format: a turn that called the clock to the iteration cap, then a summary
//!   the server counted at 2,661 tokens for a 2,048 window.
//!   **Decision:** no tokenizer is called. Of our two wire protocols only Anthropic's documents
//!   one (`/v1/messages/count_tokens`, a round trip per call, as is llama.cpp's `/tokenize`);
//!   the request itself is counted instead: both protocols' refusals name the prompt's tokens
//!   and their replies' usage does, which is what the calibration reads.
//! - **Missing usage** (a server that streams none): the call's usage is the estimate, through
//!   the ratio, marked `estimated` (`model_calls.usage_estimated`, `Usage::estimated`), and
//!   budgets count it as a report.
//! - **Compaction** (`plan`), when system prompt + tools + history would not fit: first older tool
//!   results become stubs, oldest first (`[compacted: this result of \`x\` (N bytes) was
//!   removed…]`; a spilled result keeps its artifact id, so `read_artifact` still reaches it);
//!   then the oldest turns are summarised by the model into one message (`[Summary of the earlier
//!   conversation…]`), the cut always before a user message, so a tool call and its result are
//!   never parted. This turn's messages and the system prompt are never touched; a turn too large
//!   on its own is `TooLarge` (413) with both sizes (see *The estimate* above). **Decision:** compaction aims
//!   at 60% of the window, not just under it, so the next turns fit without compacting (and
//!   paying for a summary) again at once. The summary call asks for at most
//!   `clamp(budget / 8, 64, 1024)` tokens (`summary_allowance`), where its budget is the window
//!   less the reply's share, through the calibration ratio capped at 1, less a tenth, over a transcript cut to fit (pieces summarised in turn when
//!   it is long), and a summary longer than that is clipped.
//! - **Nothing is lost:** the stored history keeps every message. A compaction is a row of
//!   `session_compactions` (summary, `summary_through`, `stubbed_through`): a view over the
//!   history that every later call starts from and extends. Each `model_calls` row records the
//!   compaction it started from, the first stored message it sent and its estimate, so what any
//!   call sent can be rebuilt. A stub is used only where it is shorter than the result; the
//!   planner counts a summary at its longest as sent (its message's framing and a clip's note);
//!   a conversation still too long after four rounds is refused rather than sent. The chat shows a marker where each compaction took effect (with the
//!   summary the model was sent); `GET /api/sessions/{id}` lists them; the turn's events carry a
//!   `compacted` event.
//! - **A refusal for length** ("maximum context length is N", "prompt is too long: X > N",
//!   "Requested tokens (P) exceed context window of N") teaches N for that provider and model;
//!   with no number, half the refused estimate; a number at or above the window in use takes the
//!   window a quarter lower, unless the refusal also counted the prompt (then the calibration
//!   learned how far the estimate fell short, and the window stands). A learned window below a configured one wins. The call is
//!   made again compacted to it (three times at most), so a refusal never fails a turn that
//!   compaction can save. `agent_send` conversations, task wake-ups, schedules and A2A tasks are turns too.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::llm::{Message, ToolImage, ToolSpec};

/// A stored message with its place in the session (a repaired call's result shares its
/// call's place: it is not stored).
#[derive(Debug, Clone)]
pub struct Entry {
    pub seq: i64,
    pub message: Message,
}

/// How a session is shown to the model: a summary in place of every message up to
/// `summary_through`, and stubs in place of tool results up to `stubbed_through`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct View {
    /// The stored compaction this view is (`None`: the whole history as stored).
    pub id: Option<i64>,
    pub summary: Option<String>,
    pub summary_through: i64,
    pub stubbed_through: i64,
}

/// What the compaction of a request decided.
#[derive(Debug, PartialEq)]
pub enum Plan {
    /// The request fits as it is.
    Fits,
    /// Stub the tool results up to this place; then it fits.
    Stub { stubbed_through: i64 },
    /// Summarise the messages up to `through` (these, in the view's form) into one message,
    /// with tool results stubbed up to `stubbed_through` in what stays.
    Summarise { through: i64, stubbed_through: i64, messages: Vec<Message> },
    /// Even with everything before this turn summarised, this turn's own messages (and the
    /// system prompt and tools) need about `needed` tokens of the `budget`.
    TooLarge { needed: u64, budget: u64 },
}

/// Tokens a summary may take: what is left for it when planning.
pub fn summary_allowance(budget: u64) -> u64 {
    (budget / 8).clamp(64, 1024)
}

/// What a summary costs at its longest, as sent: its allowance clipped, in its message.
fn summary_at_most(budget: u64) -> u64 {
    let bytes = 3 * summary_allowance(budget) as usize;
    estimate(&summary_message(&clip(&"x".repeat(bytes + 1), bytes)))
}

/// What a compaction aims for below the budget, so the next turns fit without compacting again.
fn target(budget: u64) -> u64 {
    budget * 6 / 10
}

/// Tokens `bytes` of text may be, on the safe side.
pub fn tokens_of(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(3)
}

/// A message's tokens: its text and tool calls, and a few for the wire's framing.
pub fn estimate(m: &Message) -> u64 {
    const FRAMING: u64 = 6;
    FRAMING
        + match m {
            Message::User { content } => tokens_of(content.len()),
            Message::Assistant { content, tool_calls } => {
                tokens_of(content.as_deref().map_or(0, str::len))
                    + tool_calls
                        .iter()
                        .map(|c| FRAMING + tokens_of(c.id.len() + c.name.len() + json_len(&c.arguments)))
                        .sum::<u64>()
            }
            Message::Tool { call_id, name, content, image, .. } => {
                // An image not sent is a line of text (the longer of its two forms); one sent
                // is counted apart, at IMAGE_TOKENS.
                let note = image.as_ref().map_or(0, |i| crate::llm::image_note(&i.path, false).len() + 1);
                tokens_of(call_id.len() + name.len() + content.len() + note)
            }
        }
}

/// How many tool results' images one model call sends: those of the latest results that
/// carry one. Older ones go as their path ([`crate::llm::image_note`]), so a long browsing
/// session does not send every screenshot it took with every call.
pub const MAX_IMAGES_SENT: usize = 3;

/// What a sent image is counted as, in tokens, whatever its size: Anthropic counts about
/// width × height / 750 and scales images down to about 1.15 megapixels (1,600 tokens at
/// most); OpenAI's high detail counts 85 + 170 per 512-pixel tile of the scaled image (1,105
/// for a 1280×800 screenshot). The safe side of both.
pub const IMAGE_TOKENS: u64 = 1_600;

/// How many images a call made from `view` may send at most (stubs made while fitting may
/// send fewer): what fitting the call leaves room for.
pub fn images_at_most(entries: &[Entry], view: &View) -> usize {
    entries
        .iter()
        .rev()
        .filter(|e| e.seq > view.summary_through.max(view.stubbed_through))
        .filter(|e| matches!(e.message, Message::Tool { image: Some(_), .. }))
        .take(MAX_IMAGES_SENT)
        .count()
}

/// The tool results among `messages` whose images a call sends (to a model that takes
/// images): the last [`MAX_IMAGES_SENT`] that carry one, oldest first, as (call id, image).
pub fn images_to_send(messages: &[Message]) -> Vec<(&str, &ToolImage)> {
    let mut latest: Vec<(&str, &ToolImage)> = messages
        .iter()
        .rev()
        .filter_map(|m| match m {
            Message::Tool { call_id, image: Some(image), .. } => Some((call_id.as_str(), image)),
            _ => None,
        })
        .take(MAX_IMAGES_SENT)
        .collect();
    latest.reverse();
    latest
}

/// The system prompt's and the tools' tokens: what every call of a turn carries.
pub fn fixed_tokens(system: &str, tools: &[ToolSpec]) -> u64 {
    tokens_of(system.len())
        + tools.iter().map(|t| 8 + tokens_of(t.name.len() + t.description.len() + json_len(&t.parameters))).sum::<u64>()
}

fn json_len(v: &serde_json::Value) -> usize {
    serde_json::to_vec(v).map_or(0, |b| b.len())
}

/// The message that stands for everything a summary covers.
pub fn summary_message(summary: &str) -> Message {
    Message::User {
        content: format!(
            "[Summary of the earlier conversation, written when it no longer fit the model's context window]\n{summary}"
        ),
    }
}

/// What a tool result becomes when stubbed. A spilled result keeps its artifact id, so the
/// model can read it again.
pub fn stub(name: &str, content: &str, is_error: bool) -> String {
    let artifact = serde_json::from_str::<serde_json::Value>(content)
        .ok()
        .and_then(|v| v.get("artifact_id").and_then(|a| a.as_str()).map(str::to_string));
    let what = if is_error { "error" } else { "result" };
    match artifact {
        Some(id) => format!(
            "[compacted: this {what} of `{name}` was removed to fit the context window; it is artifact {id} (read_artifact)]"
        ),
        None => format!(
            "[compacted: this {what} of `{name}` ({} bytes) was removed to fit the context window]",
            content.len()
        ),
    }
}

/// The messages a view sends: the summary, then the stored messages after it, stubbed.
pub fn build(entries: &[Entry], view: &View) -> Vec<Message> {
    let mut out = Vec::with_capacity(entries.len() + 1);
    if let Some(summary) = &view.summary {
        out.push(summary_message(summary));
    }
    for e in entries.iter().filter(|e| e.seq > view.summary_through) {
        out.push(shown(e, view.stubbed_through).into_owned());
    }
    out
}

/// A stored message as a view with stubs through `stubbed_through` sends it. A result shorter
/// than its stub keeps its text; a stubbed result's image is never sent.
fn shown(e: &Entry, stubbed_through: i64) -> std::borrow::Cow<'_, Message> {
    match &e.message {
        Message::Tool { call_id, name, content, is_error, image } if e.seq <= stubbed_through => {
            let stubbed = stub(name, content, *is_error);
            let shorter = stubbed.len() < content.len();
            if !shorter && image.is_none() {
                return std::borrow::Cow::Borrowed(&e.message);
            }
            std::borrow::Cow::Owned(Message::Tool {
                call_id: call_id.clone(),
                name: name.clone(),
                content: if shorter { stubbed } else { content.clone() },
                is_error: *is_error,
                image: None,
            })
        }
        other => std::borrow::Cow::Borrowed(other),
    }
}

/// Decides how the request for a turn whose first message is at `turn_start` fits `budget`
/// tokens (the window less the reply's share), given the session's `view`. Never touches the
/// current turn's messages (nor the system prompt and tools, in `fixed`), and cuts only
/// before a user message, so a tool call and its result are never parted.
pub fn plan(entries: &[Entry], view: &View, turn_start: i64, fixed: u64, budget: u64) -> Plan {
    let visible: Vec<&Entry> = entries.iter().filter(|e| e.seq > view.summary_through).collect();
    let costs: Vec<u64> = visible.iter().map(|e| estimate(&shown(e, view.stubbed_through))).collect();
    let summary_cost = view.summary.as_deref().map_or(0, |s| estimate(&summary_message(s)));
    let mut total = fixed + summary_cost + costs.iter().sum::<u64>();
    if total <= budget {
        return Plan::Fits;
    }

    // First: stub older tool results, oldest first, down to the target.
    let mut stubbed_through = view.stubbed_through;
    let goal = target(budget);
    for (e, cost) in visible.iter().zip(&costs) {
        if total <= goal || e.seq >= turn_start {
            break;
        }
        if matches!(e.message, Message::Tool { .. }) && e.seq > stubbed_through {
            total -= cost.saturating_sub(estimate(&shown(e, e.seq)));
            stubbed_through = e.seq;
        }
    }
    if total <= budget {
        return Plan::Stub { stubbed_through };
    }

    // Then: summarise the oldest turns. The cut is the first user message (before this turn's,
    // at the latest) after which what stays, with a summary, is within the target; else the
    // latest cut that is within the budget.
    let stubbed_cost = |e: &Entry| estimate(&shown(e, stubbed_through));
    let allowance = summary_at_most(budget);
    let mut remaining: u64 = fixed + visible.iter().map(|e| stubbed_cost(e)).sum::<u64>();
    let mut chosen = None;
    for (i, e) in visible.iter().enumerate() {
        let is_cut = i > 0 && matches!(e.message, Message::User { .. }) && e.seq <= turn_start;
        if is_cut {
            chosen = Some(i);
            if remaining + allowance <= goal {
                break;
            }
        }
        if e.seq >= turn_start {
            break;
        }
        remaining -= stubbed_cost(e);
    }
    let Some(cut) = chosen else {
        return Plan::TooLarge { needed: total, budget };
    };
    let staying: u64 = fixed + visible[cut..].iter().map(|e| stubbed_cost(e)).sum::<u64>();
    if staying + allowance > budget {
        return Plan::TooLarge { needed: staying + allowance, budget };
    }
    let mut messages: Vec<Message> = Vec::with_capacity(cut + 1);
    if let Some(summary) = &view.summary {
        messages.push(summary_message(summary));
    }
    messages.extend(visible[..cut].iter().map(|e| shown(e, stubbed_through).into_owned()));
    let through = visible[cut - 1].seq;
    Plan::Summarise { through, stubbed_through: stubbed_through.max(through), messages }
}

/// The text a summary is written from: the messages as a transcript, each cut to at most
/// `max_bytes_each` so one huge result cannot crowd out the rest.
pub fn transcript(messages: &[Message], max_bytes_each: usize) -> Vec<String> {
    let cut = |s: &str| clip(s, max_bytes_each);
    messages
        .iter()
        .map(|m| match m {
            Message::User { content } => format!("USER: {}", cut(content)),
            Message::Assistant { content, tool_calls } => {
                let mut line = format!("ASSISTANT: {}", cut(content.as_deref().unwrap_or_default()));
                for c in tool_calls {
                    line.push_str(&format!("\n  (called {} with {})", c.name, cut(&c.arguments.to_string())));
                }
                line
            }
            Message::Tool { name, content, is_error, image, .. } => {
                let mut line =
                    format!("TOOL {name} {}: {}", if *is_error { "failed" } else { "returned" }, cut(content));
                if let Some(image) = image {
                    line.push_str(&format!(" (an image, saved at {})", image.path));
                }
                line
            }
        })
        .collect()
}

/// `s` cut to at most `max_bytes` (at a character boundary), saying how much was left out.
pub fn clip(s: &str, max_bytes: usize) -> String {
    if s.len() <= max_bytes {
        return s.to_string();
    }
    let mut end = max_bytes;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{} […{} more bytes]", &s[..end], s.len() - end)
}

/// The instructions for writing a summary.
pub const SUMMARY_PROMPT: &str = "You are compacting a conversation between a user and an AI agent so it fits the agent's context window. Write a faithful summary the agent can continue from: the user's requests and preferences, decisions made, facts learned, tool results that still matter (with ids, paths and numbers exact), what is done and what is still open. Write it in the first person plural, as notes. Do not invent anything.";

/// Known context windows by model family, for models nobody configured: the longest
/// matching prefix wins. A vendor prefix (`openai/gpt-4o`, as routers name models) is
/// ignored.
const KNOWN_WINDOWS: &[(&str, u64)] = &[
    ("gpt-5", 400_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4-32k", 32_768),
    ("gpt-4", 8_192),
    ("gpt-3.5-turbo", 16_385),
    ("o1-mini", 128_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("claude", 200_000),
    ("gemini", 1_048_576),
    ("llama3.1", 131_072),
    ("llama3.2", 131_072),
    ("llama3.3", 131_072),
    ("llama-3.1", 131_072),
    ("llama-3.2", 131_072),
    ("llama-3.3", 131_072),
    ("llama3", 8_192),
    ("llama-3", 8_192),
    ("mistral-large", 131_072),
    ("mixtral", 32_768),
    ("qwen2.5", 32_768),
    ("deepseek", 65_536),
];

pub fn known_window(model: &str) -> Option<u64> {
    let name = model.rsplit('/').next().unwrap_or(model).to_ascii_lowercase();
    KNOWN_WINDOWS.iter().filter(|(prefix, _)| name.starts_with(prefix)).max_by_key(|(p, _)| p.len()).map(|&(_, n)| n)
}

/// What refusals taught about models nobody configured, by (provider, model); the store
/// keeps them across restarts.
#[derive(Default)]
pub struct LearnedWindows(Mutex<HashMap<(String, String), u64>>);

impl LearnedWindows {
    pub fn new(known: impl IntoIterator<Item = ((String, String), u64)>) -> LearnedWindows {
        LearnedWindows(Mutex::new(known.into_iter().collect()))
    }

    pub fn get(&self, provider: &str, model: &str) -> Option<u64> {
        self.0.lock().expect("windows lock").get(&(provider.to_string(), model.to_string())).copied()
    }

    pub fn set(&self, provider: &str, model: &str, tokens: u64) {
        self.0.lock().expect("windows lock").insert((provider.to_string(), model.to_string()), tokens);
    }
}

/// How many of our estimate's tokens each of a model's real tokens is, learned per provider
/// and model from what it reports: the usage of each reply, and the prompt size a refusal for
/// length names. Our estimate counts a token per three bytes, on the safe side; SmolLM2's
/// tokenizer takes about five bytes of English per token, so a window configured in the
/// model's tokens holds more of ours. Unlearned, the ratio is 1 (the estimate as it is).
#[derive(Default)]
pub struct Calibration(Mutex<HashMap<(String, String), f64>>);

impl Calibration {
    /// Text runs up to about 7 bytes a token (plain English): a count that makes a token more
    /// is not of the text sent (a server that reports a fixed number, or only the tokens its
    /// cache missed) and teaches nothing. A count far above our estimate is real, though: a
    /// server's chat template can add much (llama.cpp's function-calling format describes
    /// the tools at length), and the model's window holds what it counts.
    const RANGE: (f64, f64) = (0.05, 2.4);
    /// Requests smaller than this teach nothing (the framing of a few messages is noise).
    const LEAST_TOKENS: u64 = 64;

    pub fn ratio(&self, provider: &str, model: &str) -> Option<f64> {
        self.0.lock().expect("calibration lock").get(&(provider.to_string(), model.to_string())).copied()
    }

    /// Learns from a request we estimated at `estimated` that the model counted as `counted`
    /// tokens (a reply's usage); whether it did. The latest count weighs most, as the
    /// conversation's text changes.
    pub fn learn(&self, provider: &str, model: &str, estimated: u64, counted: u64) -> bool {
        self.observe(provider, model, estimated, counted, |ratio, seen| (ratio + 3.0 * seen) / 4.0)
    }

    /// Learns from a refusal for length that counted the request: the ratio goes at once to
    /// what the refusal says if that is lower, so the next request fits (an average would
    /// take several refusals to get there). Whether it learned.
    pub fn learn_refused(&self, provider: &str, model: &str, estimated: u64, counted: u64) -> bool {
        self.observe(provider, model, estimated, counted, f64::min)
    }

    fn observe(&self, provider: &str, model: &str, estimated: u64, counted: u64, next: fn(f64, f64) -> f64) -> bool {
        if counted < Self::LEAST_TOKENS || estimated < Self::LEAST_TOKENS {
            return false;
        }
        let seen = estimated as f64 / counted as f64;
        if !(Self::RANGE.0..=Self::RANGE.1).contains(&seen) {
            return false;
        }
        let mut ratios = self.0.lock().expect("calibration lock");
        let ratio = ratios.entry((provider.to_string(), model.to_string())).or_insert(seen);
        *ratio = next(*ratio, seen);
        true
    }

    /// `tokens` of the model's as estimate tokens, with a tenth held back for the text that
    /// differs from what the ratio was learned on.
    pub fn to_estimate(ratio: Option<f64>, tokens: u64) -> u64 {
        match ratio {
            Some(r) => (tokens as f64 * r * 0.9) as u64,
            None => tokens,
        }
    }

    /// `estimated` tokens of ours as the model's, as near as the ratio knows.
    pub fn to_model(ratio: Option<f64>, estimated: u64) -> u64 {
        (estimated as f64 / ratio.unwrap_or(1.0)).ceil() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolCall;
    use serde_json::json;

    #[test]
    fn calibration_learns_how_a_model_counts_and_ignores_counts_that_are_not_of_the_text() {
        let c = Calibration::default();
        assert_eq!(c.ratio("p", "m"), None);
        assert_eq!(Calibration::to_estimate(None, 2048), 2048, "unlearned, the estimate stands");
        // SmolLM2: 6,000 bytes (2,000 of ours) counted as 1,200 tokens.
        assert!(c.learn("p", "m", 2_000, 1_200));
        let ratio = c.ratio("p", "m").unwrap();
        assert!((ratio - 2_000.0 / 1_200.0).abs() < 1e-9, "{ratio}");
        assert_eq!(Calibration::to_estimate(Some(ratio), 1_200), 1_800, "a tenth held back");
        assert_eq!(Calibration::to_model(Some(ratio), 2_000), 1_200);
        // A fixed usage of 10 tokens, or a tiny request, teaches nothing.
        assert!(!c.learn("p", "m", 2_000, 10));
        assert!(!c.learn("p", "m", 40, 30));
        assert_eq!(c.ratio("p", "m"), Some(ratio));
        // The latest count weighs three quarters; other models are apart.
        assert!(c.learn("p", "m", 1_000, 1_000));
        assert!((c.ratio("p", "m").unwrap() - (ratio + 3.0) / 4.0).abs() < 1e-9);
        assert_eq!(c.ratio("p", "other"), None);
        // A server's template that quadruples the prompt is a real count.
        assert!(c.learn("p", "tools", 500, 2_000));
        assert_eq!(c.ratio("p", "tools"), Some(0.25));
        // A refusal's count is taken at once when it says the model counts more.
        assert!(c.learn("p", "ids", 2_000, 1_000));
        assert!(c.learn_refused("p", "ids", 2_000, 2_000));
        assert_eq!(c.ratio("p", "ids"), Some(1.0), "not an average: the next request must fit");
        assert!(c.learn_refused("p", "ids", 2_000, 1_000));
        assert_eq!(c.ratio("p", "ids"), Some(1.0), "and never raised by a refusal");
    }

    fn user(seq: i64, text: &str) -> Entry {
        Entry { seq, message: Message::User { content: text.into() } }
    }
    fn call(seq: i64, id: &str) -> Entry {
        Entry {
            seq,
            message: Message::Assistant {
                content: None,
                tool_calls: vec![ToolCall { id: id.into(), name: "t".into(), arguments: json!({}) }],
            },
        }
    }
    fn result(seq: i64, id: &str, bytes: usize) -> Entry {
        Entry {
            seq,
            message: Message::Tool {
                call_id: id.into(),
                name: "t".into(),
                content: "x".repeat(bytes),
                is_error: false,
                image: None,
            },
        }
    }
    fn reply(seq: i64, text: &str) -> Entry {
        Entry { seq, message: Message::Assistant { content: Some(text.into()), tool_calls: vec![] } }
    }

    /// Turns of: user, tool call, a result of `bytes`, reply.
    fn session(turns: i64, bytes: usize) -> Vec<Entry> {
        (0..turns)
            .flat_map(|t| {
                let s = t * 4;
                let id = format!("c{t}");
                vec![user(s + 1, "question"), call(s + 2, &id), result(s + 3, &id, bytes), reply(s + 4, "answer")]
            })
            .collect()
    }

    fn cost(messages: &[Message]) -> u64 {
        messages.iter().map(estimate).sum()
    }

    #[test]
    fn a_request_that_fits_is_left_alone() {
        let entries = session(3, 100);
        assert_eq!(plan(&entries, &View::default(), 9, 10, 10_000), Plan::Fits);
    }

    #[test]
    fn older_tool_results_are_stubbed_first_and_the_current_turn_never() {
        let entries = session(4, 3_000);
        let budget = 2_500;
        let Plan::Stub { stubbed_through } = plan(&entries, &View::default(), 13, 50, budget) else {
            panic!("expected stubs")
        };
        assert!(stubbed_through < 13, "the current turn's result (seq 15) is never stubbed");
        let view = View { stubbed_through, ..View::default() };
        let sent = build(&entries, &view);
        assert!(50 + cost(&sent) <= budget);
        assert!(matches!(&sent[14], Message::Tool { content, .. } if content.len() == 3_000));
        assert!(matches!(&sent[2], Message::Tool { content, .. } if content.starts_with("[compacted:")));
    }

    #[test]
    fn older_turns_are_summarised_at_a_user_message_and_what_stays_fits() {
        let entries = session(100, 200);
        let budget = 3_000;
        let Plan::Summarise { through, stubbed_through, messages } = plan(&entries, &View::default(), 397, 100, budget)
        else {
            panic!("expected a summary")
        };
        assert!(matches!(entries.iter().find(|e| e.seq == through + 1).unwrap().message, Message::User { .. }));
        assert_eq!(messages.len() as i64, through, "every message up to the cut is summarised");
        let view = View {
            id: None,
            summary: Some("s".repeat(3 * summary_allowance(budget) as usize - 150)),
            summary_through: through,
            stubbed_through,
        };
        assert!(100 + cost(&build(&entries, &view)) <= budget);
    }

    #[test]
    fn a_turn_too_large_on_its_own_is_said_so() {
        let entries = vec![user(1, "go"), call(2, "a"), result(3, "a", 30_000)];
        assert!(matches!(plan(&entries, &View::default(), 1, 10, 2_000), Plan::TooLarge { .. }));
    }

    fn shot(seq: i64, id: &str) -> Entry {
        let image = ToolImage { path: format!("screenshots/{id}.png"), media_type: "image/png".into() };
        Entry {
            seq,
            message: Message::Tool {
                call_id: id.into(),
                name: "shot".into(),
                content: format!(r#"{{"path":"{}","media_type":"image/png"}}"#, image.path),
                is_error: false,
                image: Some(image),
            },
        }
    }

    #[test]
    fn only_the_last_three_images_are_sent_and_stubbed_results_send_none() {
        let entries = vec![
            user(1, "go"),
            shot(2, "a"),
            shot(3, "b"),
            result(4, "t", 10),
            shot(5, "c"),
            reply(6, "so"),
            shot(7, "d"),
        ];
        let sent = build(&entries, &View::default());
        let ids: Vec<&str> = images_to_send(&sent).into_iter().map(|(id, _)| id).collect();
        assert_eq!(ids, ["b", "c", "d"], "the latest three, oldest first");
        assert_eq!(images_to_send(&sent[..3]).len(), 2, "fewer when there are fewer");

        let view = View { stubbed_through: 3, ..View::default() };
        let sent = build(&entries, &view);
        assert!(matches!(&sent[1], Message::Tool { image: None, .. }), "a stubbed result drops its image");
        let ids: Vec<&str> = images_to_send(&sent).into_iter().map(|(id, _)| id).collect();
        assert_eq!(ids, ["c", "d"]);
        assert_eq!(images_at_most(&entries, &view), 2);
        assert_eq!(images_at_most(&entries, &View::default()), 3);
        let mut plain = shot(2, "a");
        if let Message::Tool { image, .. } = &mut plain.message {
            *image = None;
        }
        assert!(estimate(&shot(2, "a").message) > estimate(&plain.message), "an image's note is counted");
    }

    #[test]
    fn spilled_results_keep_their_artifact_id_when_stubbed() {
        let spilled = json!({"spilled": true, "artifact_id": "abc123", "preview": "…"}).to_string();
        assert!(stub("web_fetch", &spilled, false).contains("artifact abc123"));
    }

    #[test]
    fn known_windows_go_by_the_longest_prefix() {
        assert_eq!(known_window("gpt-4o-mini"), Some(128_000));
        assert_eq!(known_window("gpt-4"), Some(8_192));
        assert_eq!(known_window("openai/gpt-4.1-mini"), Some(1_047_576));
        assert_eq!(known_window("claude-sonnet-4-5"), Some(200_000));
        assert_eq!(known_window("tiny-local-model"), None);
    }
}
