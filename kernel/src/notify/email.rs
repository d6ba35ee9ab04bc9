//! The inbox's email fan-out: a note as a plain-text message to `[notify] email_to`, over the
//! SMTP server `smtp_url` (lettre: `smtps://` is TLS from the start, `smtp://…?tls=required`
//! STARTTLS, plain `smtp://` only for a relay on this machine), signing in as the URL's user
//! with the password in the variable `smtp_password_env`. The password is never in the URL
//! (config.toml is not a secret store).

use std::time::Duration;

use lettre::message::Mailbox;
use lettre::message::header::ContentType;
use lettre::transport::smtp::authentication::Credentials;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

use super::NotifyConfig;
use super::{Note, urgency_label};
use crate::error::{Error, Result};

/// How long one SMTP conversation may take.
const SMTP_TIMEOUT: Duration = Duration::from_secs(30);
/// Times a message is sent again after the server said "later" (a 4xx reply) or the
/// connection failed, backing off between tries.
const SMTP_RETRIES: u64 = 3;

/// Sends `note` as `[notify]` says. Called only when `email_to` is set.
pub(super) async fn send(config: &NotifyConfig, note: &Note) -> Result<()> {
    let url = config.smtp_url.as_deref().ok_or_else(|| Error::unavailable("[notify] smtp_url is not set"))?;
    let mut transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(url)
        .map_err(|e| Error::unavailable(format!("[notify] smtp_url is not usable: {e}")))?
        .timeout(Some(SMTP_TIMEOUT));
    if let Some(var) = &config.smtp_password_env {
        let password = std::env::var(var)
            .map_err(|_| Error::unavailable(format!("the SMTP password variable `{var}` is not set")))?;
        transport = transport.credentials(Credentials::new(user_of(url), password));
    }
    let message = message(config, note)?;
    let transport = transport.build();
    let mut attempt = 0;
    loop {
        let Err(e) = transport.send(message.clone()).await else { return Ok(()) };
        if !worth_retrying(&e) || attempt >= SMTP_RETRIES {
            return Err(Error::failed(format!("the SMTP server refused it: {e}")));
        }
        let backoff = crate::net::retry::backoff(attempt, None);
        tracing::warn!(note = note.id, attempt, error = %e, ?backoff, "retrying an email");
        tokio::time::sleep(backoff).await;
        attempt += 1;
    }
}

/// A 4xx reply ("try again later"), or a connection that failed or timed out. A 5xx reply, a
/// TLS failure or a message lettre cannot make will not change by waiting.
fn worth_retrying(e: &lettre::transport::smtp::Error) -> bool {
    e.is_transient() || !(e.is_permanent() || e.is_client() || e.is_response() || e.is_tls())
}

/// The note as a message: the urgency and reason as the subject (one line), the summary and
/// where it came from as the body.
fn message(config: &NotifyConfig, note: &Note) -> Result<Message> {
    let to: Vec<Mailbox> = config.email_to.iter().map(|a| mailbox(a)).collect::<Result<_>>()?;
    let from = match &config.email_from {
        Some(from) => mailbox(from)?,
        None => to[0].clone(),
    };
    let one_line: String =
        note.reason.chars().map(|c| if c.is_control() || crate::text::is_space(c) { ' ' } else { c }).collect();
    let mut builder = Message::builder()
        .from(from)
        .subject(format!("[Kennel] {}: {}", urgency_label(note.urgency), one_line.trim()))
        .header(ContentType::TEXT_PLAIN);
    for mailbox in to {
        builder = builder.to(mailbox);
    }
    let origin = match &note.agent_name {
        Some(agent) => format!("From agent {agent}"),
        None => format!("From the daemon ({})", note.source),
    };
    let body = format!("{}\n\n{origin}, {} UTC. Inbox note {}.\n", note.summary, note.at, note.id);
    builder.body(body).map_err(|e| Error::failed(format!("the message could not be made: {e}")))
}

fn mailbox(address: &str) -> Result<Mailbox> {
    address.parse().map_err(|e| Error::invalid(format!("`{address}` is not an email address: {e}")))
}

/// The user the URL signs in as (percent-decoded), or none.
fn user_of(url: &str) -> String {
    let user = reqwest::Url::parse(url).map(|u| u.username().to_string()).unwrap_or_default();
    percent_encoding::percent_decode_str(&user).decode_utf8_lossy().into_owned()
}

