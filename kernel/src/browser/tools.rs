//! The ten browser tools (spec §9). Each works on the calling agent's active tab; every result
//! says which tab, and a call that found the browser restarted says so in `notice`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chromiumoxide::cdp::browser_protocol::page::{
    CaptureScreenshotFormat, GetNavigationHistoryParams, NavigateToHistoryEntryParams, StopLoadingParams,
};
use chromiumoxide::page::ScreenshotParams;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::pages::{self, PageState};
use super::{Browsers, Session, cdp_error, scripts};
use crate::agent::Agents;
use crate::error::{Error, ErrorKind, Result};
use crate::family::Services;
use crate::tool::availability::Needs;
use crate::tool::{CallContext, NoArgs, Registry, Tool, ToolDef};
use crate::workspace::Workspaces;

const FAMILY: &str = "browser";
/// The most text `browser_type` types, and the longest script `browser_run_js` runs.
const MAX_TYPED_CHARS: usize = 10_000;
const MAX_SCRIPT_BYTES: usize = 100_000;
/// How long a page's input handlers get after the last key (debounced search boxes).
const TYPE_SETTLE: Duration = Duration::from_millis(150);
/// What "network idle" means: no request in flight for this long.
const NETWORK_QUIET: Duration = Duration::from_millis(500);
const DEFAULT_WAIT_MS: u64 = 10_000;
const MAX_WAIT_MS: u64 = 120_000;
/// One scroll step: most of the 800-pixel viewport, so a line stays in view.
const SCROLL_STEP: i64 = 640;
/// The tallest full-page screenshot: Chromium draws the whole page at once, and vision models
/// refuse images taller than 8,000 px anyway (they get the path instead).
const MAX_FULL_PAGE_PX: u64 = 16_384;

/// What the browser tools reach, taken from the kernel's services when they are registered.
#[derive(Clone)]
pub(super) struct Uses {
    /// `None` without `[browser]` (the tools are then excluded).
    browsers: Option<Arc<Browsers>>,
    agents: Arc<Agents>,
    workspaces: Arc<Workspaces>,
}

impl Uses {
    fn browsers(&self) -> Result<&Arc<Browsers>> {
        self.browsers.as_ref().ok_or_else(|| Error::unavailable("[browser] is not configured"))
    }
}

pub(super) fn register(r: &mut Registry, services: &Services, needs: &Needs) {
    let uses = Uses { browsers: services.shared(), agents: services.need(), workspaces: services.need() };
    r.add_needing(Navigate(uses.clone()), needs);
    r.add_needing(Back(uses.clone()), needs);
    r.add_needing(Click(uses.clone()), needs);
    r.add_needing(Type(uses.clone()), needs);
    r.add_needing(Scroll(uses.clone()), needs);
    r.add_needing(Wait(uses.clone()), needs);
    r.add_needing(Screenshot(uses.clone()), needs);
    r.add_needing(ReadPage(uses.clone()), needs);
    r.add_needing(RunJs(uses.clone()), needs);
    r.add_needing(Close(uses.clone()), needs);
}

fn def(name: &str, description: &str, tags: &[&str]) -> ToolDef {
    // One tab takes one action at a time, in the order the model asked.
    ToolDef::new(name, FAMILY, description).tags(tags).exclusive()
}

async fn session(uses: &Uses, ctx: &CallContext) -> Result<Session> {
    let session = uses.browsers()?.session(ctx.agent.id).await?;
    // Stopping an agent closes its pages; a call that raced the stop must not open new ones.
    if !uses.agents.get(&ctx.agent.id.to_string()).is_ok_and(|a| a.is_running()) {
        return Err(Error::conflict("this agent is stopped: its browser is closed"));
    }
    Ok(session)
}

/// A result with the browser's restart notice, when this call started it again.
fn answer(session: &Session, mut value: Value) -> Value {
    if let (Some(notice), Some(map)) = (&session.notice, value.as_object_mut()) {
        map.insert("notice".into(), Value::from(notice.clone()));
    }
    value
}

