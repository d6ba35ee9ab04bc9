//! A local Docker engine for tests: the engine API's container inspect and exec endpoints,
//! over HTTP/1.1 on a Unix socket, as the engine speaks them to bollard. It knows the
//! containers a test gives it and resolves a reference as the engine does (full id, then
//! exact name, then id prefix). `POST /exec/{id}/start` answers `101 UPGRADED` and then the
//! multiplexed stream: frames of an 8-byte header (stream 1 stdout or 2 stderr, three zero
//! bytes, the payload's length as a big-endian u32) and the payload. Like the engine, it
//! records an exec's exit code a moment after the stream ends, not before.
//!
//! Commands are not run; each is a script of the fake's:
//! - `echo WORDS…`: the words and a newline on stdout, exit 0;
//! - `fail CODE TEXT…`: `about to fail` on stdout, the text on stderr, exit CODE;
//! - `flood BYTES`: that many `x` on stdout in 32 KiB frames, one line on stderr, exit 0;
//! - `hang`: `started` on stdout, then nothing until the client hangs up (the exec stays
//!   running, as the engine's would);
//! - `sh -c LINE`: LINE split at spaces, as its command;
//! - anything else: a line on stderr, exit 127.
//!
//! Every request is recorded ([`FakeDocker::requests`]), so a test can assert that a call
//! refused before the engine reached none.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{Method, Request, StatusCode, header};
use axum::response::{IntoResponse, Response};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A container the fake engine knows.
#[derive(Debug, Clone)]
pub struct Container {
    /// 64 hex digits.
    pub id: String,
    pub name: String,
    pub running: bool,
    /// Inspecting it takes this long (an engine that hangs).
    pub describe_delay: Duration,
}

impl Container {
    /// A container whose id starts with `id_prefix` (hex digits), padded to the engine's 64.
    pub fn new(id_prefix: &str, name: &str, running: bool) -> Container {
        Container { id: format!("{id_prefix:0<64}"), name: name.into(), running, describe_delay: Duration::ZERO }
    }

    /// The engine takes a minute to describe it.
    pub fn slow_to_describe(self) -> Container {
        Container { describe_delay: Duration::from_secs(60), ..self }
    }
}

/// One request the engine got.
#[derive(Debug, Clone)]
pub struct EngineRequest {
    pub method: String,
    /// Without the API version (`/containers/web/json`).
    pub path: String,
    /// The JSON body, or `null`.
    pub body: Value,
}

#[derive(Default)]
struct Exec {
    cmd: Vec<String>,
    exit_code: Option<i64>,
    started: bool,
}

struct Engine {
    containers: Vec<Container>,
    execs: Mutex<HashMap<String, Exec>>,
    requests: Mutex<Vec<EngineRequest>>,
}

/// The fake engine, serving until the test ends.
pub struct FakeDocker {
    /// The folder of a socket of its own, removed with the fake.
    dir: Option<tempfile::TempDir>,
    socket: PathBuf,
    engine: Arc<Engine>,
}

impl FakeDocker {
    /// On a socket in a temporary folder of its own.
    pub async fn start(containers: Vec<Container>) -> FakeDocker {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut fake = FakeDocker::start_at(&dir.path().join("docker.sock"), containers).await;
        fake.dir = Some(dir);
        fake
    }

    /// On `socket`, where a daemon already looks for its engine.
    pub async fn start_at(socket: &Path, containers: Vec<Container>) -> FakeDocker {
        let listener = tokio::net::UnixListener::bind(socket).expect("bind the engine's socket");
        let engine = Arc::new(Engine { containers, execs: Mutex::default(), requests: Mutex::default() });
        let app = Router::new().fallback(answer).with_state(engine.clone());
        tokio::spawn(async move { axum::serve(listener, app).await.expect("serving the engine") });
        FakeDocker { dir: None, socket: socket.to_path_buf(), engine }
    }

    /// The socket to set as `[exec_policy] docker_socket`.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<EngineRequest> {
        self.engine.requests.lock().unwrap().clone()
    }

    /// The `Cmd` of every exec created, in order.
    pub fn commands(&self) -> Vec<Value> {
        self.requests().into_iter().filter(|r| r.path.ends_with("/exec")).map(|r| r.body["Cmd"].clone()).collect()
    }
}

fn engine_error(status: StatusCode, message: String) -> Response {
    (status, axum::Json(json!({ "message": message }))).into_response()
}

