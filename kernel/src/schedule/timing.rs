//! When things fire: `when` for one-shot schedules (an RFC 3339 time or `+15m`) and 5-field
//! cron expressions in a time zone. Parsing and "next occurrence" come from croner; this
//! module only adds the rules and messages of spec §11.

use chrono::{DateTime, Duration, Utc};
use chrono_tz::Tz;
use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};

/// A validated cron expression and the time zone its fields are read in.
#[derive(Debug, Clone)]
pub struct CronSpec {
    cron: Cron,
    tz: Tz,
}

const FIELDS: &str = "minute hour day-of-month month day-of-week";

/// Parses a 5-field cron expression (`*/5 9-17 * * mon-fri`, or an alias such as `@daily`)
/// read in `timezone` (IANA name; UTC when absent). The message says what to write instead.
pub fn parse_cron(expression: &str, timezone: Option<&str>) -> Result<CronSpec, String> {
    let expression = expression.trim();
    let fields = expression.split_whitespace().count();
    if !expression.starts_with('@') && fields != 5 {
        let hint = match fields {
            6 => " (no seconds field: Kennel's cron is minute-granular)",
            7 => " (no seconds or year field)",
            _ => "",
        };
        return Err(format!("`{expression}` has {fields} fields; write 5: {FIELDS}{hint}"));
    }
    let cron = CronParser::builder()
        .seconds(Seconds::Disallowed)
        .year(Year::Disallowed)
        .build()
        .parse(expression)
        .map_err(|e| format!("`{expression}` is not a valid cron expression ({FIELDS}): {e}"))?;
    let tz = parse_timezone(timezone)?;
    let spec = CronSpec { cron, tz };
    if spec.next_after(Utc::now()).is_none() {
        return Err(format!("`{expression}` never fires (no such date on the calendar)"));
    }
    Ok(spec)
}

/// An IANA time zone name (`Europe/Berlin`); none means UTC.
pub fn parse_timezone(timezone: Option<&str>) -> Result<Tz, String> {
    match timezone.map(str::trim).filter(|t| !t.is_empty()) {
        None => Ok(Tz::UTC),
        Some(name) => name
            .parse::<Tz>()
            .map_err(|_| format!("`{name}` is not an IANA time zone name (like Europe/Berlin or America/New_York)")),
    }
}

impl CronSpec {
    /// The first fire strictly after `t`.
    pub fn next_after(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.cron.find_next_occurrence(&t.with_timezone(&self.tz), false).ok().map(|n| n.with_timezone(&Utc))
    }

    /// How many fire times fall in `(after, until]`, counting no further than `cap`.
    pub fn slots_between(&self, after: DateTime<Utc>, until: DateTime<Utc>, cap: u64) -> u64 {
        let mut count = 0;
        let mut t = after;
        while count < cap {
            match self.next_after(t) {
                Some(next) if next <= until => {
                    count += 1;
                    t = next;
                }
                _ => break,
            }
        }
        count
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
    fn five_fields_are_required_and_six_get_a_hint() {
        assert!(parse_cron("*/5 * * * *", None).is_ok());
        assert!(parse_cron("@daily", None).is_ok());
        let e = parse_cron("0 */5 * * * *", None).unwrap_err();
        assert!(e.contains("6 fields") && e.contains("no seconds"), "{e}");
        let e = parse_cron("61 * * * *", None).unwrap_err();
        assert!(e.contains("not a valid cron expression"), "{e}");
        let e = parse_cron("0 0 30 2 *", None).unwrap_err();
        assert!(e.contains("never fires"), "{e}");
    }

    #[test]
    fn next_fire_is_read_in_the_time_zone() {
        let nine_berlin = parse_cron("0 9 * * *", Some("Europe/Berlin")).unwrap();
        // 1 December: Berlin is UTC+1, so 09:00 there is 08:00 UTC.
        assert_eq!(nine_berlin.next_after(at("2026-12-01T07:00:00Z")), Some(at("2026-12-01T08:00:00Z")));
        let nine_utc = parse_cron("0 9 * * *", None).unwrap();
        assert_eq!(nine_utc.next_after(at("2026-12-01T09:00:00Z")), Some(at("2026-12-02T09:00:00Z")));
        assert!(parse_cron("0 9 * * *", Some("Mars/Olympus")).unwrap_err().contains("IANA"));
    }

    #[test]
    fn missed_slots_are_counted_up_to_a_cap() {
        let every_minute = parse_cron("* * * * *", None).unwrap();
        let from = at("2026-12-01T10:00:00Z");
        assert_eq!(every_minute.slots_between(from, at("2026-12-01T10:05:30Z"), 1000), 5);
        assert_eq!(every_minute.slots_between(from, at("2026-12-02T10:00:00Z"), 100), 100);
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
