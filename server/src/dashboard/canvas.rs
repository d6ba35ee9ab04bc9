//! Canvases: every agent's latest (`/canvas`), one version with the agent's others
//! (`/canvas/{agent}/{version}`), the version's HTML alone for the sandboxed frame
//! (`/canvas/{agent}/{version}/frame`, with the canvas CSP), and the agent page's live feed
//! of new versions.

use axum::extract::{Extension, Path, Query, State};
use axum::http::StatusCode;
use axum::http::header::{CONTENT_TYPE, X_DNS_PREFETCH_CONTROL};
use axum::response::{IntoResponse, Response};
use kennel_app::Paging;
use kennel_app::pages::canvas::{self, Named, VersionPage};
use kennel_kernel::canvas::Canvases;
use kennel_kernel::{Error, Kernel};

use super::headers::canvas_policy;
use super::{Cursor, Operator, PageResult, html, meta, next_page};
use crate::routes::{Pages, get};

pub fn routes() -> Pages {
    Pages::new()
        .route("/agents/{id}/canvas/live", get(live))
        .route("/canvas", get(list))
        .route("/canvas/{agent}/{version}", get(version))
        .route("/canvas/{agent}/{version}/frame", get(frame))
}

/// Agents shown on the Canvases page; versions on a version page.
const LATEST_SHOWN: u32 = 60;
const VERSIONS_SHOWN: u32 = 50;

pub async fn list(State(kernel): State<Kernel>, Extension(op): Extension<Operator>) -> PageResult {
    let latest = kernel.service::<Canvases>().latest_of_each(LATEST_SHOWN).await?;
    let named = latest
        .into_iter()
        .map(|canvas| {
            let agent = kernel.agents().get(&canvas.agent_id.to_string()).map(|a| a.name.clone());
            Named { agent: agent.unwrap_or_else(|_| "a removed agent".into()), canvas }
        })
        .collect();
    Ok(html(
        StatusCode::OK,
        canvas::render_list(
            meta(&op, "Canvases", canvas::SECTION, None),
            named,
            kernel.config().retention.canvas_versions_days,
        ),
    ))
}

pub async fn version(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path((agent, version)): Path<(String, String)>,
    Query(cursor): Query<Cursor>,
) -> PageResult {
    let agent = kernel.agents().get(&agent)?;
    let (canvas, _) = kernel.service::<Canvases>().html(agent.id, parse_version(&version)?).await?;
    let versions = kernel.service::<Canvases>().versions(agent.id, &cursor.page(VERSIONS_SHOWN)).await?;
    let path = canvas.page_path();
    let page = VersionPage {
        paging: Paging { total: versions.total, next: next_page(&path, &[], versions.next.as_deref()) },
        versions: versions.items,
        agent_id: agent.id.to_string(),
        shown: Named { agent: agent.name.clone(), canvas },
    };
    let title = format!("{} · canvas", agent.name);
    Ok(html(StatusCode::OK, canvas::render_version(meta(&op, title, canvas::SECTION, None), page)))
}

/// The version's HTML as the agent wrote it, after [`PRELUDE`], under the canvas policy
/// (sandboxed, framed only by dashboard pages); network only if the agent's type says
/// `canvas_network = true`. DNS prefetching is off: a `<link rel=dns-prefetch>` would carry
/// data out in a host name, which no CSP directive covers.
pub async fn frame(
    State(kernel): State<Kernel>,
    Extension(_): Extension<Operator>,
    Path((agent, version)): Path<(String, String)>,
) -> PageResult {
    let agent = kernel.agents().get(&agent)?;
    let (_, body) = kernel.service::<Canvases>().html(agent.id, parse_version(&version)?).await?;
    let headers = [(CONTENT_TYPE, "text/html; charset=utf-8"), (X_DNS_PREFETCH_CONTROL, "off")];
    let res = (headers, with_prelude(&body)).into_response();
    Ok(canvas_policy(res, agent.manifest.canvas_network))
}