/// Records where the active tab is now.
fn remember(session: &mut Session, state: &PageState) -> Result<u32> {
    let tab = session.active()?;
    tab.url = state.url.clone();
    tab.title = state.title.clone();
    Ok(tab.id)
}

/// A page the guard's proxy answered instead of the site, as the refusal it is.
fn refused(state: &PageState) -> Result<()> {
    match &state.refused {
        Some(reason) => Err(Error::forbidden(format!("the browser may not load this page: {reason}"))),
        // Chromium's own error page: the address could not be reached (or its tunnel was refused).
        None if state.url.starts_with("chrome-error:") => Err(Error::failed(
            "the page could not be loaded (its address is unreachable, or [browser] allowed_hosts does not open it)",
        )),
        None => Ok(()),
    }
}

// ---------------------------------------------------------------------------------------------

pub(super) struct Navigate(Uses);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct NavigateArgs {
    /// An http or https URL.
    url: String,
    /// Open it in a new tab (refused when the pool is full) instead of the active one.
    #[serde(default)]
    new_tab: bool,
    /// Navigate this open tab (and make it the active one) instead of the active one.
    tab: Option<u32>,
}

impl Tool for Navigate {
    type Args = NavigateArgs;

    fn def(&self) -> ToolDef {
        def(
            "browser_navigate",
            "Open a URL in the active browser tab (or a new tab, or a given one) and wait for it to load. \
             Returns the tab, its final URL and title, and your open tabs.",
            &["browser", "web", "open", "url", "page", "visit", "tab"],
        )
    }

    async fn run(&self, ctx: CallContext, args: NavigateArgs) -> Result<Value> {
        let url = checked_url(&args.url)?;
        if args.new_tab && args.tab.is_some() {
            return Err(Error::invalid("give `new_tab` or `tab`, not both").with_field("tab"));
        }
        let browsers = self.0.browsers()?;
        precheck(browsers, &url).await?;
        let mut session = session(&self.0, &ctx).await?;
        match args.tab {
            Some(tab) => session.select(tab)?,
            None if args.new_tab || session.pages.active.is_none() => {
                session.open_tab().await?;
            }
            None => {}
        }
        let timeout = browsers.navigation_timeout();
        let nonce = session.nonce();
        let page = session.active()?.page.clone();
        let started = Instant::now();
        let mut navigated = Duration::ZERO;
        let loaded = tokio::time::timeout(timeout, async {
            page.goto(url.as_str()).await.map_err(|e| navigation_error(&session, &url, e))?;
            navigated = started.elapsed();
            pages::wait_loaded(&page, &nonce, timeout.saturating_sub(started.elapsed())).await
        })
        .await;
        // Where a slow navigation spent its time: Chromium's load, or the state check after it.
        tracing::debug!(
            navigate_ms = navigated.as_secs_f64() * 1e3,
            loaded_ms = started.elapsed().as_secs_f64() * 1e3,
            "browser_navigate"
        );
        let state = match loaded {
            Ok(Ok(state)) => state,
            Ok(Err(e)) if e.kind != ErrorKind::Timeout => {
                if let Ok(state) = pages::state(&page, &nonce).await {
                    remember(&mut session, &state)?;
                }
                return Err(e);
            }
            _ => return Err(stopped_loading(&mut session, &page, &url, timeout).await),
        };
        let tab = remember(&mut session, &state)?;
        refused(&state)?;
        Ok(answer(&session, json!({ "tab": tab, "url": state.url, "title": state.title, "tabs": session.tab_list() })))
    }
}

/// The URL a navigation may open: http or https only.
fn checked_url(text: &str) -> Result<reqwest::Url> {
    let url = reqwest::Url::parse(text.trim())
        .map_err(|e| Error::invalid(format!("`{text}` is not a URL: {e}")).with_field("url"))?;
    match url.scheme() {
        "http" | "https" => Ok(url),
        "file" => Err(Error::forbidden(
            "`file:` URLs are refused: the browser reads the web, not this machine's files (serve them on a host [browser] allowed_hosts lists)",
        )
        .with_field("url")),
        other => Err(Error::invalid(format!("`{other}:` URLs cannot be opened: give an http or https URL")).with_field("url")),
    }
}

