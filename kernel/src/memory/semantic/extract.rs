//! The memory extractor: what of a text is worth keeping, as facts with a category.
//!
//! Two extractors, one contract: a text in, zero or more candidate facts out, each with a
//! category (`[a-z_]`, 1–32). The rule-based one is deterministic and needs nothing; an
//! LLM one (`[proactive_memory] extraction_provider`) asks a chat model. Neither decides
//! whether a fact is new: the store compares each candidate with what it holds (see
//! `SemanticMemory::add`), the same way for both.

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::llm::{ChatRequest, Message, Provider};

/// The longest fact kept, in bytes; a longer sentence is cut at a word.
pub const MAX_FACT_BYTES: usize = 1000;
/// The fewest content words a fact needs.
const MIN_WORDS: usize = 3;

/// A fact the extractor proposes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub content: String,
    pub category: String,
}

/// A piece of the input the extractor did not keep, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    pub text: String,
    pub reason: String,
}

/// What an extractor made of a text.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Extraction {
    pub candidates: Vec<Candidate>,
    pub dropped: Vec<Dropped>,
}

pub enum Extractor {
    Rules,
    Llm { provider: Box<Provider>, model: String },
}

/// One call the LLM extractor made, for the meter: whoever asked for the extraction records
/// it against the agent it served, like a turn's calls.
pub struct ExtractorCall<'a> {
    pub provider: &'a str,
    pub model: &'a str,
    pub tokens: crate::llm::Usage,
    /// `ok`, or the error's kind.
    pub outcome: &'a str,
}

/// Where the extractor's calls are recorded.
pub type Metered<'a> = &'a (dyn Fn(ExtractorCall<'_>) + Send + Sync);

impl Extractor {
    /// What the stats say of it.
    pub fn describe(&self) -> String {
        match self {
            Extractor::Rules => "rules (deterministic, no model)".into(),
            Extractor::Llm { provider, model } => format!("LLM: provider `{}`, model `{model}`", provider.name()),
        }
    }

    pub fn is_llm(&self) -> bool {
        matches!(self, Extractor::Llm { .. })
    }

    /// The facts in `text`, which an agent asked to remember.
    pub async fn facts(&self, text: &str, metered: Metered<'_>) -> Result<Extraction> {
        match self {
            Extractor::Rules => Ok(rules(text, false)),
            Extractor::Llm { provider, model } => {
                llm(provider, model, &format!("Text to remember:\n{text}"), metered).await
            }
        }
    }

    /// The lasting facts a turn revealed (auto-memorize): from what `speaker` said, each fact
    /// saying who said it; an LLM also reads the reply.
    pub async fn from_turn(
        &self,
        speaker: &str,
        message: &str,
        reply: &str,
        metered: Metered<'_>,
    ) -> Result<Extraction> {
        match self {
            Extractor::Rules => {
                let mut out = rules(message, true);
                for c in &mut out.candidates {
                    c.content = clip(&format!("{speaker} said: {}", c.content));
                }
                Ok(out)
            }
            Extractor::Llm { provider, model } => {
                let prompt = format!(
                    "A conversation turn. Extract only lasting facts about the person, their work or their world that will still be true and useful in later conversations; none if there are none. Name the person as `{speaker}` where a fact is about them.\n\nThe person ({speaker}) said:\n{message}\n\nThe agent replied:\n{reply}"
                );
                llm(provider, model, &prompt, metered).await
            }
        }
    }
}

/// Rule-based extraction: sentences, cleaned of "remember that…"-style openings, questions and
/// fragments dropped; each categorised by its words. `personal_only` (auto-memorize) keeps
/// only first-person statements, the ones that say something lasting about the speaker.
pub fn rules(text: &str, personal_only: bool) -> Extraction {
    let mut out = Extraction::default();
    for sentence in sentences(text) {
        let cleaned = strip_opening(&sentence);
        if cleaned.ends_with('?') {
            out.dropped.push(Dropped { text: sentence, reason: "a question, not a fact".into() });
            continue;
        }
        if super::embed::stems(&cleaned).len() < MIN_WORDS {
            out.dropped.push(Dropped {
                text: sentence,
                reason: format!("too short to be a fact (fewer than {MIN_WORDS} content words)"),
            });
            continue;
        }
        if personal_only && !is_personal(&cleaned) {
            continue;
        }
        out.candidates.push(Candidate { category: categorise(&cleaned).into(), content: clip(&capitalised(&cleaned)) });
    }
    out
}

/// Splits at `.`, `!`, `?` or a line break followed by white space (not inside `3.5` or
/// `example.com`).
fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\n' {
            push_sentence(&mut out, &mut current);
            continue;
        }
        current.push(c);
        if matches!(c, '.' | '!' | '?') && chars.peek().is_none_or(|n| n.is_whitespace()) {
            push_sentence(&mut out, &mut current);
        }
    }
    push_sentence(&mut out, &mut current);
    out
}