/// What runs before an agent's canvas HTML: the ways out of the page that the sandbox and the
/// CSP do not close (issue 41). WebRTC sends to any address (STUN binding requests to a
/// `stun:` server carry data, and its host name goes out through DNS), and no CSP directive
/// browsers enforce stops it, so the page's WebRTC interfaces are taken away for good
/// (non-configurable). A frame inside the canvas would get fresh ones, so frames are taken
/// out as they appear (in the document and in every shadow root), and what parses
/// declarative shadow roots, which no observer sees, is refused.
const PRELUDE: &str = r#"<script>(() => {
  'use strict';
  const fix = (target, name, value) => {
    try { Object.defineProperty(target, name, { value, writable: false, configurable: false }); } catch (e) {}
  };
  for (const name of Object.getOwnPropertyNames(window)) {
    if (/^(webkit)?RTC/.test(name)) fix(window, name, undefined);
  }
  const frames = 'iframe,frame,object,embed,portal,fencedframe';
  const strip = (root) => { for (const el of root.querySelectorAll(frames)) el.remove(); };
  const watch = (root) => {
    new MutationObserver(() => strip(root)).observe(root, { childList: true, subtree: true, attributes: true });
    strip(root);
  };
  const attach = Element.prototype.attachShadow;
  fix(Element.prototype, 'attachShadow', function (init) { const root = attach.call(this, init); watch(root); return root; });
  const refused = () => { throw new DOMException('not in a canvas', 'NotSupportedError'); };
  fix(Element.prototype, 'setHTMLUnsafe', refused);
  fix(ShadowRoot.prototype, 'setHTMLUnsafe', refused);
  fix(Document, 'parseHTMLUnsafe', refused);
  watch(document);
})();</script>"#;

/// `body` with [`PRELUDE`] first: after a leading `<!doctype …>` (so the page keeps its
/// standards mode), else at the very start. A declarative shadow root in the agent's own
/// markup (`shadowrootmode`) is made inert by renaming the attribute, since nothing can watch
/// inside one made closed.
fn with_prelude(body: &str) -> String {
    let body = neuter_declarative_shadow_roots(body);
    let trimmed = body.trim_start();
    let doctype_end = trimmed
        .get(..9)
        .filter(|start| start.eq_ignore_ascii_case("<!doctype"))
        .and_then(|_| trimmed.find('>'))
        .map(|end| body.len() - trimmed.len() + end + 1);
    match doctype_end {
        Some(end) => format!("{}{PRELUDE}{}", &body[..end], &body[end..]),
        None => format!("{PRELUDE}{body}"),
    }
}

/// Renames every `shadowrootmode` (any case) so the parser makes a plain template instead.
fn neuter_declarative_shadow_roots(body: &str) -> std::borrow::Cow<'_, str> {
    const NAME: &str = "shadowrootmode";
    if !body.to_ascii_lowercase().contains(NAME) {
        return std::borrow::Cow::Borrowed(body);
    }
    let lower = body.to_ascii_lowercase();
    let mut out = String::with_capacity(body.len());
    let mut last = 0;
    for (at, _) in lower.match_indices(NAME) {
        out.push_str(&body[last..at]);
        out.push_str("data-kennel-refused-shadowrootmode");
        last = at + NAME.len();
    }
    out.push_str(&body[last..]);
    std::borrow::Cow::Owned(out)
}

/// New versions of the agent's canvas as they are presented.
pub async fn live(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(agent): Path<String>,
) -> Result<Response, super::PageError> {
    let agent = kernel.agents().get(&agent)?;
    Ok(crate::live::canvas_stream(&kernel, crate::live::Holder::Session(op.cookie), agent.id).into_response())
}

fn parse_version(text: &str) -> Result<u32, Error> {
    text.parse().map_err(|_| Error::not_found(format!("no canvas version `{text}`: versions are numbers from 1")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prelude_goes_after_the_doctype_or_first_and_declarative_shadow_roots_are_renamed() {
        let page = with_prelude("  <!DOCTYPE html><p>hi</p>");
        assert!(page.starts_with("  <!DOCTYPE html><script>") && page.ends_with("</script><p>hi</p>"), "{page}");
        assert!(with_prelude("<p>no doctype</p>").starts_with("<script>(() =>"));
        let shadowed = with_prelude("<div><template ShadowRootMode=closed><iframe></iframe></template></div>");
        assert!(!shadowed.to_ascii_lowercase().contains(" shadowrootmode="), "{shadowed}");
        assert!(shadowed.contains("data-kennel-refused-shadowrootmode=closed"), "{shadowed}");
    }
}