/// The guard's answer for the first URL before any tab is touched, so a refused address costs
/// no tab and gets the guard's own words. The proxy checks it again, with every redirect and
/// every request the page makes.
async fn precheck(browsers: &Browsers, url: &reqwest::Url) -> Result<()> {
    browsers.proxy_rules().check_url(url).await
}

/// A failed `Page.navigate` (`net::ERR_…`) as the refusal it was, when the proxy refused it.
fn navigation_error(session: &Session, url: &reqwest::Url, e: chromiumoxide::error::CdpError) -> Error {
    let error = cdp_error(e);
    let refused = crate::net::guard::host_and_port(url)
        .ok()
        .and_then(|(host, port)| session.refusal_for(&host.to_string(), port));
    match refused {
        Some(e) if e.kind == ErrorKind::Forbidden => {
            Error::forbidden(format!("the browser may not load this page: {}", e.message))
        }
        Some(e) => Error::new(e.kind, format!("{url} could not be loaded: {}", e.message)),
        None => Error::failed(format!(
            "{url} could not be loaded ({}); a redirect to an address [browser] allowed_hosts does not open fails this way too",
            error.message
        )),
    }
}

/// Stops a load that ran out of time and says so; the tab keeps what arrived.
async fn stopped_loading(
    session: &mut Session,
    page: &chromiumoxide::Page,
    url: &reqwest::Url,
    timeout: Duration,
) -> Error {
    let _ = page.execute(StopLoadingParams::default()).await;
    if let Ok(state) = pages::state(page, &session.nonce()).await {
        let _ = remember(session, &state);
    }
    Error::timeout(format!(
        "{url} did not finish loading within {} s ([browser] navigation_timeout_secs); the tab keeps what arrived (browser_read_page reads it)",
        timeout.as_secs()
    ))
}

// ---------------------------------------------------------------------------------------------

pub(super) struct Back(Uses);

impl Tool for Back {
    type Args = NoArgs;

    fn def(&self) -> ToolDef {
        def(
            "browser_back",
            "Go one step back in the active tab's history and wait for the page.",
            &["browser", "back", "history", "previous"],
        )
    }

    async fn run(&self, ctx: CallContext, _: NoArgs) -> Result<Value> {
        let mut session = session(&self.0, &ctx).await?;
        let timeout = session.browsers.navigation_timeout();
        let nonce = session.nonce();
        let tab = session.active()?;
        let (id, page) = (tab.id, tab.page.clone());
        let history = page.execute(GetNavigationHistoryParams::default()).await.map_err(cdp_error)?.result;
        let index = usize::try_from(history.current_index).unwrap_or(0);
        let Some(previous) = index.checked_sub(1).and_then(|i| history.entries.get(i)) else {
            return Err(Error::not_found(format!("tab {id} has no earlier page to go back to")));
        };
        let target = previous.url.clone();
        page.execute(NavigateToHistoryEntryParams::new(previous.id)).await.map_err(cdp_error)?;
        let deadline = Instant::now() + timeout;
        let state = loop {
            match pages::state(&page, &nonce).await {
                Ok(state) if state.ready == "complete" && state.url == target => break state,
                _ if Instant::now() >= deadline => {
                    let url = reqwest::Url::parse(&target).map_err(|_| Error::timeout("going back timed out"))?;
                    return Err(stopped_loading(&mut session, &page, &url, timeout).await);
                }
                _ => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        };
        remember(&mut session, &state)?;
        refused(&state)?;
        Ok(answer(&session, json!({ "tab": id, "url": state.url, "title": state.title })))
    }
}

// ---------------------------------------------------------------------------------------------

pub(super) struct Click(Uses);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct SelectorArgs {
    /// A CSS selector (`#submit`, `form button`), or `text=…` for the visible element with that
    /// text (`text=Sign in`).
    selector: String,
}

impl Tool for Click {
    type Args = SelectorArgs;

