//! Paging for every list: the first `limit` items after an opaque `cursor`, the cursor of the
//! next page if there is one, and how many items match in all. The REST API carries these as
//! `?limit=`/`?cursor=`, `Link: <…>; rel="next"` and `X-Total-Count`; the dashboard's lists
//! page the same way.
//!
//! A cursor is the sort key of the last item of a page (keyset paging), so a page never skips
//! or repeats an item because others were added or removed meanwhile, except in the lists
//! kept in memory in registration order (the tools), whose cursor is a position. Its text is
//! the list's business ([`Key`]); clients pass back what they were given.

use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use crate::error::{Error, FieldError, Result};

/// Items per page when the request names no limit.
pub const DEFAULT_LIMIT: u32 = 100;
/// The most items one page may hold.
pub const MAX_LIMIT: u32 = 1000;
/// The longest cursor any list hands out is far shorter than this.
const MAX_CURSOR: usize = 256;

/// `?limit=&cursor=` as they arrive.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// Items per page (default 100, at most 1000).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<u32>,
    /// Where to continue: the `cursor` of the previous page's `Link: rel="next"`. Each list
    /// documents its own cursor's form (the sort key of the last item it handed out).
    #[param(ignore)]
    pub cursor: Option<String>,
}

/// A checked page request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageRequest {
    pub limit: u32,
    pub cursor: Option<String>,
}

impl Default for PageRequest {
    fn default() -> Self {
        PageRequest { limit: DEFAULT_LIMIT, cursor: None }
    }
}

impl PageRequest {
    /// The first `limit` items (a list shown in full elsewhere, such as a page's sidebar).
    pub fn first(limit: u32) -> PageRequest {
        PageRequest { limit: limit.clamp(1, MAX_LIMIT), cursor: None }
    }

    /// `limit` one more than the page, so a fetched extra row tells there is a next page.
    pub(crate) fn fetch_limit(&self) -> i64 {
        i64::from(self.limit) + 1
    }
}

impl TryFrom<PageQuery> for PageRequest {
    type Error = Error;

    fn try_from(q: PageQuery) -> Result<PageRequest> {
        let limit = q.limit.unwrap_or(DEFAULT_LIMIT);
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(field("limit", format!("a page holds 1 to {MAX_LIMIT} items")));
        }
        if q.cursor.as_ref().is_some_and(|c| c.len() > MAX_CURSOR) {
            return Err(bad_cursor());
        }
        Ok(PageRequest { limit, cursor: q.cursor })
    }
}

/// What a list's cursor is: the sort key of the last item of a page. The API documents each
/// list's cursor with the pattern of its kind, and [`PageRequest::after`] accepts exactly
/// those, so any cursor of the right form is a place to continue from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// A name (`^[a-z0-9_-]{1,64}$`).
    Name,
    /// An id (a UUID in lower-case hex with hyphens).
    Id,
    /// A position in a list kept in memory (`^[0-9]{6}$`).
    Position,
    /// A row number (`^[0-9]{1,18}$`).
    Number,
    /// A task's priority and id (`PRIORITY:ID`).
    PriorityId,
}

// Each kind of cursor's schema, for the API's documents (parameters take them `inline`): the
// one place each pattern is written, tested against `Key::fits`. A name's is `agent::Name`.

/// The last item's id.
#[derive(ToSchema)]
#[schema(pattern = r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")]
#[allow(dead_code)]
pub struct IdCursor(String);

/// The last item's position.
#[derive(ToSchema)]
#[schema(pattern = r"^[0-9]{6}$")]
#[allow(dead_code)]
pub struct PositionCursor(String);

/// The last item's row number.
#[derive(ToSchema)]
#[schema(pattern = r"^[0-9]{1,18}$")]
#[allow(dead_code)]
pub struct NumberCursor(String);

/// The last task's priority and id.
#[derive(ToSchema)]
#[schema(pattern = r"^[0-9]:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")]
#[allow(dead_code)]
pub struct PriorityIdCursor(String);

impl Key {
    fn fits(self, cursor: &str) -> bool {
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        match self {
            Key::Name => crate::agent::is_valid_name(cursor),
            Key::Id => is_id(cursor),
            Key::Position => cursor.len() == 6 && digits(cursor),
            Key::Number => cursor.len() <= 18 && digits(cursor),
            Key::PriorityId => cursor.split_once(':').is_some_and(|(p, id)| p.len() == 1 && digits(p) && is_id(id)),
        }
    }
}

/// A UUID as ids are written: 8-4-4-4-12 lower-case hex digits.
fn is_id(text: &str) -> bool {
    text.len() == 36
        && text.bytes().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_digit() || (b'a'..=b'f').contains(&b),
        })
}

impl PageRequest {
    /// The cursor, if one was given, checked to be a `key` (refused otherwise).
    pub fn after(&self, key: Key) -> Result<Option<&str>> {
        match self.cursor.as_deref() {
            Some(cursor) if !key.fits(cursor) => Err(bad_cursor()),
            other => Ok(other),
        }
    }
}

/// The refusal for a cursor this list did not hand out.
pub fn bad_cursor() -> Error {
    field("cursor", "not a cursor this list handed out: start again without one")
}

fn field(name: &str, message: impl Into<String>) -> Error {
    Error::invalid_fields(vec![FieldError { field: name.into(), message: message.into() }])
}

/// One page of a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T> {
    pub items: Vec<T>,
    /// The cursor of the next page; `None` on the last.
    pub next: Option<String>,
    /// Items matching the list's filter on every page together.
    pub total: u64,
}

