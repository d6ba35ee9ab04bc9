//! Chromium's DevTools over a pipe (`--remote-debugging-pipe`): Chromium reads commands on
//! its descriptor 3 and writes answers and events on 4, each message JSON ended by a NUL
//! byte. No DevTools port listens, so no local user, no page and no child of an agent can
//! reach the browser (its cookies, its targets, `file://` pages).
//!
//! chromiumoxide speaks DevTools over a WebSocket only, so the daemon gives it one of its own
//! ([`bridge`]): a listener on an ephemeral loopback port that takes exactly one connection,
//! the one whose request names a path with 128 random bits that never leave this process,
//! and then closes. That connection's messages are relayed to the pipe and back.

use std::os::fd::OwnedFd;

use async_tungstenite::tungstenite::Message;
use async_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use futures_util::StreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::net::unix::pipe;
use tokio::task::JoinHandle;

use crate::error::Result;

/// The descriptors Chromium reads commands on and writes messages to.
pub(super) const CHROMIUM_READS: i32 = 3;
pub(super) const CHROMIUM_WRITES: i32 = 4;

/// The two pipes between the daemon and one Chromium: Chromium's ends (to be placed at
/// [`CHROMIUM_READS`] and [`CHROMIUM_WRITES`]) and the daemon's.
pub(super) struct Pipes {
    pub chromium_reads: OwnedFd,
    pub chromium_writes: OwnedFd,
    to_chromium: OwnedFd,
    from_chromium: OwnedFd,
}

impl Pipes {
    pub fn new() -> Result<Pipes> {
        let (chromium_reads, to_chromium) = std::io::pipe()?;
        let (from_chromium, chromium_writes) = std::io::pipe()?;
        Ok(Pipes {
            chromium_reads: chromium_reads.into(),
            chromium_writes: chromium_writes.into(),
            to_chromium: to_chromium.into(),
            from_chromium: from_chromium.into(),
        })
    }
}

/// Starts the bridge between a WebSocket on loopback and the daemon's ends of `pipes` (once
/// Chromium has its own): the URL to connect chromiumoxide to, and the task that relays.
pub(super) async fn bridge(pipes: Pipes) -> Result<(String, JoinHandle<()>)> {
    let to_chromium = pipe::Sender::from_owned_fd(pipes.to_chromium)?;
    let from_chromium = pipe::Receiver::from_owned_fd(pipes.from_chromium)?;
    let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
    let secret = format!("/devtools/browser/{}", hex::encode(rand::random::<[u8; 16]>()));
    let url = format!("ws://{}{secret}", listener.local_addr()?);
    let task = tokio::spawn(async move {
        let Some(socket) = accept_one(listener, &secret).await else { return };
        relay(socket, to_chromium, from_chromium).await;
    });
    Ok((url, task))
}

/// Accepts connections until one asks for `secret` (others are refused with 404), then
/// stops listening. `None` when the listener fails or no one asks within a minute.
async fn accept_one(
    listener: TcpListener,
    secret: &str,
) -> Option<async_tungstenite::WebSocketStream<async_tungstenite::tokio::TokioAdapter<tokio::net::TcpStream>>> {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let (stream, _) = tokio::time::timeout_at(deadline, listener.accept()).await.ok()?.ok()?;
        // The signature is the handshake library's callback, whose refusal is a whole response.
        #[allow(clippy::result_large_err)]
        let check = |request: &Request, response: Response| -> std::result::Result<Response, ErrorResponse> {
            if request.uri().path() == secret {
                Ok(response)
            } else {
                let mut refused = ErrorResponse::new(None);
                *refused.status_mut() = async_tungstenite::tungstenite::http::StatusCode::NOT_FOUND;
                Err(refused)
            }
        };
        let config = async_tungstenite::tungstenite::protocol::WebSocketConfig::default()
            .max_message_size(None)
            .max_frame_size(None);
        let accepted = tokio::time::timeout_at(
            deadline,
            async_tungstenite::tokio::accept_hdr_async_with_config(stream, check, Some(config)),
        )
        .await
        .ok()?;
        if let Ok(socket) = accepted {
            return Some(socket);
        }
        tracing::warn!("a connection to the browser's DevTools bridge without its secret path was refused");
    }
}

