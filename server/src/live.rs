//! Live streams as server-sent events: an agent's turn events (the REST API serves them at
//! `GET /api/agents/{id}/events`, the dashboard's chat at `/agents/{id}/live`) and its new
//! canvas versions (the agent page, at `/agents/{id}/canvas/live`), and the dashboard's live
//! pages' "read yourself again" signals (`/live/changes?topics=tasks,schedules`).
//!
//! # Design notes
//!
//! Every stream is ended by `stop_streams` at shutdown (the server's graceful shutdown waits
//! for every open response, so one open chat used to keep the daemon from stopping), and each
//! by its credential: a `Holder` — the API token the request presented (by its hash, so a
//! token made again under a revoked one's name does not keep the old streams), the dashboard
//! session, this run's CLI token, or none for an anonymous A2A caller — put beside `Bearer` by
//! the token check and checked again at every `Auth::revisions` change (a revocation, a
//! sign-out, another daemon's reload) and every 30 s. Any but the CLI's ends after `[server]
//! stream_max_secs`. `stream_ends` also ends A2A's `SendStreamingMessage`/`SubscribeToTask`
//! streams and the MCP server's event streams.

use std::convert::Infallible;
use std::sync::LazyLock;
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::{FutureExt, Stream, StreamExt};
use kennel_kernel::Kernel;
use kennel_kernel::canvas::Canvases;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

/// Cancelled when the daemon begins to shut down: every live stream ends then. They never end
/// on their own, and the server's graceful shutdown waits for every open response, so one
/// open chat (a browser tab, `kennel chat`) would otherwise keep the daemon from stopping.
/// One per process, as the server is.
static STOPPING: LazyLock<CancellationToken> = LazyLock::new(CancellationToken::new);

/// Ends every live stream (the server calls it on SIGINT/SIGTERM).
pub fn stop_streams() {
    STOPPING.cancel();
}

/// The credential a live stream was opened with: it streams only while that stays live. An
/// API request's is put beside its `Bearer` by the token check.
#[derive(Debug, Clone)]
pub enum Holder {
    /// An API token: revoking it ends its streams (a token made again under its name is
    /// another token).
    Token(kennel_kernel::auth::VerifiedToken),
    /// A dashboard session, by its cookie value: signing out (or its expiry) ends its streams.
    Session(String),
    /// This run's CLI token: it lives as long as the daemon run, in memory only.
    Cli,
    /// No credential (an anonymous A2A caller of a public agent): only the lifetime cap.
    Anonymous,
}

impl Holder {
    fn is_live(&self, kernel: &Kernel) -> bool {
        match self {
            Holder::Token(token) => kernel.auth().token_is_live(token),
            Holder::Session(cookie) => kernel.auth().session(cookie).is_some(),
            Holder::Cli | Holder::Anonymous => true,
        }
    }
}

/// How often a stream's credential is checked besides at every revocation or sign-out (a
/// session's expiry, a revocation another daemon made).
const RECHECK: Duration = Duration::from_secs(30);

/// Resolves when `holder`'s stream must end: its credential is gone, or (for a token or a
/// session) it has streamed `[server] stream_max_secs`, after which a client opens a new one
/// and is checked again.
async fn credential_lost(kernel: Kernel, holder: Holder) {
    let mut revisions = kernel.auth().revisions();
    let lifetime = Duration::from_secs(kernel.config().server.stream_max_secs);
    let ends = async {
        match holder {
            Holder::Cli => std::future::pending().await,
            _ => tokio::time::sleep(lifetime).await,
        }
    };
    tokio::pin!(ends);
    while holder.is_live(&kernel) {
        tokio::select! {
            () = &mut ends => return,
            changed = revisions.changed() => if changed.is_err() { return },
            () = tokio::time::sleep(RECHECK) => {}
        }
    }
}

/// Resolves when a stream `holder` opened must end: the daemon stops, or the credential is
/// gone or has streamed its lifetime. Every long-lived response ends on it: these live
/// streams, A2A's `message/stream`, the MCP server's event stream.
pub fn stream_ends(kernel: &Kernel, holder: Holder) -> impl Future<Output = ()> + Send + 'static + use<> {
    futures_util::future::select(
        Box::pin(STOPPING.clone().cancelled_owned()),
        Box::pin(credential_lost(kernel.clone(), holder)),
    )
    .map(drop)
}

