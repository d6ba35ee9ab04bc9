//! Waiting out an outside service that said "later" (429, a 5xx, a dropped connection): the
//! one backoff rule the model, embeddings, media and email calls share.

use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::HeaderMap;

/// The longest wait between two attempts, whatever a service asks for.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// How long to wait before attempt `attempt + 1` (counting from 0): the service's own
/// `Retry-After` when it gave one, else half a second doubling; never more than
/// [`MAX_BACKOFF`].
pub fn backoff(attempt: u64, retry_after: Option<Duration>) -> Duration {
    let doubling = Duration::from_millis(500).saturating_mul(2u32.saturating_pow(attempt.min(16) as u32));
    retry_after.unwrap_or(doubling).min(MAX_BACKOFF)
}

/// The `Retry-After` header as a wait (seconds; a date is not taken), at most [`MAX_BACKOFF`].
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    retry_after_up_to(headers, MAX_BACKOFF)
}

/// The `Retry-After` header as a wait of at most `longest`: a chat platform's throttle (an
/// hour, say) is waited out whole, where a model call's would rather fail.
pub fn retry_after_up_to(headers: &HeaderMap, longest: Duration) -> Option<Duration> {
    let secs = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?.trim().parse::<f64>().ok()?;
    secs.is_finite().then(|| Duration::from_secs_f64(secs.clamp(0.0, longest.as_secs_f64())))
}

/// Whether a service's answer says "try again later": 429 or a server error.
pub fn is_transient(status: StatusCode) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_doubles_takes_the_services_word_and_is_capped() {
        assert_eq!(backoff(0, None), Duration::from_millis(500));
        assert_eq!(backoff(2, None), Duration::from_secs(2));
        assert_eq!(backoff(40, None), MAX_BACKOFF);
        assert_eq!(backoff(5, Some(Duration::from_secs(1))), Duration::from_secs(1));
        assert_eq!(backoff(0, Some(Duration::from_secs(3600))), MAX_BACKOFF);
        let mut headers = HeaderMap::new();
        headers.insert(reqwest::header::RETRY_AFTER, "2".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert(reqwest::header::RETRY_AFTER, "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap());
        assert_eq!(retry_after(&headers), None);
        assert!(is_transient(StatusCode::SERVICE_UNAVAILABLE) && !is_transient(StatusCode::BAD_REQUEST));
    }
}