    fn def(&self) -> ToolDef {
        def(
            "browser_click",
            "Click the element a CSS selector or `text=…` selector names in the active tab; waits for a page it opens to load.",
            &["browser", "click", "press", "button", "link"],
        )
    }

    async fn run(&self, ctx: CallContext, args: SelectorArgs) -> Result<Value> {
        let mut session = session(&self.0, &ctx).await?;
        let timeout = session.browsers.navigation_timeout();
        let nonce = session.nonce();
        let page = session.active()?.page.clone();
        let element = pages::mark(&page, &args.selector).await?;
        pages::marked(&page).await?.click().await.map_err(cdp_error)?;
        // A click that starts a navigation shows it a moment later.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let state = pages::wait_loaded(&page, &nonce, timeout).await?;
        pages::unmark(&page).await;
        let tab = remember(&mut session, &state)?;
        refused(&state)?;
        Ok(answer(&session, json!({ "tab": tab, "clicked": element, "url": state.url, "title": state.title })))
    }
}

// ---------------------------------------------------------------------------------------------

pub(super) struct Type(Uses);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct TypeArgs {
    /// A CSS selector, or `text=…`, of the field to type into.
    selector: String,
    /// What to type, key by key (at most 10,000 characters).
    text: String,
    /// Empty the field first.
    #[serde(default)]
    clear: bool,
    /// Press Enter after the text.
    #[serde(default)]
    submit: bool,
}

const CLEAR_MARKED: &str = r#"(() => { const el = document.querySelector('[data-kennel-target]');
  if (el && 'value' in el) { el.value = ''; el.dispatchEvent(new Event('input', { bubbles: true })); }
  else if (el && el.isContentEditable) el.textContent = ''; return null; })()"#;

const VALUE_OF_MARKED: &str = r#"(() => { const el = document.querySelector('[data-kennel-target]');
  if (!el || el.type === 'password') return null; return 'value' in el ? String(el.value) : el.textContent; })()"#;

/// Types `text` key by key: printable ASCII as key presses (keydown, keypress, keyup, as a
/// person's keyboard sends them), a line break as Enter, anything else (accents, CJK, emoji),
/// which a US layout has no key for, as inserted text.
async fn type_text(page: &chromiumoxide::Page, element: &chromiumoxide::Element, text: &str) -> Result<()> {
    for ch in text.chars() {
        match ch {
            ' '..='~' => {
                element.type_str(ch.to_string()).await.map_err(cdp_error)?;
            }
            '\n' => {
                element.press_key("Enter").await.map_err(cdp_error)?;
            }
            other => {
                let insert = chromiumoxide::cdp::browser_protocol::input::InsertTextParams::new(other.to_string());
                page.execute(insert).await.map_err(cdp_error)?;
            }
        }
    }
    Ok(())
}

impl Tool for Type {
    type Args = TypeArgs;

    fn def(&self) -> ToolDef {
        def(
            "browser_type",
            "Focus a field in the active tab and type text into it key by key, then give the page's input handlers a moment.",
            &["browser", "type", "fill", "input", "form", "keyboard", "enter"],
        )
    }

    async fn run(&self, ctx: CallContext, args: TypeArgs) -> Result<Value> {
        if args.text.chars().count() > MAX_TYPED_CHARS {
            return Err(
                Error::invalid(format!("`text` may be at most {MAX_TYPED_CHARS} characters")).with_field("text")
            );
        }
        let mut session = session(&self.0, &ctx).await?;
        let nonce = session.nonce();
        let tab = session.active()?;
        let (id, page) = (tab.id, tab.page.clone());
        let field = pages::mark(&page, &args.selector).await?;
        let element = pages::marked(&page).await?;
        element.focus().await.map_err(cdp_error)?;
        if args.clear {
            pages::evaluate(&page, CLEAR_MARKED.into()).await?;
        }
        type_text(&page, &element, &args.text).await?;
        if args.submit {
            element.press_key("Enter").await.map_err(cdp_error)?;
        }
        tokio::time::sleep(TYPE_SETTLE).await;
        // Enter may have submitted a form and left the page.
        let value = pages::evaluate(&page, VALUE_OF_MARKED.into()).await.unwrap_or(Value::Null);
        if args.submit {
            let state = pages::wait_loaded(&page, &nonce, session.browsers.navigation_timeout()).await?;
            remember(&mut session, &state)?;
        }
        pages::unmark(&page).await;
        Ok(answer(
            &session,
            json!({ "tab": id, "field": field, "typed_chars": args.text.chars().count(), "value": value, "submitted": args.submit }),
        ))
    }
}