fn push_sentence(out: &mut Vec<String>, current: &mut String) {
    let s = current.split_whitespace().collect::<Vec<_>>().join(" ");
    let s = s.trim_start_matches(['-', '*', '•', ' ']).to_string();
    if !s.is_empty() {
        out.push(s);
    }
    current.clear();
}

/// Openings that ask to remember rather than state: the fact is what follows.
const OPENINGS: &[&str] = &[
    "please remember that ",
    "please remember ",
    "remember that ",
    "remember: ",
    "remember ",
    "note that ",
    "note: ",
    "fyi, ",
    "fyi: ",
    "fyi ",
    "for the record, ",
    "keep in mind that ",
    "don't forget that ",
];

fn strip_opening(sentence: &str) -> String {
    let lower = sentence.to_lowercase();
    for opening in OPENINGS {
        if lower.starts_with(opening) && sentence.is_char_boundary(opening.len()) {
            return sentence[opening.len()..].trim().to_string();
        }
    }
    sentence.trim().to_string()
}

fn capitalised(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn clip(s: &str) -> String {
    if s.len() <= MAX_FACT_BYTES {
        return s.to_string();
    }
    let mut cut = MAX_FACT_BYTES;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    let cut = s[..cut].rfind(' ').unwrap_or(cut);
    format!("{}…", &s[..cut])
}

/// First-person statements: "I …", "my …", "we use …", "our …", "call me …".
fn is_personal(sentence: &str) -> bool {
    let lower = sentence.to_lowercase();
    let first: Vec<&str> = lower.split_whitespace().take(2).collect();
    matches!(first.first(), Some(&("i" | "i'm" | "im" | "my" | "we" | "we're" | "our" | "mine")))
        || lower.starts_with("call me ")
}

/// The category of a fact, by the words it uses. In order: the first rule that matches.
fn categorise(sentence: &str) -> &'static str {
    let lower = format!(" {} ", sentence.to_lowercase().replace(|c: char| !c.is_alphanumeric() && c != '\'', " "));
    let has = |words: &[&str]| words.iter().any(|w| lower.contains(&format!(" {w} ")));
    if has(&[
        "prefer",
        "prefers",
        "preferred",
        "like",
        "likes",
        "love",
        "loves",
        "hate",
        "hates",
        "dislike",
        "dislikes",
        "favorite",
        "favourite",
        "enjoy",
        "enjoys",
        "rather",
    ]) {
        "preference"
    } else if has(&["decided", "decide", "decision", "agreed", "chose", "chosen", "choose", "settled"]) {
        "decision"
    } else if has(&[
        "every",
        "daily",
        "weekly",
        "monthly",
        "monday",
        "mondays",
        "tuesday",
        "tuesdays",
        "wednesday",
        "wednesdays",
        "thursday",
        "thursdays",
        "friday",
        "fridays",
        "saturday",
        "saturdays",
        "sunday",
        "sundays",
        "deadline",
        "due",
        "meeting",
        "standup",
        "appointment",
    ]) {
        "schedule"
    } else if has(&[
        "birthday",
        "wife",
        "husband",
        "partner",
        "son",
        "daughter",
        "mother",
        "father",
        "brother",
        "sister",
        "friend",
        "manager",
        "colleague",
        "boss",
        "reports",
        "named",
        "called",
    ]) {
        "person"
    } else {
        "fact"
    }
}

/// A category an LLM named: `[a-z_]`, 1–32 characters; anything else becomes `fact`.
fn category_of(named: &str) -> String {
    let c = named.trim().to_lowercase().replace([' ', '-'], "_");
    if (1..=32).contains(&c.len()) && c.bytes().all(|b| b.is_ascii_lowercase() || b == b'_') {
        c
    } else {
        "fact".into()
    }
}

