//! `/agents/{id}/memory`: an agent's two memory stores, side by side and kept apart as the
//! tools keep them — the key/value store (keys and values) and the semantic store (search
//! with relevance, confidence and tier; forget one; the stats).

use std::sync::Arc;

use kennel_kernel::agent::Agent;
use kennel_kernel::memory::kv::KvEntry;
use kennel_kernel::memory::semantic::{Memory, Stats};
use leptos::prelude::*;

use crate::shell::{PageMeta, Shell};
use crate::widgets::{Csrf, IntoRendered, Pager, Paging, TextArea, short_time};

pub struct MemoryPage {
    pub agent: Arc<Agent>,
    pub csrf: String,
    pub kv: Vec<KvEntry>,
    pub kv_paging: Paging,
    /// The search typed, if any.
    pub query: String,
    /// Hits of the search, or the newest memories without one.
    pub memories: Vec<Memory>,
    pub memories_paging: Option<Paging>,
    /// `enabled: false` when the store is switched off.
    pub stats: Stats,
    /// Why the semantic list could not be shown (the store is off).
    pub semantic_error: Option<String>,
}

pub fn render_memory(meta: PageMeta, page: MemoryPage) -> String {
    let id = page.agent.id.to_string();
    let name = page.agent.name.clone();
    let kv_shown = page.kv.len();
    let kv_action = format!("/agents/{id}/memory/kv");
    let kv_rows = page
        .kv
        .into_iter()
        .map(|e| {
            let (csrf, action) = (page.csrf.clone(), kv_action.clone());
            let confirm = format!("Remove the key {}?", e.key);
            view! {
                <tr>
                    <td><code>{e.key.clone()}</code></td>
                    <td>
                        <pre class="value">{e.value.clone()}</pre>
                        <details class="edit-value">
                            <summary>"edit"</summary>
                            <form method="post" action=action.clone() class="stack">
                                <Csrf token=csrf.clone()/>
                                <input type="hidden" name="key" value=e.key.clone()/>
                                <TextArea name="value" rows=3 value=e.value.clone() label="The new value"/>
                                <button type="submit" class="small">"Save"</button>
                            </form>
                        </details>
                    </td>
                    <td>{short_time(&e.updated_at)}</td>
                    <td>
                        <form method="post" action=format!("{action}/remove") class="inline" data-confirm=confirm>
                            <Csrf token=csrf/>
                            <input type="hidden" name="key" value=e.key/>
                            <button type="submit" class="link danger">"remove"</button>
                        </form>
                    </td>
                </tr>
            }
        })
        .collect::<Vec<_>>();
    let set_key = view! {
        <form method="post" action=kv_action class="row" id="kv-set">
            <Csrf token=page.csrf.clone()/>
            <label>"Key" <input type="text" name="key" required maxlength="256"/></label>
            <label>"Value" <TextArea name="value" rows=2/></label>
            <button type="submit">"Store"</button>
        </form>
    };
    let kv_table = if kv_shown == 0 {
        view! { <p class="hint">"No keys yet: the agent stores them with memory_store."</p> }.rendered()
    } else {
        view! {
            <div class="scroll">
                <table>
                    <thead><tr><th>"Key"</th><th>"Value"</th><th>"Updated"</th><th></th></tr></thead>
                    <tbody>{kv_rows}</tbody>
                </table>
            </div>
            <Pager shown=kv_shown paging=page.kv_paging/>
        }
        .rendered()
    };
    let searched = !page.query.is_empty();
    let shown = page.memories.len();
    let csrf = page.csrf.clone();
    let rows = page
        .memories
        .into_iter()
        .map(|m| {
            let relevance = m.relevance.map(|r| format!("{r:.2}")).unwrap_or_else(|| "—".into());
            view! {
                <tr>
                    <td>{m.content}</td>
                    <td>{m.category}</td>
                    <td>{m.tier.as_str()}</td>
                    <td>{format!("{:.2}", m.confidence)}</td>
                    <td>{relevance}</td>
                    <td>
                        <form method="post" action=format!("/agents/{}/memory/{}/forget", id, m.id) class="inline"
                            data-confirm="Forget this memory? The agent will never recall it again.">
                            <Csrf token=csrf.clone()/>
                            <button type="submit" class="danger">"Forget"</button>
                        </form>
                    </td>
                </tr>
            }
        })
        .collect::<Vec<_>>();
    let semantic = match page.semantic_error {
        Some(e) => view! { <p class="hint" role="status">{e}</p> }.rendered(),
        None if shown == 0 && searched => view! { <p class="hint">"No memory matches."</p> }.rendered(),
        None if shown == 0 => {
            view! { <p class="hint">"No memories yet: the agent adds them with memory_semantic_add."</p> }.rendered()
        }
        None => view! {
            <div class="scroll">
                <table>
                    <thead><tr><th>"Memory"</th><th>"Category"</th><th>"Tier"</th><th>"Confidence"</th><th>"Relevance"</th><th>"Forget"</th></tr></thead>
                    <tbody>{rows}</tbody>
                </table>
            </div>
            {page.memories_paging.map(|paging| view! { <Pager shown=shown paging=paging/> })}
        }
        .rendered(),
    };
    let s = page.stats;
    let counts = |map: std::collections::BTreeMap<String, u64>| {
        if map.is_empty() {
            "none".to_string()
        } else {
            map.into_iter().map(|(k, n)| format!("{k} {n}")).collect::<Vec<_>>().join(" · ")
        }
    };
    let on = |b: bool| if b { "on" } else { "off" };
    let stats = view! {
        <dl class="facts">
            <dt>"Store"</dt><dd>{if s.enabled { "enabled" } else { "switched off ([proactive_memory] enabled = false)" }}</dd>
            <dt>"Memories"</dt><dd>{format!("{} live · {} forgotten · {} merged", s.memories, s.forgotten, s.merged)}</dd>
            <dt>"By tier"</dt><dd>{counts(s.by_tier)}</dd>
            <dt>"By category"</dt><dd>{counts(s.by_category)}</dd>
            <dt>"Auto-recall"</dt><dd>{on(s.auto_recall)}</dd>
            <dt>"Auto-memorize"</dt><dd>{on(s.auto_memorize)}</dd>
            <dt>"Extractor"</dt><dd>{s.extractor}</dd>
            <dt>"Embedder"</dt><dd>{s.embedder}</dd>
        </dl>
    };
    crate::document(
        view! {
            <Shell meta>
                <h1>"Memory of "{name.clone()}</h1>
                <p class="hint"><a href=format!("/agents/{id}")>"Back to "{name}</a></p>
                <div class="grid">
                    <section class="card" id="semantic">
                        <h2>"Semantic memory"</h2>
                        <form method="get" action=format!("/agents/{id}/memory") class="inline" role="search">
                            <input type="search" name="q" value=page.query placeholder="Search by meaning" aria-label="Search the semantic memory"/>
                            <button type="submit">"Search"</button>
                        </form>
                        {semantic}
                        <h3>"Stats"</h3>
                        {stats}
                    </section>
                    <section class="card" id="kv">
                        <h2>"Key/value memory"</h2>
                        {kv_table}
                        <h3>"Store a key"</h3>
                        {set_key}
                    </section>
                </div>
            </Shell>
        }
        .to_html(),
    )
}
