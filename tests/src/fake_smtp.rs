//! A local SMTP server for the owner inbox's email tests. It speaks the part of RFC 5321 a
//! real client (lettre) uses — EHLO offering AUTH PLAIN and LOGIN, AUTH, MAIL, RCPT, DATA with
//! dot-unstuffing, RSET, NOOP, QUIT — and keeps each message with its envelope and the
//! credentials the client signed in with.

use std::sync::{Arc, Mutex};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// One message as the server took it.
#[derive(Debug, Clone, Default)]
pub struct Received {
    /// The user and password of `AUTH`, if the client signed in.
    pub auth: Option<(String, String)>,
    pub from: String,
    pub to: Vec<String>,
    /// The message (headers and body), dot-unstuffed, lines ending in CRLF.
    pub data: String,
}

pub struct FakeSmtp {
    port: u16,
    received: Arc<Mutex<Vec<Received>>>,
    refusals: Refusals,
}

/// Replies the next `MAIL FROM` commands get instead of `250` (a `451` "later", a `550` "no"),
/// and how many `MAIL FROM` commands came.
#[derive(Clone, Default)]
struct Refusals {
    next: Arc<Mutex<std::collections::VecDeque<&'static str>>>,
    mail_commands: Arc<std::sync::atomic::AtomicUsize>,
}

impl FakeSmtp {
    pub async fn start() -> FakeSmtp {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind the fake SMTP server");
        let port = listener.local_addr().unwrap().port();
        let received: Arc<Mutex<Vec<Received>>> = Arc::default();
        let refusals = Refusals::default();
        let (kept, refusing) = (received.clone(), refusals.clone());
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (kept, refusing) = (kept.clone(), refusing.clone());
                tokio::spawn(async move {
                    let _ = converse(stream, kept, refusing).await;
                });
            }
        });
        FakeSmtp { port, received, refusals }
    }

    /// The next message is answered `451 4.3.0` (try again later) at `MAIL FROM`.
    pub fn defer_next(&self) {
        self.refusals.next.lock().unwrap().push_back("451 4.3.0 mail server busy, try again later\r\n");
    }

    /// The next message is answered `550 5.7.1` (refused for good) at `MAIL FROM`.
    pub fn reject_next(&self) {
        self.refusals.next.lock().unwrap().push_back("550 5.7.1 sender refused\r\n");
    }

    /// How many times a client began a message (`MAIL FROM`), refused or not.
    pub fn mail_commands(&self) -> usize {
        self.refusals.mail_commands.load(std::sync::atomic::Ordering::SeqCst)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

async fn converse(stream: TcpStream, kept: Arc<Mutex<Vec<Received>>>, refusals: Refusals) -> std::io::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read).lines();
    write.write_all(b"220 fake-smtp ready\r\n").await?;
    let mut current = Received::default();
    let mut auth = None;
    while let Some(line) = lines.next_line().await? {
        let upper = line.to_ascii_uppercase();
        let reply: String = if upper.starts_with("EHLO") || upper.starts_with("HELO") {
            "250-fake-smtp\r\n250-AUTH PLAIN LOGIN\r\n250 8BITMIME\r\n".into()
        } else if upper.starts_with("AUTH PLAIN") {
            let encoded = match line.split_whitespace().nth(2) {
                Some(initial) => initial.to_string(),
                None => {
                    write.write_all(b"334 \r\n").await?;
                    lines.next_line().await?.unwrap_or_default()
                }
            };
            let decoded = String::from_utf8(STANDARD.decode(encoded.trim()).unwrap_or_default()).unwrap_or_default();
            let mut parts = decoded.split('\0').skip(1);
            auth = Some((parts.next().unwrap_or_default().to_string(), parts.next().unwrap_or_default().to_string()));
            "235 2.7.0 signed in\r\n".into()
        } else if upper.starts_with("AUTH LOGIN") {
            write.write_all(b"334 VXNlcm5hbWU6\r\n").await?;
            let user = lines.next_line().await?.unwrap_or_default();
            write.write_all(b"334 UGFzc3dvcmQ6\r\n").await?;
            let password = lines.next_line().await?.unwrap_or_default();
            let text =
                |b64: &str| String::from_utf8(STANDARD.decode(b64.trim()).unwrap_or_default()).unwrap_or_default();
            auth = Some((text(&user), text(&password)));
            "235 2.7.0 signed in\r\n".into()
        } else if upper.starts_with("MAIL FROM:") {
            refusals.mail_commands.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            current = Received { auth: auth.clone(), from: address(&line), ..Received::default() };
            let refused = refusals.next.lock().unwrap().pop_front();
            refused.unwrap_or("250 2.1.0 ok\r\n").into()
        } else if upper.starts_with("RCPT TO:") {
            current.to.push(address(&line));
            "250 2.1.5 ok\r\n".into()
        } else if upper == "DATA" {
            write.write_all(b"354 end with <CRLF>.<CRLF>\r\n").await?;
            while let Some(data_line) = lines.next_line().await? {
                if data_line == "." {
                    break;
                }
                let unstuffed = data_line.strip_prefix('.').unwrap_or(&data_line);
                current.data.push_str(unstuffed);
                current.data.push_str("\r\n");
            }
            kept.lock().unwrap().push(std::mem::take(&mut current));
            "250 2.0.0 queued\r\n".into()
        } else if upper == "RSET" || upper == "NOOP" {
            "250 2.0.0 ok\r\n".into()
        } else if upper == "QUIT" {
            write.write_all(b"221 2.0.0 bye\r\n").await?;
            return Ok(());
        } else {
            "502 5.5.2 not implemented\r\n".into()
        };
        write.write_all(reply.as_bytes()).await?;
    }
    Ok(())
}

/// The address in `MAIL FROM:<a@b> …` or `RCPT TO:<a@b>`.
fn address(line: &str) -> String {
    line.split_once('<').and_then(|(_, rest)| rest.split_once('>')).map(|(a, _)| a.to_string()).unwrap_or_default()
}
