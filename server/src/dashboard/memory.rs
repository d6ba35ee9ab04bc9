//! `/agents/{id}/memory`: the agent's key/value and semantic memory, and forgetting one
//! memory — through the same kernel services as `/api/agents/{id}/memory/…`.

use axum::Form;
use axum::extract::{Extension, Path, Query, State};
use axum::http::StatusCode;
use kennel_app::Paging;
use kennel_app::pages::memory::{self, MemoryPage};
use kennel_kernel::Kernel;
use kennel_kernel::memory::kv::{KvStore, KvWrite};
use kennel_kernel::memory::semantic::SemanticMemory;
use kennel_kernel::memory::semantic::{Scope, SearchOptions, Stats};
use kennel_kernel::page::PageRequest;
use serde::Deserialize;

use super::{Notice, Operator, PageResult, html, meta, next_page, see_other};
use crate::routes::{Action, Pages, get, post};

pub fn routes() -> Pages {
    Pages::new()
        .route("/agents/{id}/memory", get(page))
        .route("/agents/{id}/memory/{memory_id}/forget", post(forget, Action::named("memory.forget")))
        .route("/agents/{id}/memory/kv", post(store_key, Action::named("memory.store")))
        .route("/agents/{id}/memory/kv/remove", post(remove_key, Action::named("memory.remove")))
}

/// Keys, and memories, on one page.
const PER_PAGE: u32 = 100;

#[derive(Deserialize)]
pub struct MemoryQuery {
    /// A semantic search.
    q: Option<String>,
    /// Where the key/value list continues.
    kv_cursor: Option<String>,
    /// Where the list of memories continues.
    cursor: Option<String>,
}

pub async fn page(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(id): Path<String>,
    Query(q): Query<MemoryQuery>,
    notice: Notice,
) -> PageResult {
    let agent = kernel.agents().get(&id)?;
    let path = format!("/agents/{}/memory", agent.id);
    let kv = kernel
        .service::<KvStore>()
        .entries(agent.id, &PageRequest { cursor: q.kv_cursor, ..PageRequest::first(PER_PAGE) })
        .await?;
    let query = q.q.unwrap_or_default().trim().to_string();
    let (memories, memories_paging, stats, semantic_error) =
        match kernel.optional::<SemanticMemory>().ok_or_else(kennel_kernel::memory::semantic::switched_off) {
            Err(e) => (Vec::new(), None, Stats::switched_off(), Some(e.message)),
            Ok(store) => {
                let stats = store.stats(agent.id, &|_| true).await?;
                if query.is_empty() {
                    let page =
                        store.list(agent.id, &PageRequest { cursor: q.cursor, ..PageRequest::first(PER_PAGE) }).await?;
                    let paging = Paging { total: page.total, next: next_page(&path, &[], page.next.as_deref()) };
                    (page.items, Some(paging), stats, None)
                } else {
                    let options = SearchOptions::for_operator(Some(20), None)?;
                    (store.search(agent.id, &query, &options, &|_| true).await?, None, stats, None)
                }
            }
        };
    let kv_paging =
        Paging { total: kv.total, next: kv.next.as_deref().map(|n| format!("{path}?kv_cursor={}#kv", digits_only(n))) };
    let page = MemoryPage {
        csrf: op.csrf.clone(),
        kv: kv.items,
        kv_paging,
        query,
        memories,
        memories_paging,
        stats,
        semantic_error,
        agent,
    };
    let title = format!("Memory of {}", page.agent.name);
    Ok(html(
        StatusCode::OK,
        memory::render_memory(meta(&op, title, kennel_app::pages::agents::SECTION, notice.flash()), page),
    ))
}

/// A position cursor is digits only; anything else is dropped rather than put in a URL.
fn digits_only(cursor: &str) -> String {
    cursor.chars().filter(char::is_ascii_digit).collect()
}

/// Forgets one memory of the agent (an operator's forget; scopes bind agents, not people).
pub async fn forget(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path((id, memory_id)): Path<(String, String)>,
) -> PageResult {
    let agent = kernel.agents().get(&id)?;
    let memory_id = uuid::Uuid::parse_str(&memory_id)
        .map_err(|_| kennel_kernel::Error::invalid("not a memory id (a UUID)").with_field("memory_id"))?;
    let by = kennel_kernel::tool::Caller::Operator(op.name.clone()).audit_label();
    let forgotten = kernel
        .optional::<SemanticMemory>()
        .ok_or_else(kennel_kernel::memory::semantic::switched_off)?
        .forget(agent.id, memory_id, &by, Scope::everything())
        .await?;
    let notice = format!("Forgotten: “{}”", kennel_kernel::text::shorten(&forgotten.content, 80));
    Ok(see_other(&format!("/agents/{}/memory", agent.id), &notice))
}

#[derive(Deserialize)]
pub struct KeyForm {
    key: String,
    #[serde(default)]
    value: String,
}

/// Stores a value under a key of the agent's key/value memory (a new key, or an edit), with
/// the same bounds as `memory_store` and `PUT /api/agents/{id}/memory/kv/{key}`.
pub async fn store_key(
    State(kernel): State<Kernel>,
    Extension(_): Extension<Operator>,
    Path(id): Path<String>,
    Form(f): Form<KeyForm>,
) -> PageResult {
    let agent = kernel.agents().get(&id)?;
    let written = kernel.service::<KvStore>().store(agent.id, &f.key, &f.value, &[]).await?;
    let verb = match written {
        KvWrite::Created => "Stored",
        KvWrite::Replaced => "Replaced",
    };
    Ok(see_other(&format!("/agents/{}/memory#kv", agent.id), &format!("{verb} `{}`.", f.key)))
}

/// Removes a key from the agent's key/value memory.
pub async fn remove_key(
    State(kernel): State<Kernel>,
    Extension(_): Extension<Operator>,
    Path(id): Path<String>,
    Form(f): Form<KeyForm>,
) -> PageResult {
    let agent = kernel.agents().get(&id)?;
    let notice = match kernel.service::<KvStore>().remove(agent.id, &f.key).await? {
        true => format!("Removed `{}`.", f.key),
        false => format!("`{}` was not there.", f.key),
    };
    Ok(see_other(&format!("/agents/{}/memory#kv", agent.id), &notice))
}