/// `events` as a response that ends when the daemon stops or `holder`'s credential does.
fn live<S>(kernel: &Kernel, holder: Holder, events: S) -> Sse<impl Stream<Item = Result<Event, Infallible>> + use<S>>
where
    S: Stream<Item = Result<Event, Infallible>> + Send + 'static,
{
    let open = kennel_kernel::metrics::metrics().live_stream();
    let events = events.take_until(stream_ends(kernel, holder)).map(move |event| {
        let _counted = &open;
        event
    });
    Sse::new(events).keep_alive(KeepAlive::default())
}

/// The SSE stream of one agent's turn events.
pub fn event_stream(
    kernel: &Kernel,
    holder: Holder,
    agent_id: uuid::Uuid,
) -> Sse<impl Stream<Item = Result<Event, Infallible>> + use<>> {
    let events = futures_util::stream::unfold(kernel.turns().subscribe(), move |mut rx| async move {
        loop {
            match rx.recv().await {
                Ok(event) if event.agent_id == agent_id => {
                    let sse = Event::default().event(event.kind.name()).json_data(&event).unwrap_or_default();
                    return Some((Ok(sse), rx));
                }
                Ok(_) => continue,
                Err(RecvError::Lagged(missed)) => {
                    return Some((Ok(Event::default().event("lagged").data(missed.to_string())), rx));
                }
                Err(RecvError::Closed) => return None,
            }
        }
    });
    live(kernel, holder, events)
}

/// The SSE stream of one agent's new canvas versions (`event: canvas`), for its page.
pub fn canvas_stream(
    kernel: &Kernel,
    holder: Holder,
    agent_id: uuid::Uuid,
) -> Sse<impl Stream<Item = Result<Event, Infallible>> + use<>> {
    let events = futures_util::stream::unfold(kernel.service::<Canvases>().subscribe(), move |mut rx| async move {
        loop {
            match rx.recv().await {
                Ok(canvas) if canvas.agent_id == agent_id => {
                    let data = serde_json::json!({
                        "version": canvas.version,
                        "title": canvas.title,
                        "created_at": canvas.created_at,
                        "page": canvas.page_path(),
                        "frame": canvas.frame_path(),
                    });
                    return Some((Ok(Event::default().event("canvas").data(data.to_string())), rx));
                }
                Ok(_) => continue,
                // Missed versions: the next one brings the page up to date all the same.
                Err(RecvError::Lagged(_)) => continue,
                Err(RecvError::Closed) => return None,
            }
        }
    });
    live(kernel, holder, events)
}

/// How long a page's signal waits after a change: changes that come together (a task and
/// its history row, a burst of claims) become one signal, one page read.
const SETTLE: std::time::Duration = std::time::Duration::from_millis(250);

/// The SSE stream of committed changes to `topics` (`event: change`, the topics that changed
/// as data: `["tasks","schedules"]`), each burst settled into one event.
pub fn changes_stream(
    kernel: &Kernel,
    holder: Holder,
    topics: Vec<kennel_kernel::changes::Topic>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>> + use<>> {
    let events = futures_util::stream::unfold(kernel.changes().subscribe(), move |mut rx| {
        let topics = topics.clone();
        async move {
            let mut changed = Vec::new();
            while changed.is_empty() {
                match rx.recv().await {
                    Ok(topic) if topics.contains(&topic) => changed.push(topic),
                    Ok(_) => {}
                    // Missed some: every topic may have changed.
                    Err(RecvError::Lagged(_)) => changed.clone_from(&topics),
                    Err(RecvError::Closed) => return None,
                }
            }
            tokio::time::sleep(SETTLE).await;
            loop {
                match rx.try_recv() {
                    Ok(topic) if topics.contains(&topic) && !changed.contains(&topic) => changed.push(topic),
                    Ok(_) => {}
                    Err(tokio::sync::broadcast::error::TryRecvError::Lagged(_)) => changed.clone_from(&topics),
                    Err(_) => break,
                }
            }
            Some((Ok(Event::default().event("change").json_data(&changed).unwrap_or_default()), rx))
        }
    });
    live(kernel, holder, events)
}
