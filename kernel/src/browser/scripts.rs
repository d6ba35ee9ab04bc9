//! The JavaScript the browser tools run in pages. Each is a function expression the tools call
//! with JSON arguments ([`call`]), so page text never becomes script text.

use serde_json::Value;

/// Finds the element a selector names and marks it with `data-kennel-target` so the DevTools
/// side can find it again. `text=Sign in` picks a visible element whose text is that (case and
/// spacing ignored; else one that contains it), preferring links, buttons and fields, then the
/// innermost. Anything else is a CSS selector (`querySelector`; a bad one throws).
pub(super) const MARK_ELEMENT: &str = r#"(selector, marker) => {
  let el = null;
  if (selector.startsWith('text=')) {
    const want = selector.slice(5).replace(/\s+/g, ' ').trim().toLowerCase();
    if (!want) throw new Error('`text=` needs the text to look for');
    const textOf = e => (e.innerText || e.value || e.getAttribute('aria-label') || '').replace(/\s+/g, ' ').trim().toLowerCase();
    const visible = e => e.getClientRects().length > 0;
    const all = Array.from(document.querySelectorAll('body *')).filter(visible);
    const exact = all.filter(e => textOf(e) === want);
    const found = exact.length ? exact : all.filter(e => textOf(e).includes(want));
    const interactive = found.filter(e => e.matches('a,button,input,select,textarea,label,summary,[role=button],[role=link],[onclick]'));
    const pool = interactive.length ? interactive : found;
    el = pool.find(e => !pool.some(o => o !== e && e.contains(o))) || null;
  } else {
    el = document.querySelector(selector);
  }
  if (!el) return null;
  for (const old of document.querySelectorAll('[data-kennel-target]')) old.removeAttribute('data-kennel-target');
  el.setAttribute('data-kennel-target', marker);
  return { tag: el.tagName.toLowerCase(), text: (el.innerText || el.value || '').replace(/\s+/g, ' ').trim().slice(0, 120) };
}"#;

/// Removes the mark [`MARK_ELEMENT`] left.
pub(super) const UNMARK: &str = r#"() => { for (const el of document.querySelectorAll('[data-kennel-target]')) el.removeAttribute('data-kennel-target'); return null; }"#;

/// The page's text and an outline: headings, links with their absolute URLs, forms and their
/// fields (a password's or hidden field's value is never read).
pub(super) const READ_PAGE: &str = r#"(maxChars) => {
  const clean = s => (s || '').replace(/\s+/g, ' ').trim();
  const text = document.body ? document.body.innerText : '';
  const headings = Array.from(document.querySelectorAll('h1,h2,h3,h4,h5,h6')).slice(0, 200)
    .map(h => ({ level: Number(h.tagName[1]), text: clean(h.innerText).slice(0, 300) }));
  const links = Array.from(document.links).slice(0, 300)
    .map(a => ({ text: clean(a.innerText || a.getAttribute('aria-label') || a.title).slice(0, 200), url: a.href }));
  const labelOf = f => {
    if (f.id) {
      const l = document.querySelector('label[for="' + CSS.escape(f.id) + '"]');
      if (l) return clean(l.innerText);
    }
    const p = f.closest('label');
    if (p) return clean(p.innerText);
    return clean(f.getAttribute('aria-label') || f.placeholder || '');
  };
  const fieldOf = f => {
    const type = (f.type || f.tagName).toLowerCase();
    const field = { tag: f.tagName.toLowerCase(), type, name: f.name || null, id: f.id || null,
      label: labelOf(f).slice(0, 200) || null, required: !!f.required };
    if (type !== 'password' && type !== 'hidden' && typeof f.value === 'string' && f.value) field.value = f.value.slice(0, 200);
    if (f.tagName === 'SELECT') field.options = Array.from(f.options).slice(0, 50).map(o => clean(o.text));
    return field;
  };
  const forms = Array.from(document.forms).slice(0, 50).map(f => ({
    id: f.id || null, name: f.getAttribute('name'), action: f.action, method: (f.method || 'get').toLowerCase(),
    fields: Array.from(f.elements).filter(e => !['FIELDSET', 'OBJECT', 'OUTPUT'].includes(e.tagName)).slice(0, 100).map(fieldOf)
  }));
  return { url: location.href, title: document.title, text: text.slice(0, maxChars), text_chars: text.length,
    truncated: text.length > maxChars, headings, links, forms };
}"#;

/// Scrolls by `dy` pixels (`null`: to the element [`MARK_ELEMENT`] marked) and says where the
/// page now is.
pub(super) const SCROLL: &str = r#"(dy, toTop) => {
  if (toTop === true) window.scrollTo(0, 0);
  else if (toTop === false) window.scrollTo(0, document.documentElement.scrollHeight);
  else if (dy === null) {
    const el = document.querySelector('[data-kennel-target]');
    if (el) el.scrollIntoView({ block: 'center' });
  } else window.scrollBy(0, dy);
  const max = Math.max(0, document.documentElement.scrollHeight - window.innerHeight);
  return { x: Math.round(window.scrollX), y: Math.round(window.scrollY), max_y: Math.round(max), viewport_height: window.innerHeight };
}"#;

/// Whether an element matches `selector` now (a bad selector throws).
pub(super) const EXISTS: &str = r#"(selector) => document.querySelector(selector) !== null"#;

/// The page's load state and address.
/// `refused` only on the guard proxy's own page, which carries its random `nonce`.
pub(super) const STATE: &str = r#"(nonce) => { const root = document.documentElement;
  const ours = root && root.getAttribute('data-kennel-nonce') === nonce;
  return { ready: document.readyState, url: location.href, title: document.title,
    refused: ours ? root.getAttribute('data-kennel-refused') : null }; }"#;

/// A call of one of the functions above with `args`, as an expression.
pub(super) fn call(function: &str, args: &[Value]) -> String {
    let args: Vec<String> = args.iter().map(Value::to_string).collect();
    format!("({function})({})", args.join(", "))
}
