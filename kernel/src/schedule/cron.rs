//! Cron expressions (spec §11): 5 fields read in an IANA time zone. Kennel reads the text
//! itself first — field count, nicknames, list items, ranges, names, stray characters — so
//! every message names the field to fix and malformed input never reaches croner. croner then
//! builds the matcher and finds occurrences; this module adds the check that an expression
//! fires at all (a fixed-size calendar check, not a search) and Vixie cron's daylight-saving
//! rule for jobs at fixed times.
//!
//! All of it is bounded (microseconds per expression), but it is still CPU work: async callers
//! run it through [`off_runtime`].

use chrono::{DateTime, Duration, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;
use croner::parser::{CronParser, Seconds, Year};
use croner::time::Weekday;
use croner::{Cron, CronPattern};

use super::timing::parse_timezone;
use crate::error::{Error, Result};

/// A validated cron expression and the time zone its fields are read in.
#[derive(Debug, Clone)]
pub struct CronSpec {
    /// Built from the normalized (numeric) fields.
    cron: Cron,
    tz: Tz,
    /// The minute and hour fields are fixed values — single values, lists or ranges, no `*`
    /// and no step. Such a job keeps its slots across daylight-saving changes (see
    /// [`CronSpec::next_after`]).
    fixed_time: bool,
}

/// One of the five fields: its name in messages, its range, its names and extras, if any.
struct Field {
    name: &'static str,
    min: u32,
    max: u32,
    /// Three-letter names, upper case, for the values from `min` on.
    names: &'static [&'static str],
    day: Day,
}

/// The day fields take croner's extras (`?`, `L`, `W`, `#`); the others none.
#[derive(PartialEq)]
enum Day {
    No,
    OfMonth,
    OfWeek,
}

const MONTHS: &[&str] = &["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"];
const DAYS: &[&str] = &["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

const MINUTE: usize = 0;
const HOUR: usize = 1;
const MONTH: usize = 3;

const FIELDS: [Field; 5] = [
    Field { name: "minute", min: 0, max: 59, names: &[], day: Day::No },
    Field { name: "hour", min: 0, max: 23, names: &[], day: Day::No },
    Field { name: "day-of-month", min: 1, max: 31, names: &[], day: Day::OfMonth },
    Field { name: "month", min: 1, max: 12, names: MONTHS, day: Day::No },
    Field { name: "day-of-week", min: 0, max: 7, names: DAYS, day: Day::OfWeek },
];

const FIELD_LIST: &str = "minute hour day-of-month month day-of-week";

/// The nicknames Kennel accepts and the fields each stands for.
const NICKNAMES: [(&str, &str); 7] = [
    ("@yearly", "0 0 1 1 *"),
    ("@annually", "0 0 1 1 *"),
    ("@monthly", "0 0 1 * *"),
    ("@weekly", "0 0 * * 0"),
    ("@daily", "0 0 * * *"),
    ("@midnight", "0 0 * * *"),
    ("@hourly", "0 * * * *"),
];
const NICKNAME_LIST: &str = "@yearly @annually @monthly @weekly @daily @midnight @hourly";

/// Wall-clock slots one search may pass over because they fall in the repeated hour of a
/// fall-back change before the start (a minutely fixed-time job has 60 per hour).
const MAX_SKIPPED_SLOTS: usize = 2 * 24 * 60;
/// The longest spring-forward gap walked over, in minutes (Samoa skipped a whole day).
const MAX_GAP_MINUTES: i64 = 2 * 24 * 60;

/// Parses a 5-field cron expression (`*/5 9-17 * * mon-fri`, or a nickname such as `@daily`)
/// read in `timezone` (IANA name; UTC when absent). The message says what to write instead,
/// naming the field at fault.
pub fn parse_cron(expression: &str, timezone: Option<&str>) -> std::result::Result<CronSpec, String> {
    let expression = expression.trim_matches(|c: char| c.is_ascii_whitespace());
    let fields = normalize(expression).map_err(|e| format!("`{expression}` is not a valid cron expression: {e}"))?;
    let cron = CronParser::builder()
        .seconds(Seconds::Disallowed)
        .year(Year::Disallowed)
        .build()
        .parse(&fields.join(" "))
        .map_err(|e| format!("`{expression}` is not a valid cron expression: {}", croner_error(&fields, e)))?;
    check_fires(&cron.pattern).map_err(|e| format!("`{expression}` never fires: {e}"))?;
    let tz = parse_timezone(timezone)?;
    let fixed_time = [MINUTE, HOUR].iter().all(|&i| !fields[i].contains(['*', '/']));
    Ok(CronSpec { cron, tz, fixed_time })
}

/// A valid expression in words, as croner describes it ("At 09:00, on Monday, …"); `None`
/// for one this daemon does not accept.
pub fn in_words(expression: &str, timezone: Option<&str>) -> Option<String> {
    parse_cron(expression, timezone).ok().map(|spec| spec.cron.describe())
}

/// Runs cron work (parsing, occurrence search, counting missed slots) on tokio's blocking
/// pool: each piece is bounded, but it is CPU work the runtime's workers must not wait on.
pub(crate) async fn off_runtime<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(work).await.map_err(|e| Error::internal(format_args!("cron work did not finish: {e}")))
}