/// Email needs addresses and a server together; each address parses; the URL is one lettre
/// reads and holds no password.
pub(super) fn check_config(config: &NotifyConfig) -> std::result::Result<(), (String, String)> {
    let bad = |key: &str, message: String| Err((key.to_string(), message));
    match (config.email_to.is_empty(), &config.smtp_url) {
        (true, Some(_)) => return bad("email_to", "[notify] smtp_url is set but email_to names nobody".into()),
        (false, None) => {
            return bad("smtp_url", "[notify] email_to needs smtp_url: the SMTP server to send through".into());
        }
        (true, None) => return Ok(()),
        (false, Some(_)) => {}
    }
    for address in config.email_to.iter().chain(&config.email_from) {
        if let Err(e) = mailbox(address) {
            let key = if config.email_from.as_deref() == Some(address.as_str()) { "email_from" } else { "email_to" };
            return bad(key, format!("[notify] {}", e.message));
        }
    }
    let url = config.smtp_url.as_deref().unwrap_or_default();
    match reqwest::Url::parse(url) {
        Ok(parsed) if parsed.password().is_some() => {
            return bad(
                "smtp_url",
                "[notify] smtp_url holds a password: put it in the variable smtp_password_env names".into(),
            );
        }
        Ok(parsed)
            if parsed.password().is_none() && parsed.username().is_empty() && config.smtp_password_env.is_some() =>
        {
            return bad(
                "smtp_url",
                "[notify] smtp_password_env is set but smtp_url names no user (smtps://USER@HOST)".into(),
            );
        }
        _ => {}
    }
    if let Err(e) = AsyncSmtpTransport::<Tokio1Executor>::from_url(url) {
        return bad(
            "smtp_url",
            format!(
                "[notify] smtp_url `{url}` is not usable ({e}): smtps://USER@HOST:465 or smtp://USER@HOST:587?tls=required"
            ),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notify::Urgency;

    fn config(to: &[&str], url: Option<&str>) -> NotifyConfig {
        NotifyConfig {
            email_to: to.iter().map(|s| s.to_string()).collect(),
            smtp_url: url.map(str::to_string),
            ..NotifyConfig::default()
        }
    }

    #[test]
    fn email_settings_are_checked_together() {
        assert!(check_config(&config(&[], None)).is_ok());
        assert!(check_config(&config(&["owner@example.com"], Some("smtps://kennel@smtp.example.com"))).is_ok());
        for (c, key, says) in [
            (config(&["owner@example.com"], None), "smtp_url", "needs smtp_url"),
            (config(&[], Some("smtps://smtp.example.com")), "email_to", "names nobody"),
            (config(&["not an address"], Some("smtps://smtp.example.com")), "email_to", "not an email address"),
            (config(&["owner@example.com"], Some("smtps://u:secret@smtp.example.com")), "smtp_url", "holds a password"),
            (config(&["owner@example.com"], Some("gopher://smtp.example.com")), "smtp_url", "not usable"),
        ] {
            let (k, message) = check_config(&c).unwrap_err();
            assert_eq!(k, key, "{message}");
            assert!(message.contains(says), "{message}");
        }
    }

    #[test]
    fn a_note_is_a_one_line_subject_and_a_plain_body() {
        let note = Note {
            id: 7,
            at: "2026-12-03T01:00:00Z".into(),
            source: "agent".into(),
            agent_id: None,
            agent_name: Some("watcher".into()),
            reason: "Disk\r\nBcc: victim@example.com".into(),
            summary: "/var is at 97%.".into(),
            urgency: Urgency::High,
            telegram: None,
            email: None,
            read: false,
        };
        let sent = message(&config(&["owner@example.com"], Some("smtp://localhost")), &note).unwrap();
        let text = String::from_utf8(sent.formatted()).unwrap();
        assert!(text.contains("Subject: [Kennel] HIGH: Disk  Bcc: victim@example.com\r\n"), "{text}");
        assert!(!text.contains("\r\nBcc:"), "no header of the agent's making: {text}");
        assert!(text.contains("/var is at 97%.") && text.contains("From agent watcher"), "{text}");
        assert_eq!(sent.envelope().to().len(), 1);
    }
}
