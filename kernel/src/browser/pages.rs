//! What the tools do in one tab: run a script, find an element, follow the page's network
//! activity (for "network idle"), wait for loads.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::network::{EventLoadingFailed, EventLoadingFinished, EventRequestWillBeSent};
use chromiumoxide::cdp::js_protocol::runtime::{EvaluateParams, ExceptionDetails};
use futures_util::StreamExt;
use serde_json::Value;

use super::{cdp_error, scripts};
use crate::error::{Error, ErrorKind, Result};

/// How often a wait looks again.
const POLL: Duration = Duration::from_millis(50);

/// The requests one tab has in flight, from the DevTools network events.
#[derive(Debug)]
pub(crate) struct NetworkActivity {
    state: Mutex<(HashSet<String>, Instant)>,
}

impl NetworkActivity {
    /// Follows `page`'s requests until the page closes.
    pub(super) async fn follow(page: &Page) -> Result<Arc<NetworkActivity>> {
        let activity = Arc::new(NetworkActivity { state: Mutex::new((HashSet::new(), Instant::now())) });
        let mut sent = page.event_listener::<EventRequestWillBeSent>().await.map_err(cdp_error)?;
        let mut finished = page.event_listener::<EventLoadingFinished>().await.map_err(cdp_error)?;
        let mut failed = page.event_listener::<EventLoadingFailed>().await.map_err(cdp_error)?;
        let weak = Arc::downgrade(&activity);
        tokio::spawn(async move {
            loop {
                // Starts first: each event reaches its own stream in the order Chromium sent
                // it, so a request's start is in `sent` before its end is in `finished`; an
                // unbiased pick of two ready streams could take the end first and leave the
                // request in flight for ever.
                let (id, started) = tokio::select! {
                    biased;
                    Some(e) = sent.next() => (e.request_id.inner().clone(), true),
                    Some(e) = finished.next() => (e.request_id.inner().clone(), false),
                    Some(e) = failed.next() => (e.request_id.inner().clone(), false),
                    else => return,
                };
                let Some(activity) = weak.upgrade() else { return };
                let mut state = activity.state.lock().unwrap_or_else(|e| e.into_inner());
                if started {
                    state.0.insert(id);
                } else {
                    state.0.remove(&id);
                }
                state.1 = Instant::now();
            }
        });
        Ok(activity)
    }

    /// Requests in flight, and how long since one started or ended.
    fn now(&self) -> (usize, Duration) {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        (state.0.len(), state.1.elapsed())
    }

    /// Waits until no request has been in flight for `quiet`.
    pub(super) async fn wait_idle(&self, quiet: Duration, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            let (in_flight, since) = self.now();
            if in_flight == 0 && since >= quiet {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(Error::timeout(format!(
                    "the network was not idle within {} ms: {in_flight} request(s) still in flight",
                    timeout.as_millis()
                )));
            }
            tokio::time::sleep(POLL).await;
        }
    }
}

/// Runs `expression` in the page (promises awaited) and returns its value as JSON (`null` for
/// `undefined` and for what JSON cannot hold). A thrown error is `Failed` with its text.
pub(super) async fn evaluate(page: &Page, expression: String) -> Result<Value> {
    run(page, params(expression)).await
}

/// `Runtime.evaluate` of `expression` with promises awaited and the value returned as JSON.
pub(super) fn params(expression: String) -> EvaluateParams {
    let mut params = EvaluateParams::new(expression);
    params.await_promise = Some(true);
    params.return_by_value = Some(true);
    params
}

/// Sends `params` as a plain DevTools command, in the main frame's current context.
/// (chromiumoxide's `evaluate_expression` first waits for the frame's execution context, and
/// that wait has no end while a page is still loading.)
pub(super) async fn run(page: &Page, params: EvaluateParams) -> Result<Value> {
    let reply = page.execute(params).await.map_err(cdp_error)?.result;
    if let Some(exception) = reply.exception_details {
        return Err(Error::failed(exception_text(&exception)));
    }
    Ok(reply.result.value.unwrap_or(Value::Null))
}

/// One of [`scripts`]' functions called with `args`.
pub(super) async fn call(page: &Page, function: &str, args: &[Value]) -> Result<Value> {
    evaluate(page, scripts::call(function, args)).await
}

/// What a thrown error says: its message and stack as the page printed them.
pub(super) fn exception_text(details: &ExceptionDetails) -> String {
    let text = details.exception.as_ref().and_then(|e| e.description.clone()).unwrap_or_else(|| details.text.clone());
    format!("the script threw: {text}")
}

/// The element `selector` names, marked for DevTools (see [`scripts::MARK_ELEMENT`]), with its
/// tag and text. A selector that does not parse is the caller's mistake, not the page's.
pub(super) async fn mark(page: &Page, selector: &str) -> Result<Value> {
    let marker = format!("{:x}", rand::random::<u64>());
    let found = call(page, scripts::MARK_ELEMENT, &[Value::from(selector), Value::from(marker.clone())])
        .await
        .map_err(|e| match e.kind {
            ErrorKind::Failed if e.message.contains("SyntaxError") => {
                Error::invalid(format!("`{selector}` is not a CSS selector or `text=…` selector ({})", e.message))
                    .with_field("selector")
            }
            _ => e,
        })?;
    if found.is_null() {
        return Err(Error::not_found(format!("no element on the page matches `{selector}`")).with_field("selector"));
    }
    Ok(found)
}

/// The marked element, as chromiumoxide's handle.
pub(super) async fn marked(page: &Page) -> Result<chromiumoxide::Element> {
    page.find_element("[data-kennel-target]").await.map_err(cdp_error)
}

pub(super) async fn unmark(page: &Page) {
    let _ = call(page, scripts::UNMARK, &[]).await;
}

/// The page's load state, address, title, and the guard's refusal when the proxy answered
/// instead of the site.
pub(super) struct PageState {
    pub ready: String,
    pub url: String,
    pub title: String,
    pub refused: Option<String>,
}

pub(super) async fn state(page: &Page, nonce: &str) -> Result<PageState> {
    let v = call(page, scripts::STATE, &[Value::from(nonce)]).await?;
    let text = |key: &str| v[key].as_str().unwrap_or_default().to_string();
    Ok(PageState {
        ready: text("ready"),
        url: text("url"),
        title: text("title"),
        refused: v["refused"].as_str().map(String::from),
    })
}

/// Waits until the document has loaded (`readyState` complete), up to `timeout`.
pub(super) async fn wait_loaded(page: &Page, nonce: &str, timeout: Duration) -> Result<PageState> {
    let deadline = Instant::now() + timeout;
    loop {
        // A page between documents has no context to run in: look again.
        if let Ok(s) = state(page, nonce).await
            && s.ready == "complete"
        {
            return Ok(s);
        }
        if Instant::now() >= deadline {
            return Err(Error::timeout(format!("the page did not finish loading within {} s", timeout.as_secs())));
        }
        tokio::time::sleep(POLL).await;
    }
}
