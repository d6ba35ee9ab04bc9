//! Markdown as the dashboard shows it: a model's replies, skill bodies, task results and
//! owner-inbox notes are written in Markdown, and an operator reads them rendered.
//!
//! # Design notes
//!
//! - **Safe by construction, not by cleaning.** `pulldown-cmark` parses and writes the HTML of
//!   every element it knows (escaping text and attributes); the two ways text could become
//!   markup are closed before it writes: raw HTML (blocks and inline) is turned back into text,
//!   so a script tag in a reply reads as the tag's text; and links are written here, with their
//!   address checked (`http`, `https`, `mailto`, or a path on this site) and
//!   `rel="noopener noreferrer"`. Any other address (`javascript:`, `data:`, `//host`) leaves
//!   the link's words as plain text. Images are not loaded (a reply must not make the
//!   operator's browser fetch from a stranger's server): an image is a link to its address.
//!   An HTML sanitiser (ammonia with html5ever) would re-parse what we just wrote, and costs
//!   more than the binary budget has left (docs/BENCHMARKS.md, "Markdown").
//! - Headings start at `<h3>`: a reply sits under the page's own `<h1>` and `<h2>`.
//! - The output is inserted as HTML by `widgets::Markdown`, the only component that
//!   does; `tests/tests/system/hostile_text.rs` reads every page that shows it.

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd, html};

/// `text` read as Markdown (CommonMark with tables, strikethrough and task lists), as HTML
/// that holds no markup but what the renderer made.
pub fn to_html(text: &str) -> String {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut links = LinkStack::default();
    let events = Parser::new_ext(text, options).filter_map(|event| links.render(event));
    let mut out = String::with_capacity(text.len() + text.len() / 4);
    html::push_html(&mut out, events);
    out
}

/// The links (and images) open at this point, and whether each was written as a link: an
/// image inside a link is not (anchors do not nest), nor an address we refuse.
#[derive(Default)]
struct LinkStack {
    open: Vec<bool>,
}

impl LinkStack {
    fn render<'a>(&mut self, event: Event<'a>) -> Option<Event<'a>> {
        Some(match event {
            Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
            Event::Start(Tag::Link { dest_url, title, .. }) => {
                return self.open_link(&dest_url, &title).map(|tag| Event::InlineHtml(tag.into()));
            }
            // The alt text follows as the link's words; they say what it was.
            Event::Start(Tag::Image { dest_url, title, .. }) => {
                return self.open_link(&dest_url, &title).map(|tag| Event::InlineHtml(format!("{tag}image: ").into()));
            }
            Event::End(TagEnd::Link | TagEnd::Image) => {
                return self.open.pop().filter(|written| *written).map(|_| Event::InlineHtml("</a>".into()));
            }
            Event::Start(Tag::Heading { level, .. }) => {
                Event::Start(Tag::Heading { level: shifted(level), id: None, classes: Vec::new(), attrs: Vec::new() })
            }
            Event::End(TagEnd::Heading(level)) => Event::End(TagEnd::Heading(shifted(level))),
            other => other,
        })
    }

    /// The opening tag of a link to `address`, or nothing when it is refused or inside
    /// another link (its words then read as plain text).
    fn open_link(&mut self, address: &str, title: &str) -> Option<String> {
        let written = !self.open.contains(&true) && allowed(address);
        self.open.push(written);
        written.then(|| {
            let href = html_escape::encode_double_quoted_attribute(address);
            let title = match title {
                "" => String::new(),
                title => format!(" title=\"{}\"", html_escape::encode_double_quoted_attribute(title)),
            };
            format!("<a href=\"{href}\"{title} rel=\"noopener noreferrer\">")
        })
    }
}

/// A heading two levels down, `<h6>` at most.
fn shifted(level: HeadingLevel) -> HeadingLevel {
    match level {
        HeadingLevel::H1 => HeadingLevel::H3,
        HeadingLevel::H2 => HeadingLevel::H4,
        HeadingLevel::H3 => HeadingLevel::H5,
        _ => HeadingLevel::H6,
    }
}