async fn answer(State(engine): State<Arc<Engine>>, mut request: Request<Body>) -> Response {
    let upgrade = request.extensions_mut().remove::<hyper::upgrade::OnUpgrade>();
    let method = request.method().clone();
    let full_path = request.uri().path().to_string();
    let bytes = axum::body::to_bytes(request.into_body(), 1 << 20).await.unwrap_or_default();
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let segments: Vec<&str> = full_path.split('/').filter(|s| !s.is_empty()).collect();
    // The engine takes `/v1.53/…` and unversioned paths alike.
    let segments = match segments.split_first() {
        Some((version, rest)) if version.starts_with('v') && version[1..].contains('.') => rest,
        _ => &segments[..],
    };
    engine.requests.lock().unwrap().push(EngineRequest {
        method: method.to_string(),
        path: format!("/{}", segments.join("/")),
        body: body.clone(),
    });

    match (method, segments) {
        (Method::GET | Method::HEAD, ["_ping"]) => "OK".into_response(),
        (Method::GET, ["containers", reference, "json"]) => match engine.resolve(reference) {
            Some(c) => {
                tokio::time::sleep(c.describe_delay).await;
                axum::Json(json!({
                "Id": c.id,
                "Name": format!("/{}", c.name),
                "State": { "Status": if c.running { "running" } else { "exited" }, "Running": c.running },
                }))
                .into_response()
            }
            None => engine_error(StatusCode::NOT_FOUND, format!("No such container: {reference}")),
        },
        (Method::POST, ["containers", reference, "exec"]) => {
            let Some(container) = engine.resolve(reference) else {
                return engine_error(StatusCode::NOT_FOUND, format!("No such container: {reference}"));
            };
            if !container.running {
                return engine_error(StatusCode::CONFLICT, format!("container {} is not running", container.id));
            }
            let cmd = body["Cmd"].as_array().into_iter().flatten().filter_map(|a| a.as_str().map(String::from));
            let id = next_exec_id();
            engine.execs.lock().unwrap().insert(id.clone(), Exec { cmd: cmd.collect(), ..Exec::default() });
            (StatusCode::CREATED, axum::Json(json!({ "Id": id }))).into_response()
        }
        (Method::POST, ["exec", id, "start"]) => {
            let cmd = match engine.execs.lock().unwrap().get_mut(*id) {
                Some(exec) if !exec.started => {
                    exec.started = true;
                    exec.cmd.clone()
                }
                Some(_) => return engine_error(StatusCode::CONFLICT, format!("exec {id} has already been started")),
                None => return engine_error(StatusCode::NOT_FOUND, format!("No such exec instance: {id}")),
            };
            let Some(upgrade) = upgrade else {
                return engine_error(StatusCode::BAD_REQUEST, "this fake speaks only the upgraded stream".into());
            };
            let (engine, id) = (engine.clone(), id.to_string());
            tokio::spawn(async move {
                let Ok(upgraded) = upgrade.await else { return };
                let mut stream = TokioIo::new(upgraded);
                let exit_code = run_script(&cmd, &mut stream).await;
                let _ = stream.shutdown().await;
                drop(stream);
                if let Some(code) = exit_code {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    if let Some(exec) = engine.execs.lock().unwrap().get_mut(&id) {
                        exec.exit_code = Some(code);
                    }
                }
            });
            Response::builder()
                .status(StatusCode::SWITCHING_PROTOCOLS)
                .header(header::CONTENT_TYPE, "application/vnd.docker.multiplexed-stream")
                .header(header::CONNECTION, "Upgrade")
                .header(header::UPGRADE, "tcp")
                .body(Body::empty())
                .expect("a 101 response")
        }
        (Method::GET, ["exec", id, "json"]) => match engine.execs.lock().unwrap().get(*id) {
            Some(exec) => axum::Json(json!({
                "ID": id,
                "Running": exec.started && exec.exit_code.is_none(),
                "ExitCode": exec.exit_code,
                "ProcessConfig": { "entrypoint": exec.cmd.first(), "arguments": exec.cmd.get(1..) },
            }))
            .into_response(),
            None => engine_error(StatusCode::NOT_FOUND, format!("No such exec instance: {id}")),
        },
        _ => engine_error(StatusCode::NOT_FOUND, "page not found".into()),
    }
}

impl Engine {
    fn resolve(&self, reference: &str) -> Option<Container> {
        let name = reference.strip_prefix('/').unwrap_or(reference);
        let by_id = self.containers.iter().find(|c| c.id == reference);
        let by_name = || self.containers.iter().find(|c| c.name == name);
        let by_prefix = || {
            let mut matching = self.containers.iter().filter(|c| c.id.starts_with(reference));
            matching.next().filter(|_| matching.next().is_none())
        };
        by_id.or_else(by_name).or_else(by_prefix).cloned()
    }
}

/// Exec ids are 64 hex digits, like the engine's; these count up.
fn next_exec_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!("{:064x}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// One frame of the multiplexed stream.
async fn frame(stream: &mut (impl AsyncWriteExt + Unpin), kind: u8, payload: &[u8]) -> std::io::Result<()> {
    let mut header = [kind, 0, 0, 0, 0, 0, 0, 0];
    header[4..].copy_from_slice(&(payload.len() as u32).to_be_bytes());
    stream.write_all(&header).await?;
    stream.write_all(payload).await
}

const STDOUT: u8 = 1;
const STDERR: u8 = 2;

/// Plays the command's script on the stream; its exit code, or none for a command that never
/// ends (the client hung up first).
async fn run_script(cmd: &[String], stream: &mut (impl AsyncReadExt + AsyncWriteExt + Unpin)) -> Option<i64> {
    let words: Vec<&str> = match cmd {
        [sh, c, line] if sh == "sh" && c == "-c" => line.split(' ').collect(),
        _ => cmd.iter().map(String::as_str).collect(),
    };
    let played = match words.as_slice() {
        ["echo", rest @ ..] => frame(stream, STDOUT, format!("{}\n", rest.join(" ")).as_bytes()).await.map(|_| 0),
        ["fail", code, text @ ..] => {
            let code = code.parse().unwrap_or(1);
            async {
                frame(stream, STDOUT, b"about to fail\n").await?;
                frame(stream, STDERR, format!("{}\n", text.join(" ")).as_bytes()).await
            }
            .await
            .map(|_| code)
        }
        ["flood", bytes] => {
            let mut left: usize = bytes.parse().unwrap_or(0);
            async {
                while left > 0 {
                    let piece = left.min(32 * 1024);
                    frame(stream, STDOUT, &vec![b'x'; piece]).await?;
                    left -= piece;
                }
                frame(stream, STDERR, b"flooded\n").await
            }
            .await
            .map(|_| 0)
        }
        ["hang"] => {
            if frame(stream, STDOUT, b"started\n").await.is_ok() {
                let mut sink = [0u8; 64];
                while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
            }
            return None;
        }
        [program, ..] => frame(stream, STDERR, format!("{program}: not found\n").as_bytes()).await.map(|_| 127),
        [] => Ok(127),
    };
    played.ok()
}