/// Relays text messages from the socket to Chromium (each ended by a NUL) and Chromium's
/// NUL-ended messages back, until either side closes.
async fn relay(
    socket: async_tungstenite::WebSocketStream<async_tungstenite::tokio::TokioAdapter<tokio::net::TcpStream>>,
    mut to_chromium: pipe::Sender,
    mut from_chromium: pipe::Receiver,
) {
    let (mut sink, mut stream) = socket.split();
    let commands = async {
        while let Some(Ok(message)) = stream.next().await {
            let bytes = match message {
                Message::Text(text) => text.as_bytes().to_vec(),
                Message::Binary(bytes) => bytes.to_vec(),
                Message::Close(_) => break,
                _ => continue,
            };
            if to_chromium.write_all(&bytes).await.is_err() || to_chromium.write_all(&[0]).await.is_err() {
                break;
            }
        }
    };
    let messages = async {
        let mut pending = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match from_chromium.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            pending.extend_from_slice(&buf[..n]);
            while let Some(end) = pending.iter().position(|b| *b == 0) {
                let message: Vec<u8> = pending.drain(..=end).take(end).collect();
                let text = String::from_utf8_lossy(&message).into_owned();
                if sink.send(Message::text(text)).await.is_err() {
                    return;
                }
            }
        }
        let _ = sink.close(None).await;
    };
    // Either side ending ends the bridge: chromiumoxide then sees its connection close.
    tokio::select! {
        () = commands => {}
        () = messages => {}
    }
}

/// Places Chromium's pipe ends at descriptors 3 and 4 in the forked child (before exec).
/// Both are first copied above 4, so neither is overwritten by the other's `dup2`.
pub(super) fn place_in_child(reads: i32, writes: i32) -> std::io::Result<()> {
    // SAFETY: fcntl, dup2 and close on descriptors of this (forked) process; all are
    // async-signal-safe.
    unsafe {
        let high_reads = libc::fcntl(reads, libc::F_DUPFD, 10);
        let high_writes = libc::fcntl(writes, libc::F_DUPFD, 10);
        if high_reads < 0 || high_writes < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::dup2(high_reads, CHROMIUM_READS) < 0 || libc::dup2(high_writes, CHROMIUM_WRITES) < 0 {
            return Err(std::io::Error::last_os_error());
        }
        libc::close(high_reads);
        libc::close(high_writes);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};

    use super::*;

    /// The bridge serves only its secret path, stops listening once that connection is made,
    /// and carries messages both ways with Chromium's NUL framing. The test plays Chromium.
    #[tokio::test]
    async fn only_the_secret_path_is_served_and_then_nothing_listens() {
        let pipes = Pipes::new().unwrap();
        let mut chromium_reads = std::fs::File::from(pipes.chromium_reads.try_clone().unwrap());
        let mut chromium_writes = std::fs::File::from(pipes.chromium_writes.try_clone().unwrap());
        let (url, _task) = bridge(pipes).await.unwrap();
        let address = url.strip_prefix("ws://").unwrap().split('/').next().unwrap().to_string();

        let guessed = format!("ws://{address}/devtools/browser/00000000000000000000000000000000");
        assert!(async_tungstenite::tokio::connect_async(guessed).await.is_err(), "a wrong path is refused");
        let listing = format!("ws://{address}/json/list");
        assert!(async_tungstenite::tokio::connect_async(listing).await.is_err());

        let (mut socket, _) = async_tungstenite::tokio::connect_async(url.clone()).await.unwrap();
        assert!(tokio::net::TcpStream::connect(&address).await.is_err(), "no longer listening");

        socket.send(Message::text(r#"{"id":1,"method":"Browser.getVersion"}"#)).await.unwrap();
        let command = tokio::task::spawn_blocking(move || {
            let mut got = Vec::new();
            let mut byte = [0u8];
            while chromium_reads.read_exact(&mut byte).is_ok() && byte[0] != 0 {
                got.push(byte[0]);
            }
            got
        })
        .await
        .unwrap();
        assert_eq!(command, br#"{"id":1,"method":"Browser.getVersion"}"#);
        chromium_writes.write_all(b"{\"id\":1,\"result\":{}}\0{\"method\":\"Target.targetCreated\"}\0").unwrap();
        for expected in [r#"{"id":1,"result":{}}"#, r#"{"method":"Target.targetCreated"}"#] {
            let message = socket.next().await.unwrap().unwrap();
            assert_eq!(message.to_text().unwrap(), expected);
        }
    }
}