/// Whether a link may point at `address`: the web, mail, or a path or fragment of this site.
/// A scheme is what precedes the first `:` when no `/`, `?` or `#` comes before it (as a
/// browser reads it; control characters and spaces, which browsers strip, are refused).
fn allowed(address: &str) -> bool {
    if address.chars().any(|c| c.is_control() || c.is_whitespace()) || address.starts_with("//") {
        return false;
    }
    let scheme_end = address.find([':', '/', '?', '#']);
    match scheme_end {
        Some(i) if address[i..].starts_with(':') => {
            let scheme = address[..i].to_ascii_lowercase();
            ["http", "https", "mailto"].contains(&scheme.as_str())
        }
        // No scheme: a path on this site (relative or absolute), a query or a fragment.
        _ => !address.is_empty(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_common_elements_are_rendered() {
        let html = to_html(
            "# Title\n\nSome *em* and **strong** and `code` and ~~gone~~.\n\n- one\n- [x] done\n\n\
             | a | b |\n|---|---|\n| 1 | 2 |\n\n```rust\nfn main() {}\n```\n\n> quoted\n",
        );
        for part in [
            "<h3>Title</h3>",
            "<em>em</em>",
            "<strong>strong</strong>",
            "<code>code</code>",
            "<del>gone</del>",
            "<li>one</li>",
            "checked=\"\"",
            "<table>",
            "<td>2</td>",
            "<pre><code class=\"language-rust\">fn main() {}",
            "<blockquote>",
        ] {
            assert!(html.contains(part), "{part} in {html}");
        }
    }

    #[test]
    fn raw_html_is_shown_as_text() {
        let html = to_html("<script>alert(1)</script>\n\nand <img src=x onerror=alert(2)> inline <b>bold</b>");
        assert!(!html.contains("<script") && !html.contains("<img") && !html.contains("<b>"), "{html}");
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{html}");
        assert!(html.contains("&lt;img src=x onerror=alert(2)&gt;"), "{html}");
    }

    #[test]
    fn links_to_the_web_open_without_the_opener_and_others_stay_words() {
        let web = to_html("[docs](https://example.com/a?b=1&c=\"2\" \"the \\\"title\\\"\")");
        assert!(
            web.contains(
                "<a href=\"https://example.com/a?b=1&amp;c=&quot;2&quot;\" title=\"the &quot;title&quot;\" rel=\"noopener noreferrer\">docs</a>"
            ),
            "{web}"
        );
        for refused in [
            "[x](javascript:alert(1))",
            "[x](JavaScript:alert(1))",
            "[x](<java\tscript:alert(1)>)",
            "[x](java&#x09;script:alert(1))",
            "[x](data:text/html,hi)",
            "[x](//evil.example/x)",
            "[x](vbscript:msgbox)",
            "<javascript:alert(1)>",
        ] {
            let html = to_html(refused);
            assert!(!html.contains("<a"), "{refused}: {html}");
        }
        assert!(to_html("[x](/tasks?id=1#top)").contains("<a href=\"/tasks?id=1#top\""));
        assert!(to_html("<mailto:ops@example.com>").contains("href=\"mailto:ops@example.com\""));
    }

    #[test]
    fn an_image_is_a_link_to_it_and_never_loaded() {
        let html = to_html("![a cat](https://example.com/cat.png) and [![inner](https://x/y.png)](https://z/)");
        assert!(!html.contains("<img"), "{html}");
        assert!(html.contains("<a href=\"https://example.com/cat.png\" rel=\"noopener noreferrer\">image: a cat</a>"));
        assert_eq!(html.matches("<a ").count(), 2, "no anchor inside another: {html}");
        assert_eq!(html.matches("</a>").count(), 2, "{html}");
    }
}