impl<T> Page<T> {
    /// A page from rows fetched with [`PageRequest::fetch_limit`]: an extra row means there is
    /// a next page, which starts after the last item kept.
    pub fn from_rows(mut rows: Vec<T>, request: &PageRequest, total: u64, key: impl Fn(&T) -> String) -> Page<T> {
        let more = rows.len() > request.limit as usize;
        rows.truncate(request.limit as usize);
        let next = if more { rows.last().map(key) } else { None };
        Page { items: rows, next, total }
    }

    /// A page of an in-memory list already in order of `key`: the items after `after`.
    pub fn of_sorted(items: Vec<T>, request: &PageRequest, after: Option<&str>, key: impl Fn(&T) -> String) -> Page<T> {
        let total = items.len() as u64;
        let start = match after {
            Some(cursor) => items.iter().position(|i| *key(i) > *cursor).unwrap_or(items.len()),
            None => 0,
        };
        let rows: Vec<T> = items.into_iter().skip(start).take(request.limit as usize + 1).collect();
        Page::from_rows(rows, request, total, key)
    }

    pub fn map<U>(self, f: impl FnMut(T) -> U) -> Page<U> {
        Page { items: self.items.into_iter().map(f).collect(), next: self.next, total: self.total }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(limit: Option<u32>, cursor: Option<&str>) -> Result<PageRequest> {
        PageRequest::try_from(PageQuery { limit, cursor: cursor.map(str::to_string) })
    }

    #[test]
    fn limits_outside_one_to_a_thousand_are_refused_naming_the_parameter() {
        for bad in [0, 1001, u32::MAX] {
            let e = request(Some(bad), None).unwrap_err();
            assert_eq!(e.fields[0].field, "limit", "{e}");
        }
        assert_eq!(request(None, None).unwrap().limit, DEFAULT_LIMIT);
        assert_eq!(request(Some(1000), None).unwrap(), PageRequest { limit: 1000, cursor: None });
    }

    /// What the API documents of each cursor is what `Key::fits` accepts.
    #[test]
    fn each_keys_documented_pattern_accepts_exactly_what_the_key_fits() {
        fn pattern<T: utoipa::PartialSchema>() -> regex::Regex {
            let schema = serde_json::to_value(T::schema()).unwrap();
            regex::Regex::new(schema["pattern"].as_str().expect("a pattern")).unwrap()
        }
        let id = "01a230b9-26bc-7268-b5eb-8bd4615050fa";
        let keys = [
            (Key::Name, pattern::<crate::agent::Name>()),
            (Key::Id, pattern::<IdCursor>()),
            (Key::Position, pattern::<PositionCursor>()),
            (Key::Number, pattern::<NumberCursor>()),
            (Key::PriorityId, pattern::<PriorityIdCursor>()),
        ];
        let samples = [
            "reporter",
            "a_b-c",
            "",
            "Upper",
            &"x".repeat(64),
            &"x".repeat(65),
            id,
            &id.to_uppercase(),
            "000042",
            "00042",
            "123456789012345678",
            "1234567890123456789",
            "2:01a230b9-26bc-7268-b5eb-8bd4615050fa",
            "12:01a230b9-26bc-7268-b5eb-8bd4615050fa",
            "0",
            "é",
            "a b",
        ];
        for (key, documented) in &keys {
            for sample in samples {
                assert_eq!(key.fits(sample), documented.is_match(sample), "{key:?} on {sample:?}");
            }
        }
    }

    #[test]
    fn a_cursor_must_have_the_form_of_its_lists_key() {
        let id = "01a230b9-26bc-7268-b5eb-8bd4615050fa";
        let cases = [
            (Key::Name, "reporter", true),
            (Key::Name, "", false),
            (Key::Id, id, true),
            (Key::Id, &id.to_uppercase(), false),
            (Key::Position, "000012", true),
            (Key::Position, "12", false),
            (Key::Number, "123", true),
            (Key::Number, "0.5", false),
            (Key::PriorityId, &format!("5:{id}"), true),
            (Key::PriorityId, &format!("10:{id}"), false),
        ];
        for (key, cursor, fits) in cases {
            let req = PageRequest { limit: 10, cursor: Some(cursor.to_string()) };
            assert_eq!(req.after(key).is_ok(), fits, "{key:?} {cursor:?}");
        }
        assert_eq!(PageRequest::default().after(Key::Id).unwrap(), None);
    }

    #[test]
    fn in_memory_pages_follow_each_other_without_gaps_or_repeats() {
        let names: Vec<String> = (0..7).map(|i| format!("n{i}")).collect();
        let mut seen = Vec::new();
        let mut cursor = None;
        loop {
            let req = PageRequest { limit: 3, cursor: cursor.clone() };
            let page = Page::of_sorted(names.clone(), &req, req.cursor.as_deref(), |n| n.clone());
            assert_eq!(page.total, 7);
            seen.extend(page.items);
            match page.next {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        assert_eq!(seen, names);
    }

    #[test]
    fn a_page_that_ends_the_list_has_no_next_cursor() {
        let req = PageRequest { limit: 3, cursor: None };
        assert_eq!(Page::from_rows(vec![1, 2, 3], &req, 3, |n| n.to_string()).next, None);
        assert_eq!(Page::from_rows(vec![1, 2, 3, 4], &req, 4, |n| n.to_string()).next, Some("3".into()));
    }
}