impl CronSpec {
    /// The first fire strictly after `t`.
    ///
    /// Daylight saving follows Vixie cron and cronie. A fixed-time job (minute and hour without
    /// `*` or a step: `30 2 * * *`, `0,30 2 * * *`, `30 2-3 * * *`) runs a slot that falls in
    /// a spring-forward gap right after the gap (slots sharing a gap run once), and a slot in
    /// the repeated hour of a fall-back change once, at its first occurrence. Other jobs
    /// (`*/15 * * * *`, `0 * * * *`) follow the clock: slots in a gap do not exist, and the
    /// repeated hour runs twice.
    pub fn next_after(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        if self.fixed_time {
            return self.next_fixed_time(t);
        }
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

    /// Walks the wall-clock slots (croner on the local time read as UTC, where no clock
    /// changes) and maps each to the instant it runs at; slots whose instant is not after `t`
    /// (the first pass of a repeated hour, seen from its second pass) are passed over.
    fn next_fixed_time(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let mut wall = t.with_timezone(&self.tz).naive_local().and_utc();
        for _ in 0..MAX_SKIPPED_SLOTS {
            wall = self.cron.find_next_occurrence(&wall, false).ok()?;
            let at = self.runs_at(wall.naive_utc())?;
            if at > t {
                return Some(at);
            }
        }
        None
    }

    /// The instant a fixed-time slot runs at: the wall-clock time itself, its first occurrence
    /// when the clock repeats it, or the first valid time after a gap it falls in.
    fn runs_at(&self, wall: NaiveDateTime) -> Option<DateTime<Utc>> {
        let local = self.tz.from_local_datetime(&wall).earliest().or_else(|| {
            (1..=MAX_GAP_MINUTES).find_map(|m| self.tz.from_local_datetime(&(wall + Duration::minutes(m))).earliest())
        })?;
        Some(local.with_timezone(&Utc))
    }
}

/// The five fields of `expression` in numeric form (names replaced, nicknames expanded),
/// each checked item by item.
fn normalize(expression: &str) -> std::result::Result<Vec<String>, String> {
    check_characters(expression)?;
    let tokens: Vec<&str> = expression.split_ascii_whitespace().collect();
    if let Some(first) = tokens.first().filter(|t| t.starts_with('@')) {
        return normalize(expand_nickname(first, tokens.len())?);
    }
    if tokens.len() != 5 {
        let count = tokens.len();
        let hint = match count {
            0 => " (the expression is empty)",
            6 => " (no seconds field: Kennel's cron is minute-granular)",
            7 => " (no seconds or year field)",
            _ => "",
        };
        return Err(format!("it has {count} fields; write 5: {FIELD_LIST}{hint}"));
    }
    FIELDS
        .iter()
        .zip(tokens)
        .map(|(field, text)| normalize_field(field, text).map_err(|e| format!("{} field: {e}", field.name)))
        .collect()
}

/// Cron is ASCII. A non-ASCII space (often a non-breaking space pasted from a web page or a
/// word processor) would otherwise be read as a field separator by croner.
fn check_characters(expression: &str) -> std::result::Result<(), String> {
    let Some((at, c)) = expression.char_indices().find(|(_, c)| !c.is_ascii()) else { return Ok(()) };
    let start = expression[..at].rfind(|c: char| c.is_ascii_whitespace()).map_or(0, |i| i + 1);
    let end = expression[at..].find(|c: char| c.is_ascii_whitespace()).map_or(expression.len(), |i| at + i);
    let index = expression[..start].split_ascii_whitespace().count();
    let place = match FIELDS.get(index) {
        Some(field) if !expression.starts_with('@') => format!("{} field", field.name),
        _ => "the expression".to_string(),
    };
    let token = &expression[start..end];
    let code = format!("U+{:04X}", c as u32);
    Err(if c.is_whitespace() {
        let what = if c == '\u{a0}' { "a non-breaking space" } else { "a non-ASCII space" };
        format!("{place}: `{token}` contains {what} ({code}); separate the fields with plain spaces")
    } else {
        format!("{place}: `{token}` contains `{c}` ({code}); cron uses digits, names like mon or jan, and * , - /")
    })
}

/// The fields a nickname stands for; `@reboot` and `@every` are refused with what is taken.
fn expand_nickname(nickname: &str, tokens: usize) -> std::result::Result<&'static str, String> {
    let lower = nickname.to_ascii_lowercase();
    if let Some((_, fields)) = NICKNAMES.iter().find(|(name, _)| *name == lower) {
        if tokens > 1 {
            return Err(format!("`{nickname}` stands alone; it takes no further fields"));
        }
        return Ok(fields);
    }
    let why = match lower.as_str() {
        "@reboot" => "Kennel has no start-up jobs",
        "@every" => "intervals are written as fields, like */15 * * * * for every 15 minutes",
        _ => "it is not a cron nickname",
    };
    Err(format!("`{nickname}` is not supported ({why}); use 5 fields ({FIELD_LIST}) or one of {NICKNAME_LIST}"))
}