// ---------------------------------------------------------------------------------------------

pub(super) struct Scroll(Uses);

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(super) enum Direction {
    Up,
    Down,
    Top,
    Bottom,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ScrollArgs {
    /// `up` or `down` by `amount`, or to the `top` or `bottom`. Give this or `selector`.
    direction: Option<Direction>,
    /// Pixels for `up`/`down` (default 640, most of the viewport).
    amount: Option<u32>,
    /// Scroll this element (CSS or `text=…`) into the middle of the view instead.
    selector: Option<String>,
}

impl Tool for Scroll {
    type Args = ScrollArgs;

    fn def(&self) -> ToolDef {
        def(
            "browser_scroll",
            "Scroll the active tab up or down (by pixels), to the top or bottom, or to an element; returns the scroll position.",
            &["browser", "scroll", "down", "up", "page"],
        )
    }

    async fn run(&self, ctx: CallContext, args: ScrollArgs) -> Result<Value> {
        let call = match (&args.direction, &args.selector) {
            (Some(_), Some(_)) | (None, None) => {
                return Err(Error::invalid("give `direction` or `selector` (one of them)").with_field("direction"));
            }
            (Some(d), None) => {
                let step = i64::from(args.amount.unwrap_or(SCROLL_STEP as u32));
                match d {
                    Direction::Up => vec![json!(-step), Value::Null],
                    Direction::Down => vec![json!(step), Value::Null],
                    Direction::Top => vec![Value::Null, json!(true)],
                    Direction::Bottom => vec![Value::Null, json!(false)],
                }
            }
            (None, Some(_)) => vec![Value::Null, Value::Null],
        };
        let mut session = session(&self.0, &ctx).await?;
        let tab = session.active()?;
        let (id, page) = (tab.id, tab.page.clone());
        if let Some(selector) = &args.selector {
            pages::mark(&page, selector).await?;
        }
        let position = pages::call(&page, scripts::SCROLL, &call).await?;
        pages::unmark(&page).await;
        Ok(answer(&session, json!({ "tab": id, "position": position })))
    }
}

// ---------------------------------------------------------------------------------------------

pub(super) struct Wait(Uses);

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(super) enum Condition {
    /// An element matching `selector` is on the page.
    Selector,
    /// No request in flight for half a second.
    NetworkIdle,
    /// Just `timeout_ms` passing.
    Time,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct WaitArgs {
    condition: Condition,
    /// The CSS selector `selector` waits for.
    selector: Option<String>,
    /// The longest wait (default 10,000 ms, at most 120,000); for `time`, the wait itself.
    timeout_ms: Option<u64>,
}

impl Tool for Wait {
    type Args = WaitArgs;

    fn def(&self) -> ToolDef {
        def(
            "browser_wait",
            "Wait in the active tab until an element appears (`selector`), the network is idle (`network_idle`), or some time passes (`time`).",
            &["browser", "wait", "load", "idle", "appear", "delay"],
        )
        .read_only()
    }

    async fn run(&self, ctx: CallContext, args: WaitArgs) -> Result<Value> {
        let ms = args.timeout_ms.unwrap_or(DEFAULT_WAIT_MS);
        if !(1..=MAX_WAIT_MS).contains(&ms) {
            return Err(
                Error::invalid(format!("`timeout_ms` must be from 1 to {MAX_WAIT_MS}")).with_field("timeout_ms")
            );
        }
        let timeout = Duration::from_millis(ms);
        let selector = match (args.condition, args.selector) {
            (Condition::Selector, None) => {
                return Err(Error::invalid("`selector` waits need a `selector`").with_field("selector"));
            }
            (Condition::Selector, Some(s)) => Some(s),
            (_, Some(_)) => {
                return Err(Error::invalid("`selector` is only for the `selector` condition").with_field("selector"));
            }
            (_, None) => None,
        };
        let mut session = session(&self.0, &ctx).await?;
        let tab = session.active()?;
        let (id, page, network) = (tab.id, tab.page.clone(), tab.network.clone());
        let started = Instant::now();
        match args.condition {
            Condition::Time => tokio::time::sleep(timeout).await,
            Condition::NetworkIdle => network.wait_idle(NETWORK_QUIET, timeout).await?,
            Condition::Selector => {
                let selector = selector.unwrap_or_default();
                loop {
                    let found =
                        pages::call(&page, scripts::EXISTS, &[Value::from(selector.as_str())]).await.map_err(|e| {
                            match e.kind {
                                ErrorKind::Failed => {
                                    Error::invalid(format!("`{selector}` is not a CSS selector ({})", e.message))
                                        .with_field("selector")
                                }
                                _ => e,
                            }
                        })?;
                    if found == Value::Bool(true) {
                        break;
                    }
                    if started.elapsed() >= timeout {
                        return Err(Error::timeout(format!("no element matched `{selector}` within {ms} ms")));
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
        Ok(answer(&session, json!({ "tab": id, "waited_ms": started.elapsed().as_millis() as u64 })))
    }
}

// ---------------------------------------------------------------------------------------------

pub(super) struct Screenshot(Uses);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ScreenshotArgs {
    /// The whole page instead of the 1280×800 viewport.
    #[serde(default)]
    full_page: bool,
}

impl Tool for Screenshot {
    type Args = ScreenshotArgs;

    fn def(&self) -> ToolDef {
        def(
            "browser_screenshot",
            "Take a PNG screenshot of the active tab (the viewport, or the full page), saved in your workspace under screenshots/; \
             you are shown the image where your model accepts images, else its path.",
            &["browser", "screenshot", "image", "capture", "picture", "see"],
        )
        .returns_image()
    }

    async fn run(&self, ctx: CallContext, args: ScreenshotArgs) -> Result<Value> {
        let mut session = session(&self.0, &ctx).await?;
        let nonce = session.nonce();
        let tab = session.active()?;
        let (id, page) = (tab.id, tab.page.clone());
        if args.full_page {
            let height =
                pages::evaluate(&page, "document.documentElement.scrollHeight".into()).await?.as_u64().unwrap_or(0);
            if height > MAX_FULL_PAGE_PX {
                return Err(Error::invalid(format!(
                    "the page is {height} px tall; a full-page screenshot takes at most {MAX_FULL_PAGE_PX} px: scroll and take viewport screenshots"
                ))
                .with_field("full_page"));
            }
        }
        let params = ScreenshotParams::builder().format(CaptureScreenshotFormat::Png).full_page(args.full_page).build();
        let png = page.screenshot(params).await.map_err(cdp_error)?;
        let (width, height) = crate::turn::png_size(&png).unwrap_or_default();
        let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ");
        let entry = self.0.workspaces.write(ctx.agent.id, &format!("screenshots/tab{id}-{stamp}.png"), png).await?;
        let state = pages::state(&page, &nonce).await?;
        let tab = session.active()?;
        tab.last_screenshot = Some(entry.path.clone());
        remember(&mut session, &state)?;
        Ok(answer(
            &session,
            json!({
                "tab": id, "path": entry.path, "media_type": "image/png", "bytes": entry.bytes,
                "width": width, "height": height, "full_page": args.full_page, "url": state.url, "title": state.title,
            }),
        ))
    }
}

// ---------------------------------------------------------------------------------------------

pub(super) struct ReadPage(Uses);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ReadPageArgs {
    /// The most page text returned (default 50,000 characters, at most 1,000,000).
    max_chars: Option<u32>,
}

impl Tool for ReadPage {
    type Args = ReadPageArgs;

    fn def(&self) -> ToolDef {
        def(
            "browser_read_page",
            "Read the active tab: its text, plus an outline of headings, links (with URLs) and forms with their fields. \
             Cheaper than a screenshot when text is enough.",
            &["browser", "read", "text", "page", "content", "links", "forms", "outline", "scrape"],
        )
        .read_only()
    }

    async fn run(&self, ctx: CallContext, args: ReadPageArgs) -> Result<Value> {
        let max = args.max_chars.unwrap_or(50_000);
        if !(1..=1_000_000).contains(&max) {
            return Err(Error::invalid("`max_chars` must be from 1 to 1,000,000").with_field("max_chars"));
        }
        let mut session = session(&self.0, &ctx).await?;
        let tab = session.active()?;
        let (id, page) = (tab.id, tab.page.clone());
        let mut read = pages::call(&page, scripts::READ_PAGE, &[Value::from(max)]).await?;
        let tab = session.active()?;
        tab.url = read["url"].as_str().unwrap_or_default().to_string();
        tab.title = read["title"].as_str().unwrap_or_default().to_string();
        if let Some(map) = read.as_object_mut() {
            map.insert("tab".into(), Value::from(id));
        }
        Ok(answer(&session, read))
    }
}

// ---------------------------------------------------------------------------------------------

pub(super) struct RunJs(Uses);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RunJsArgs {
    /// JavaScript run in the page: an expression or statements; the last value is returned
    /// (promises awaited, `await` allowed).
    script: String,
}

impl Tool for RunJs {
    type Args = RunJsArgs;

    fn def(&self) -> ToolDef {
        def(
            "browser_run_js",
            "Run JavaScript in the active tab and return its value as JSON; a thrown error comes back as the error.",
            &["browser", "javascript", "js", "script", "evaluate", "dom"],
        )
    }

    async fn run(&self, ctx: CallContext, args: RunJsArgs) -> Result<Value> {
        if args.script.trim().is_empty() {
            return Err(Error::invalid("`script` is empty").with_field("script"));
        }
        if args.script.len() > MAX_SCRIPT_BYTES {
            return Err(
                Error::invalid(format!("`script` may be at most {MAX_SCRIPT_BYTES} bytes")).with_field("script")
            );
        }
        let mut session = session(&self.0, &ctx).await?;
        let timeout = session.browsers.navigation_timeout();
        let tab = session.active()?;
        let (id, page) = (tab.id, tab.page.clone());
        let mut params = pages::params(args.script);
        // Lets `let` be declared again in a later call, and `await` at the top level.
        params.repl_mode = Some(true);
        params.user_gesture = Some(true);
        let Ok(result) = tokio::time::timeout(timeout, pages::run(&page, params)).await else {
            // A script still running (`while (true) {}`) would hold the tab for every later call.
            let _ = page.execute(chromiumoxide::cdp::js_protocol::runtime::TerminateExecutionParams::default()).await;
            return Err(Error::timeout(format!(
                "the script did not finish within {} s and was stopped",
                timeout.as_secs()
            )));
        };
        let result = result?;
        Ok(answer(&session, json!({ "tab": id, "result": result })))
    }
}

// ---------------------------------------------------------------------------------------------

pub(super) struct Close(Uses);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct CloseArgs {
    /// The tab to close; default the active one.
    tab: Option<u32>,
}

impl Tool for Close {
    type Args = CloseArgs;

    fn def(&self) -> ToolDef {
        def(
            "browser_close",
            "Close the active browser tab (or a given one) and free its place in your pool.",
            &["browser", "close", "tab"],
        )
    }

    async fn run(&self, ctx: CallContext, args: CloseArgs) -> Result<Value> {
        let mut session = session(&self.0, &ctx).await?;
        let id = match args.tab {
            Some(tab) => {
                session.select(tab)?;
                tab
            }
            None => session.active()?.id,
        };
        session.close_tab(id).await;
        Ok(answer(&session, json!({ "closed": id, "tabs": session.tab_list() })))
    }
}
