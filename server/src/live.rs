//! The live stream of an agent's turn events as server-sent events: the REST API serves it
//! at `GET /api/agents/{id}/events`, the dashboard's chat at `/agents/{id}/live`.

use std::convert::Infallible;

use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use kennel_kernel::Kernel;
use tokio::sync::broadcast::error::RecvError;

/// The SSE stream of one agent's turn events.
pub fn event_stream(
    kernel: &Kernel,
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
    Sse::new(events).keep_alive(KeepAlive::default())
}
