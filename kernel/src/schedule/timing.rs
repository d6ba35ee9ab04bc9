//! When things fire: `when` for one-shot schedules (an RFC 3339 time or `+15m`) and the time
//! zones cron jobs are read in (cron expressions themselves are `super::cron`'s).

use chrono::{DateTime, Duration, Utc};
use chrono_tz::Tz;

/// An IANA time zone name (`Europe/Berlin`); none means UTC.
pub fn parse_timezone(timezone: Option<&str>) -> Result<Tz, String> {
    match timezone.map(str::trim).filter(|t| !t.is_empty()) {
        None => Ok(Tz::UTC),
        Some(name) => name
            .parse::<Tz>()
            .map_err(|_| format!("`{name}` is not an IANA time zone name (like Europe/Berlin or America/New_York)")),
    }
}

/// The furthest ahead a one-shot schedule may be set.
const MAX_AHEAD_DAYS: i64 = 3660;

/// Reads `when`: an RFC 3339 time (`2026-12-01T09:00:00Z`, any offset) or a duration from
/// `now` such as `+90s`, `+15m`, `+2h`, `+1d` or `+1h30m`. The time must be in the future.
pub fn parse_when(when: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
    let when = when.trim();
    let at = match when.strip_prefix('+') {
        Some(relative) => {
            let ahead = parse_duration(relative).map_err(|e| format!("`{when}`: {e}"))?;
            now.checked_add_signed(ahead).ok_or_else(|| format!("`{when}` is more than ten years ahead"))?
        }
        None => DateTime::parse_from_rfc3339(when).map(|t| t.with_timezone(&Utc)).map_err(|_| {
            format!("`{when}` is neither an RFC 3339 time (like 2026-12-01T09:00:00Z) nor a duration (like +15m)")
        })?,
    };
    if at <= now {
        return Err(format!(
            "`{when}` is in the past (it is now {}); give a future time",
            now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        ));
    }
    if at > now + Duration::days(MAX_AHEAD_DAYS) {
        return Err(format!("`{when}` is more than ten years ahead"));
    }
    Ok(at)
}

/// `90s`, `15m`, `2h`, `1d`, `1h30m`: whole numbers, each with a unit.
fn parse_duration(text: &str) -> Result<Duration, String> {
    const RULE: &str = "write a duration as numbers with units s, m, h or d, like +15m or +1h30m";
    let mut total = Duration::zero();
    let mut digits = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let n: i64 = digits.parse().map_err(|_| RULE.to_string())?;
        digits.clear();
        let part = match c {
            's' => Duration::try_seconds(n),
            'm' => Duration::try_minutes(n),
            'h' => Duration::try_hours(n),
            'd' => Duration::try_days(n),
            _ => None,
        };
        total = part.and_then(|p| total.checked_add(&p)).ok_or_else(|| RULE.to_string())?;
    }
    if !digits.is_empty() || total.is_zero() {
        return Err(RULE.to_string());
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn when_takes_rfc3339_or_a_relative_duration_in_the_future() {
        let now = at("2026-12-01T10:00:00Z");
        assert_eq!(parse_when("+15m", now), Ok(at("2026-12-01T10:15:00Z")));
        assert_eq!(parse_when("+1h30m", now), Ok(at("2026-12-01T11:30:00Z")));
        assert_eq!(parse_when("2026-12-01T13:00:00+02:00", now), Ok(at("2026-12-01T11:00:00Z")));
        assert!(parse_when("2026-12-01T12:00:00+02:00", now).unwrap_err().contains("in the past"));
        assert!(parse_when("2026-12-01T09:59:59Z", now).unwrap_err().contains("in the past"));
        assert!(parse_when("+0m", now).is_err());
        assert!(parse_when("+15x", now).unwrap_err().contains("units"));
        assert!(parse_when("+15", now).is_err());
        assert!(parse_when("tomorrow", now).unwrap_err().contains("RFC 3339"));
        assert!(parse_when("+99999999999d", now).is_err());
    }
}
