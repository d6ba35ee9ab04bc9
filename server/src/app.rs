//! The whole application: the machine side (`http`: REST, A2A, health) and the dashboard on
//! one router, and the server loop. The two fronts share the status table (`status`) and the
//! live event stream (`live`). The dashboard knows one thing of the machine side: the
//! router's fallback (`dashboard::not_found`) hands unknown `/api/…`, `/a2a…` and
//! `/.well-known/…` paths to `http::not_found`, so they answer JSON; every other unknown path
//! gets the dashboard's HTML 404.

use std::net::SocketAddr;

use axum::Router;
use kennel_kernel::Kernel;
use tower_http::trace::{DefaultMakeSpan, DefaultOnResponse, TraceLayer};
use tracing::Level;

/// Every route of the daemon.
pub fn router(kernel: Kernel) -> Router {
    let (machine, document) = crate::http::router(kernel.clone());
    Router::new()
        .merge(machine)
        .merge(crate::dashboard::router(kernel.clone()).layer(axum::Extension(document)))
        .fallback(crate::dashboard::not_found)
        .layer(axum::middleware::from_fn(crate::http::metrics::count_request))
        // A line per request at DEBUG (`RUST_LOG=tower_http=debug`), not at the default INFO:
        // formatting and writing it was a fifth of `GET /api/templates`'s time. Server errors
        // are still logged (at ERROR), and every change is in the operator-action log.
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(DefaultMakeSpan::new().level(Level::DEBUG))
                .on_request(())
                .on_response(DefaultOnResponse::new().level(Level::DEBUG)),
        )
        .with_state(kernel)
}

/// How long requests in flight may go on after SIGINT/SIGTERM.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(10);

/// Serves until SIGINT or SIGTERM, lets in-flight requests finish, then closes the kernel.
/// `metrics_listener` (`[metrics] listen`) serves `GET /metrics` alone, without a token, with
/// the same connection limits, until then.
///
/// `GET /healthz` answers as soon as the socket is served; the background work (the cluster's
/// row, sweepers, runners) then starts and the router is built, a few milliseconds during
/// which every other request waits. A supervisor or script waiting for the daemon learns it
/// is up at once, and no request is refused for coming early. `ready` runs once everything is
/// served (`kennel start` prints its line there). `phases` is how long starting took so far;
/// the rest is added and the whole is logged then.
pub async fn serve(
    kernel: Kernel,
    listener: tokio::net::TcpListener,
    metrics_listener: Option<tokio::net::TcpListener>,
    mut phases: kennel_kernel::startup::Phases,
    ready: impl FnOnce() + Send + 'static,
) -> anyhow::Result<()> {
    let addr: SocketAddr = listener.local_addr()?;
    let open_files = crate::edge::raise_open_file_limit();
    let limits = crate::edge::Limits::from_config(&kernel.config().server, open_files);
    let metrics_server = metrics_listener.map(|listener| serve_metrics(kernel.clone(), listener, limits));
    let app = crate::edge::App::starting(crate::http::health_router(kernel.clone()), limits);
    reload_on_hangup(kernel.clone());
    let (stopping, stopped) = tokio::sync::oneshot::channel();
    let signalled = shutdown_signal();
    let server = crate::edge::serve(listener, app.clone(), async {
        signalled.await;
        crate::live::stop_streams();
        let _ = stopping.send(());
    });
    phases.mark("serving /healthz");
    // A task of its own: building the router takes milliseconds of CPU, during which this
    // task's accept loop must go on taking connections.
    let starting = tokio::spawn(finish_starting(kernel.clone(), app, addr, phases, ready));
    // In-flight requests get a while to finish (a turn's model call); then the daemon stops
    // anyway, and the turns they ran are marked interrupted at the next start.
    let grace = async {
        let _ = stopped.await;
        tokio::time::sleep(SHUTDOWN_GRACE).await;
    };
    let serving = async {
        tokio::select! {
            served = server => served?,
            () = grace => tracing::warn!("requests still running {} s after the signal: stopping anyway", SHUTDOWN_GRACE.as_secs()),
        }
        anyhow::Ok(())
    };
    // Starting that fails (the cluster's row) stops serving too, and the daemon with its error.
    let started = async { starting.await? };
    let served = tokio::try_join!(serving, started).map(|_| ());
    if let Some(metrics_server) = metrics_server {
        metrics_server.abort();
    }
    tracing::info!("shutting down: closing the database");
    kernel.close().await;
    served
}