const LLM_SYSTEM: &str = "You extract lasting facts for an agent's long-term memory. Answer with JSON only, no prose: {\"facts\": [{\"content\": \"one self-contained fact in one sentence\", \"category\": \"preference|person|project|decision|schedule|fact\"}]}. Rewrite each fact so it stands on its own (names, not pronouns). Leave out questions, greetings, and anything temporary. An empty list is a valid answer.";

#[derive(Deserialize)]
struct LlmFacts {
    facts: Vec<LlmFact>,
}

#[derive(Deserialize)]
struct LlmFact {
    content: String,
    #[serde(default)]
    category: String,
}

async fn llm(provider: &Provider, model: &str, prompt: &str, metered: Metered<'_>) -> Result<Extraction> {
    let messages = [Message::User { content: prompt.to_string() }];
    let req = ChatRequest {
        model,
        system: LLM_SYSTEM,
        messages: &messages,
        tools: &[],
        max_tokens: 1024,
        cache_prefix: false,
        accepts_images: false,
        images: &Default::default(),
    };
    let reply = provider.chat(&req, &|_| {}).await.map_err(Error::from);
    let (tokens, outcome) = match &reply {
        Ok(r) => (r.usage.clone(), "ok"),
        Err(e) => (crate::llm::Usage::default(), e.kind.as_str()),
    };
    metered(ExtractorCall { provider: provider.name(), model, tokens, outcome });
    let reply = reply?;
    let text = reply.content.unwrap_or_default();
    let json = text.trim().trim_start_matches("```json").trim_start_matches("```").trim_end_matches("```").trim();
    let parsed: LlmFacts = serde_json::from_str(json).map_err(|e| {
        Error::failed(format!(
            "the extraction model `{model}` of provider `{}` did not answer with the facts as JSON ({e}); nothing was written",
            provider.name()
        ))
    })?;
    let mut out = Extraction::default();
    for fact in parsed.facts {
        let content = fact.content.split_whitespace().collect::<Vec<_>>().join(" ");
        if super::embed::stems(&content).len() < MIN_WORDS {
            out.dropped.push(Dropped { text: content, reason: "too short to be a fact".into() });
            continue;
        }
        out.candidates.push(Candidate { content: clip(&content), category: category_of(&fact.category) });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_become_facts_and_questions_and_fragments_are_dropped() {
        let out = rules("Remember that Priya prefers tea. The build runs on v3.5 of the toolchain! Why? ok", false);
        let facts: Vec<(&str, &str)> =
            out.candidates.iter().map(|c| (c.content.as_str(), c.category.as_str())).collect();
        assert_eq!(facts, [("Priya prefers tea.", "preference"), ("The build runs on v3.5 of the toolchain!", "fact")]);
        let reasons: Vec<&str> = out.dropped.iter().map(|d| d.reason.as_str()).collect();
        assert!(reasons[0].contains("question") && reasons[1].contains("too short"), "{reasons:?}");
    }

    #[test]
    fn auto_memorize_keeps_only_what_the_person_says_of_themselves() {
        let out = rules("My dog is called Biscuit. Can you book a table? The weather is awful today.", true);
        assert_eq!(out.candidates.len(), 1);
        assert_eq!(out.candidates[0].content, "My dog is called Biscuit.");
        assert_eq!(out.candidates[0].category, "person");
    }

    #[test]
    fn categories_follow_the_words() {
        assert_eq!(categorise("We decided to use Rust for the daemon"), "decision");
        assert_eq!(categorise("Standup is every Monday at 9"), "schedule");
        assert_eq!(categorise("The API listens on port 8443"), "fact");
        assert_eq!(category_of("Project Notes"), "project_notes");
        assert_eq!(category_of("<script>"), "fact");
    }

    #[test]
    fn long_facts_are_clipped_at_a_word() {
        let long = "word ".repeat(400);
        let out = rules(&long, false);
        assert!(out.candidates[0].content.len() <= MAX_FACT_BYTES + '…'.len_utf8());
        assert!(out.candidates[0].content.ends_with("word…"));
    }
}