/// One field: a comma-separated list of items, none empty.
fn normalize_field(field: &Field, text: &str) -> std::result::Result<String, String> {
    let items = text
        .split(',')
        .map(|item| {
            if item.is_empty() {
                return Err(format!("empty list item in `{text}`"));
            }
            normalize_item(field, &item.to_ascii_uppercase()).map_err(|e| format!("`{item}`: {e}"))
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok(items.join(","))
}

/// One list item: `*`, a value, a range `a-b`, either with a step (`*/15`, `8-18/2`), or
/// croner's extras (`?`, `L`, `LW`, `15W` in day-of-month; `5L`, `fri#2` in day-of-week).
fn normalize_item(field: &Field, item: &str) -> std::result::Result<String, String> {
    let (base, step) = match item.split_once('/') {
        Some((base, step)) => {
            let n = whole_number(step).filter(|n| *n >= 1).ok_or("a step must be a whole number from 1 on")?;
            if base != "*" && !base.contains('-') {
                return Err(format!(
                    "a step follows `*` or a range, like `*/{n}` or `{base}-{}/{n}`",
                    if field.day == Day::OfWeek { 6 } else { field.max }
                ));
            }
            (base, Some(n))
        }
        None => (item, None),
    };
    let base = match base {
        "*" => "*".to_string(),
        "?" if field.day != Day::No => "?".to_string(),
        _ => match base.split_once('-') {
            Some((low, high)) => {
                let low = value(field, low)?;
                let mut high = value(field, high)?;
                if field.day == Day::OfWeek && high == 0 && low > 0 {
                    high = 7; // `sat-sun`: Sunday ends a range as 7
                }
                if low > high {
                    return Err(format!("the range runs backwards; write it low-high ({low}-{high} is empty)"));
                }
                format!("{low}-{high}")
            }
            None => special(field, base).unwrap_or_else(|| value(field, base).map(|v| v.to_string()))?,
        },
    };
    Ok(match step {
        Some(n) => format!("{base}/{n}"),
        None => base,
    })
}

/// croner's day extras: `L` (last day), `LW` (last weekday), `15W` (the weekday nearest the
/// 15th) in day-of-month; `5L` (last Friday) and `5#2` (second Friday) in day-of-week.
fn special(field: &Field, base: &str) -> Option<std::result::Result<String, String>> {
    match field.day {
        Day::No => None,
        Day::OfMonth if base == "L" || base == "LW" => Some(Ok(base.to_string())),
        Day::OfMonth => {
            let day = base.strip_suffix('W')?;
            Some(value(field, day).map(|d| format!("{d}W")))
        }
        Day::OfWeek => {
            if let Some((day, nth)) = base.split_once('#') {
                return Some(value(field, day).and_then(|d| match whole_number(nth) {
                    Some(n @ 1..=5) => Ok(format!("{d}#{n}")),
                    _ => Err(format!("`#{nth}`: which occurrence in the month, 1 to 5")),
                }));
            }
            let day = base.strip_suffix('L').filter(|d| !d.is_empty())?;
            Some(value(field, day).map(|d| format!("{d}L")))
        }
    }
}

/// A number in the field's range, or (month, day-of-week) a three-letter name.
fn value(field: &Field, text: &str) -> std::result::Result<u32, String> {
    if text.is_empty() {
        return Err("a value is missing".to_string());
    }
    if let Some(n) = whole_number(text) {
        if (field.min..=field.max).contains(&n) {
            return Ok(n);
        }
        let sunday = if field.day == Day::OfWeek { ", 0 and 7 are Sunday" } else { "" };
        return Err(format!("{n} is outside {}-{}{sunday}", field.min, field.max));
    }
    if let Some(i) = field.names.iter().position(|name| *name == text) {
        return Ok(field.min + i as u32);
    }
    let names = field.names.iter().map(|n| n.to_ascii_lowercase()).collect::<Vec<_>>().join(" ");
    Err(match field.names {
        [] => format!("`{text}` is not a number ({}-{})", field.min, field.max),
        DAYS => format!("`{text}` is not a day name; use {names} (or 0-7, 0 and 7 are Sunday)"),
        _ => format!("`{text}` is not a month name; use {names} (or 1-12)"),
    })
}

fn whole_number(text: &str) -> Option<u32> {
    (!text.is_empty() && text.len() <= 4 && text.bytes().all(|b| b.is_ascii_digit())).then(|| text.parse().ok())?
}

/// Names the field croner refused (each is parsed alone, the others `*`); our own checks
/// catch nearly everything first, so this is a fallback.
fn croner_error(fields: &[String], error: croner::errors::CronError) -> String {
    let parser = CronParser::builder().seconds(Seconds::Disallowed).year(Year::Disallowed).build();
    (0..fields.len())
        .find_map(|i| {
            let alone: Vec<&str> = (0..fields.len()).map(|j| if i == j { fields[j].as_str() } else { "*" }).collect();
            parser.parse(&alone.join(" ")).err().map(|e| format!("{} field: {e}", FIELDS[i].name))
        })
        .unwrap_or_else(|| error.to_string())
}

/// Whether any date at all matches, decided without a search: a day matches or not by its
/// day of month, its month's length and the weekday the month starts on, and every month
/// occurs with every possible start weekday (and February with 28 and 29 days) within one
/// 400-year calendar cycle. So at most 12 × 2 × 7 × 31 day checks, for any expression.
fn check_fires(pattern: &CronPattern) -> std::result::Result<(), String> {
    for (i, component) in [(MINUTE, &pattern.minutes), (HOUR, &pattern.hours), (MONTH, &pattern.months)] {
        if component.values().is_empty() {
            return Err(format!("its {} field matches nothing", FIELDS[i].name));
        }
    }
    let day_matches = |year: i32, month: u32, first: u32| {
        (1..=croner::time::days_in_month(year, month)).any(|day| {
            let weekday = Weekday::from_days_from_sunday(first).shift(day as i32 - 1);
            pattern.day_match(year, month, day, weekday).unwrap_or(false)
        })
    };
    // 2001 has a 28-day February, 2000 a 29-day one; other months are the same every year.
    let fires = pattern.months.values().into_iter().any(|month| {
        let years: &[i32] = if month == 2 { &[2001, 2000] } else { &[2001] };
        years.iter().any(|&year| (0..7).any(|first| day_matches(year, u32::from(month), first)))
    });
    if fires {
        Ok(())
    } else {
        Err("no calendar date matches its day-of-month, month and day-of-week fields (like 30 February)".to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn error(expression: &str) -> String {
        parse_cron(expression, None).expect_err(expression)
    }

    /// The fires of `expression` in `tz` after `from`, up to and including `until`.
    fn fires(expression: &str, tz: &str, from: &str, until: &str) -> Vec<String> {
        let spec = parse_cron(expression, Some(tz)).unwrap();
        let mut out = Vec::new();
        let mut t = at(from);
        while let Some(next) = spec.next_after(t).filter(|n| *n <= at(until)) {
            out.push(next.to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
            t = next;
        }
        out
    }

    #[test]
    fn five_fields_are_required_and_six_get_a_hint() {
        assert!(parse_cron("*/5 * * * *", None).is_ok());
        let e = error("0 */5 * * * *");
        assert!(e.contains("6 fields") && e.contains("no seconds"), "{e}");
        let e = error("");
        assert!(e.contains("0 fields") && e.contains("empty"), "{e}");
        let e = error("61 * * * *");
        assert!(e.contains("not a valid cron expression") && e.contains("minute field") && e.contains("0-59"), "{e}");
        let e = error("0 0 30 2 *");
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
    fn empty_list_items_are_refused_naming_the_field() {
        for (expression, field) in [
            ("0 0 1, * *", "day-of-month field"),
            ("1,,2 * * * *", "minute field"),
            (",1 * * * *", "minute field"),
            (", * * * *", "minute field"),
            ("0 9 * * mon,", "day-of-week field"),
            ("0 1,,2 * * *", "hour field"),
        ] {
            let e = error(expression);
            assert!(e.contains(field) && e.contains("empty list item"), "{expression}: {e}");
        }
    }

    #[test]
    fn a_non_breaking_space_is_not_a_separator() {
        let e = error("0\u{a0}0 * * *");
        assert!(e.contains("minute field") && e.contains("non-breaking space") && e.contains("U+00A0"), "{e}");
        let e = error("0 0 * *\u{a0}*");
        assert!(e.contains("month field") && e.contains("non-breaking space"), "{e}");
        let e = error("0 0 * * *\u{2003}");
        assert!(e.contains("day-of-week field") && e.contains("non-ASCII space"), "{e}");
        let e = error("0 0 * * lün");
        assert!(e.contains("day-of-week field") && e.contains("`ü`"), "{e}");
        assert!(error("0\t0 * * *\u{a0}").contains("non-breaking"), "a trailing one too");
        assert!(parse_cron(" 0\t0 * * * ", None).is_ok(), "ASCII spaces and tabs separate fields");
    }

    #[test]
    fn nicknames_are_expanded_and_reboot_and_every_are_refused() {
        let after = at("2026-12-01T10:30:00Z"); // a Tuesday
        for (nickname, next) in [
            ("@yearly", "2027-01-01T00:00:00Z"),
            ("@annually", "2027-01-01T00:00:00Z"),
            ("@monthly", "2027-01-01T00:00:00Z"),
            ("@weekly", "2026-12-06T00:00:00Z"),
            ("@daily", "2026-12-02T00:00:00Z"),
            ("@midnight", "2026-12-02T00:00:00Z"),
            ("@hourly", "2026-12-01T11:00:00Z"),
            ("@Daily", "2026-12-02T00:00:00Z"),
        ] {
            let spec = parse_cron(nickname, None).unwrap_or_else(|e| panic!("{nickname}: {e}"));
            assert_eq!(spec.next_after(after), Some(at(next)), "{nickname}");
        }
        for refused in ["@reboot", "@every 5m", "@fortnightly"] {
            let e = error(refused);
            assert!(e.contains("not supported") && e.contains(NICKNAME_LIST), "{refused}: {e}");
        }
        assert!(error("@daily 5").contains("stands alone"));
    }

    #[test]
    fn names_are_the_three_letter_forms_and_others_get_the_list() {
        let spec = parse_cron("0 9 * Jan-MAR mon-FRI", None).unwrap();
        assert_eq!(spec.next_after(at("2027-01-02T00:00:00Z")), Some(at("2027-01-04T09:00:00Z")));
        let weekend = parse_cron("0 9 * * sat-sun", None).unwrap();
        assert_eq!(weekend.next_after(at("2027-01-04T00:00:00Z")), Some(at("2027-01-09T09:00:00Z")));
        let e = error("0 9 * * monday");
        assert!(e.contains("day-of-week field") && e.contains("sun mon tue wed thu fri sat"), "{e}");
        let e = error("0 9 * sept *");
        assert!(e.contains("month field") && e.contains("jan feb mar apr may jun jul aug sep oct nov dec"), "{e}");
        // croner replaces names anywhere in the text: a day name in the month field was January.
        let e = error("0 9 * mon *");
        assert!(e.contains("month field") && e.contains("not a month name"), "{e}");
        let e = error("x * * * *");
        assert!(e.contains("minute field") && e.contains("not a number"), "{e}");
    }

    #[test]
    fn ranges_steps_and_extras_are_checked_item_by_item() {
        for ok in
            ["0-59/15 * * * *", "0 0 L * *", "0 0 LW * *", "0 0 15W * *", "0 0 * * 5L", "0 0 * * fri#2", "0 0 ? * 1"]
        {
            assert!(parse_cron(ok, None).is_ok(), "{ok}: {:?}", parse_cron(ok, None).err());
        }
        for (bad, words) in [
            ("30-10 * * * *", "backwards"),
            ("*/0 * * * *", "step"),
            ("5/10 * * * *", "`*/10` or `5-59/10`"),
            ("0 24 * * *", "hour field"),
            ("0 0 * * 1#6", "1 to 5"),
            ("0 0 * * 8", "0 and 7 are Sunday"),
            ("0 0 1- * *", "missing"),
            ("0 ? * * *", "hour field"),
            ("0 0 * * +1", "day-of-week field"),
        ] {
            let e = error(bad);
            assert!(e.contains(words), "{bad}: {e}");
        }
    }

    #[test]
    fn never_firing_dates_are_refused_without_a_search() {
        for never in ["0 0 30 2 *", "0 0 31 4,6,9,11 *", "0 0 30W 2 *", "0 0 31 2 *"] {
            assert!(error(never).contains("never fires"), "{never}");
        }
        // Rare but real: 29 February, and a fifth Monday in February (leap years starting on one).
        let leap = parse_cron("0 0 29 2 *", None).unwrap();
        assert_eq!(leap.next_after(at("2026-12-01T00:00:00Z")), Some(at("2028-02-29T00:00:00Z")));
        let fifth = parse_cron("0 0 * 2 1#5", None).unwrap();
        assert_eq!(fifth.next_after(at("2026-12-01T00:00:00Z")), Some(at("2044-02-29T00:00:00Z")));
    }

    /// Day-of-month and day-of-week both restricted: a day matching either fires (Vixie cron,
    /// POSIX), as the README says.
    #[test]
    fn a_restricted_day_of_month_or_day_of_week_fires() {
        let spec = parse_cron("0 9 1 * mon", None).unwrap();
        let from = at("2027-01-30T00:00:00Z"); // a Saturday
        let firsts: Vec<_> = std::iter::successors(spec.next_after(from), |t| spec.next_after(*t)).take(3).collect();
        // Monday 1 February, then the Mondays after it.
        assert_eq!(firsts, vec![at("2027-02-01T09:00:00Z"), at("2027-02-08T09:00:00Z"), at("2027-02-15T09:00:00Z")]);
        let spec = parse_cron("0 9 13 * fri", None).unwrap();
        assert_eq!(
            spec.next_after(at("2027-03-06T00:00:00Z")),
            Some(at("2027-03-12T09:00:00Z")),
            "a Friday, not the 13th"
        );
        assert_eq!(
            spec.next_after(at("2027-03-12T09:00:00Z")),
            Some(at("2027-03-13T09:00:00Z")),
            "the 13th, a Saturday"
        );
    }

    // Europe/Berlin, 28 March 2027: clocks go from 02:00 CET (UTC+1) to 03:00 CEST (UTC+2) at
    // 01:00 UTC; 31 October 2027: from 03:00 CEST back to 02:00 CET at 01:00 UTC.
    const SPRING: (&str, &str) = ("2027-03-27T12:00:00Z", "2027-03-28T23:00:00Z");
    const AUTUMN: (&str, &str) = ("2027-10-30T12:00:00Z", "2027-10-31T23:00:00Z");

    #[test]
    fn fixed_times_in_a_spring_forward_gap_run_right_after_it() {
        let berlin = |e| fires(e, "Europe/Berlin", SPRING.0, SPRING.1);
        // Both slots fall in the gap: they run once, at 03:00 CEST.
        assert_eq!(berlin("0,30 2 28 3 *"), ["2027-03-28T01:00:00Z"]);
        // 02:30 falls in the gap and runs at 03:00; 03:30 is a normal slot.
        assert_eq!(berlin("30 2-3 28 3 *"), ["2027-03-28T01:00:00Z", "2027-03-28T01:30:00Z"]);
        assert_eq!(berlin("30 2 * * *"), ["2027-03-28T01:00:00Z"]);
        // 02:00 in the gap and 03:00 itself are one run.
        assert_eq!(berlin("0 2,3 * * *"), ["2027-03-28T01:00:00Z"]);
        // Wildcard and step hours follow the clock: 02:30 does not exist that day.
        assert_eq!(
            berlin("30 * 28 3 *")[..3],
            ["2027-03-27T23:30:00Z", "2027-03-28T00:30:00Z", "2027-03-28T01:30:00Z"]
        );
        assert!(berlin("*/30 2 * * *").is_empty());
    }

    #[test]
    fn fixed_times_in_a_repeated_hour_run_once() {
        let berlin = |e| fires(e, "Europe/Berlin", AUTUMN.0, AUTUMN.1);
        // 02:00 and 02:30 come twice (CEST, then CET); a fixed-time job takes the first.
        assert_eq!(berlin("0,30 2 31 10 *"), ["2027-10-31T00:00:00Z", "2027-10-31T00:30:00Z"]);
        assert_eq!(berlin("30 2 * * *"), ["2027-10-31T00:30:00Z"]);
        // A step hour runs on both passes.
        assert_eq!(
            berlin("*/30 2 * * *"),
            ["2027-10-31T00:00:00Z", "2027-10-31T00:30:00Z", "2027-10-31T01:00:00Z", "2027-10-31T01:30:00Z"]
        );
        // Asked from inside the second pass, the first pass's slots are behind.
        let spec = parse_cron("0,30 2 * * *", Some("Europe/Berlin")).unwrap();
        assert_eq!(spec.next_after(at("2027-10-31T01:10:00Z")), Some(at("2027-11-01T01:00:00Z")));
    }

    #[test]
    fn missed_slots_count_a_gap_once() {
        let spec = parse_cron("0,30 2 * * *", Some("Europe/Berlin")).unwrap();
        assert_eq!(spec.slots_between(at(SPRING.0), at(SPRING.1), 100), 1);
        assert_eq!(spec.slots_between(at(AUTUMN.0), at(AUTUMN.1), 100), 2);
    }

    /// Expressions that used to cost seconds each (croner searching to the year 5000 for a
    /// match that cannot come) and rare ones: each is settled in well under a millisecond in
    /// a release build; the budget here is loose enough for a debug build on a loaded machine.
    /// `kernel/benches/cron.rs` measures them.
    #[test]
    fn validation_is_bounded_for_slow_expressions() {
        for expression in SLOW_CORPUS {
            let started = std::time::Instant::now();
            let _ = parse_cron(expression, Some("Europe/Berlin"));
            let took = started.elapsed();
            assert!(took < std::time::Duration::from_millis(250), "{expression}: {took:?}");
        }
    }

    const SLOW_CORPUS: &[&str] = &[
        ", * * * *",
        "0 0 30 2 *",
        "0 0 31 2,4,6,9,11 *",
        "0 0 30W 2 *",
        "0 0 29 2 *",
        "0 0 * 2 1#5",
        "0,30 2 29 2 *",
        "59 23 31 12 *",
        "1,,2 * * * *",
    ];
}