/// Connections `[metrics] listen` serves at once: a Prometheus or two, never a share of the
/// open files the daemon's own address needs.
const METRICS_CONNECTIONS: usize = 64;

/// Serves `GET /metrics` without a token on `listener` (`[metrics] listen`), behind the same
/// edge as the daemon's own address (its timeouts; a cap of its own), until aborted.
fn serve_metrics(
    kernel: Kernel,
    listener: tokio::net::TcpListener,
    limits: crate::edge::Limits,
) -> tokio::task::JoinHandle<()> {
    let limits = crate::edge::Limits { max_connections: METRICS_CONNECTIONS.min(limits.max_connections), ..limits };
    let router = crate::http::metrics::open_router(kernel);
    let app = crate::edge::App::starting(router.clone(), limits);
    app.finish(router);
    tokio::spawn(async move {
        let addr = listener.local_addr().ok();
        if let Err(e) = crate::edge::serve(listener, app, std::future::pending()).await {
            tracing::error!(?addr, error = %e, "[metrics] listen stopped serving");
        }
    })
}

/// What starting does once `/healthz` answers: the background work, then the whole router,
/// which `app` serves every request with from then on.
async fn finish_starting(
    kernel: Kernel,
    app: crate::edge::App,
    addr: SocketAddr,
    mut phases: kennel_kernel::startup::Phases,
    ready: impl FnOnce(),
) -> anyhow::Result<()> {
    kernel.start_background(&addr.to_string()).await?;
    phases.mark("background");
    app.finish(router(kernel.clone()).layer(axum::Extension(crate::dashboard::site::ListenAddr(addr))));
    phases.mark("router");
    tracing::info!(%addr, max_connections = app.limits().max_connections, started = %phases, "listening");
    ready();
    // Start-up's code and heap, handed back; serving need not wait for it.
    tokio::task::spawn_blocking(crate::release_startup_memory);
    Ok(())
}

/// SIGHUP re-reads `[mcp]` from `config.toml`, as `kennel reload` does.
fn reload_on_hangup(kernel: Kernel) {
    #[cfg(unix)]
    tokio::spawn(async move {
        let Ok(mut hangups) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) else {
            tracing::warn!("cannot listen for SIGHUP: reload with `kennel reload` instead");
            return;
        };
        while hangups.recv().await.is_some() {
            match kernel.reload_config().await {
                Ok(report) => tracing::info!(?report, "SIGHUP: [mcp] reloaded"),
                Err(e) => tracing::warn!(error = %e.message, "SIGHUP: config.toml was not reloaded"),
            }
        }
    });
}

/// Resolves on SIGINT or SIGTERM. Both handlers are installed here, before the first request
/// is served: installed when the future is first polled, a signal sent right after the first
/// `/healthz` answer could still find the default action and kill the daemon without its
/// clean stop.
#[cfg(unix)]
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{SignalKind, signal};
    let (interrupt, terminate) = (signal(SignalKind::interrupt()), signal(SignalKind::terminate()));
    async move {
        match (interrupt, terminate) {
            (Ok(mut interrupt), Ok(mut terminate)) => {
                tokio::select! {
                    _ = interrupt.recv() => {},
                    _ = terminate.recv() => {},
                }
            }
            // No handler could be installed: Ctrl-C still stops the daemon cleanly.
            _ => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
}

#[cfg(not(unix))]
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    async {
        let _ = tokio::signal::ctrl_c().await;
    }
}
