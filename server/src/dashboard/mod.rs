//! The operator dashboard: server-rendered pages (from `kennel-app`) and the plain HTML forms
//! that act on them. Handlers call the same kernel services as the REST API, so a form shows
//! exactly the API's validation messages.
//!
//! # Design notes
//!
//! ## The dashboard
//!
//! - **Same rules as the API:** forms call the same kernel services (`Agents::create_type`,
//!   `replace_type`, `spawn`, `grant`, `Kernel::call_tool`, `send_message`, `Auth::create_token`…);
//!   their `Error`s come back as field errors next to the input (`FieldError.field` is the input's
//!   name) with the API's status code (422, 409, 404…): the agent-type editor, spawning, posting a
//!   task (the form keeps what was typed), granting and revoking on the agent page (next to the
//!   pattern field) and on the inspector (inside the tool's row, opened), token names.
//! - **One error type:** dashboard handlers return `PageResult` (`Result<Response, PageError>`)
//!   and use `?`. An error with no form to show it next to becomes `PageError`, whose response
//!   carries the error to the `error_pages` layer (inside `require_operator`, so it knows the
//!   operator), which renders the error page in the operator's frame with the API's status.
//! - **Lists page like the API**: the same kernel services and cursors (`?cursor=`), a
//!   `widgets::Pager` under each list ("200 of 205 · Next page →", the filters kept): agents
//!   (100 a page), the task board (200; its five-second reload keeps the page it is on),
//!   schedules (200), audit (200), an agent's sessions on its page (50). An agent's page shows
//!   its first 20 schedules with a link to all of them. Number fields of forms and filters are
//!   read as typed (empty: none), so a bad one is a problem of that field, not a plain-text
//!   rejection.
//! - **Navigation is data**: each page module with a section declares it
//!   (`kennel_app::pages::tasks::SECTION`: link, label), `kennel_app::pages::SECTIONS` lists them
//!   in order, and a page's `PageMeta.nav` names its current one; signed-in pages, the error
//!   page included, show it.
//! - **The Tools inspector at eighty tools** (`pages/tools.rs`): a search box (name, family, tag,
//!   words: `tool::meta::matches_query`) and an index of the families shown with their counts;
//!   each tool is one line (`<details>`: name, description, standing) opening to its family,
//!   tags, the argument table read from its schema, and with an agent selected grant/revoke and
//!   "try it". With an agent, `?show=allowed|not_granted|denied|excluded` narrows the list to that
//!   standing (`ToolStatus::name`); excluded tools say which layer and why. A tool just tried,
//!   granted or refused comes back opened (`?open=NAME#tool-NAME`).
//! - **Sign-in (`dashboard/session.rs`, `sign_in.rs`, `site.rs`; rules in `kernel/src/auth/`):**
//!   argon2id passwords; a session cookie `kennel_session` (random, only its SHA-256 stored,
//!   `HttpOnly`, `SameSite=Strict`, `Secure` when the request came through a TLS proxy that sends
//!   `X-Forwarded-Proto: https`) lasting 12 h; sessions survive restarts. `Auth::sign_in` answers
//!   a wrong password and an unknown operator identically (same text, same argon2 work).
//!   - **Attempts are counted before argon2 runs:** an address (an IPv6 client by its /64, an
//!     IPv4-mapped one as its IPv4 address) has 5 attempts a minute; each is
//!     taken before the password is checked and given back only on success (or when no check
//!     ran), so 200 wrong passwords sent at once from one address reach argon2 5 times and the
//!     other 195 get 429 at once.
//!   - **At most `HASHING_SLOTS` (2) argon2 runs at once in the process** (each holds ~19 MiB),
//!     with `HASHING_QUEUE` (64) more waiting; beyond that a check is refused as busy
//!     (`ResourceExhausted` → 429). Every argon2 use (sign-in, the unknown-operator dummy,
//!     adding operators) goes through this one gate, and a slot stays taken until the hash ends
//!     even if the client hung up. A flood of sign-ins from many addresses therefore waits its
//!     turn instead of growing memory. The daemon also fixes glibc's mmap threshold at 1 MiB
//!     (`server/src/main.rs`), so each 19 MiB block is handed back when freed instead of
//!     pinning the heap (70 checks in a row held 550 MiB before). Measured on the debug build:
//!     a 200-request flood, from one address or from 40, peaks at 78 MiB (was 2–3 GiB).
//!   - **`/setup`** exists only while there is no operator and only for loopback clients that
//!     did not come through a proxy (`site::direct_from_this_machine`: no `Forwarded`,
//!     `X-Forwarded-*` or `X-Real-IP`; a proxy on the same machine connects from loopback for
//!     everyone); "no
//!     operator yet" and the insert are one SQL statement (`Auth::add_first_operator`), so of
//!     racing setups exactly one creates an operator and the others are sent to `/login`.
//!     `kennel operator add` adds more operators.
//!   - **Host and Origin (`dashboard/site.rs`, the `OwnSite` extractor):** `/setup` and `/login`
//!     (GET and POST) answer only a `Host` that is this daemon's listen address, `localhost`,
//!     `127.0.0.1` or `[::1]` with its port (any IP address with its port when listening on
//!     `0.0.0.0`/`[::]`), or a `[server] public_names` entry, matched exactly as written
//!     (`kennel.example.com` for the scheme's default port, `name:port` otherwise). Anything
//!     else is 403, so a DNS-rebinding page cannot set Kennel up or sign in. A request without
//!     `Origin` (curl, scripts) passes; one whose `Origin` is not `http(s)://` one of those
//!     names (or is `null`) is 403, and an `Origin` that is ours only as "any address" (listening
//!     on `0.0.0.0`) must be the very address the request went to. The `Origin` need not equal
//!     `Host` otherwise: a proxy may rewrite `Host` to the upstream address.
//!   - **Redirect targets:** a form's `back=` is followed only if it is one `/` then neither `/`
//!     nor `\`, in visible ASCII (`site::same_site_path`); otherwise the default page.
//! - **CSRF:** every protected POST passes `check_csrf`, which compares the form's `csrf` field
//!   with the session's token in constant time before any handler runs (403 otherwise). The
//!   sign-in forms, before a session exists, use a double-submit cookie (`kennel_csrf`) whose
//!   value only the daemon mints (`Auth::mint_sign_in_token`: issue time, nonce and an
//!   HMAC-SHA-256 under a key made at each start, good for an hour); a value the client chose is
//!   neither reflected nor accepted, and a restart just means reloading the form.
//! - **Hostile-text corpus test** (`tests/tests/system/hostile_text.rs`): payloads (closing tags
//!   of textarea, title, script, style, noscript; attribute breakers; `javascript:` URLs;
//!   comments; escaped text; Unicode look-alikes and controls) go into every stored field a page
//!   shows, through the API, tools, the model's replies and the forms; every page is tokenized
//!   as a browser does and may hold only the dashboard's own elements and attributes, with the
//!   payloads as text. Names (operators, agents, agent types, tokens, skills) refuse such text:
//!   the test checks the refusal page instead. **Every new page that shows stored text adds its
//!   fields and its path there.**
//! - **Security headers** (`dashboard/headers.rs`, one middleware on the whole dashboard router,
//!   sign-in pages, redirects, errors and the assets included): `Content-Security-Policy:
//!   default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; media-src 'self';
//!   frame-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors
//!   'none'` (exactly one per response: the middleware replaces any other),
//!   `X-Content-Type-Options: nosniff`, `Referrer-Policy: same-origin`, and `Cache-Control:
//!   no-store` unless a handler set its own (the assets answer `no-cache`). No page may use
//!   inline script, inline event handlers, `style=` attributes or `javascript:` URLs (the error
//!   page's "Back" is a `data-back` link `live.js` handles). The one route the dashboard frames,
//!   a canvas's HTML, marks its response with `headers::canvas_policy`, which gives it the
//!   canvas policy instead (below).
//! - **Canvases** (`dashboard/canvas.rs`, `app/src/pages/canvas.rs`). Agent HTML is hostile and
//!   is never part of a dashboard page. `/canvas/{agent}/{version}/frame` serves it alone with
//!   `Content-Security-Policy: sandbox allow-scripts; default-src 'none'; script-src
//!   'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; form-action 'none'; base-uri
//!   'none'; frame-ancestors 'self'` — the `sandbox` directive gives it an opaque origin even when
//!   opened on its own, so it reads no cookie, no dashboard DOM and cannot call the API (no
//!   `connect-src`). Pages embed it only through `widgets::CanvasFrame`: `<iframe
//!   sandbox="allow-scripts" referrerpolicy="no-referrer">`, never `allow-same-origin`,
//!   `allow-top-navigation`, `allow-forms` or `allow-popups`. An agent type with
//!   `canvas_network = true` (an operator's field: not one of the seven an agent's
//!   `agent_type_create` may set) gets `https:` for scripts, styles, images, fonts, media and
//!   connections, nothing else. The agent page shows the latest version and the last ten;
//!   `live.js` opens `/agents/{id}/canvas/live` (SSE, `event: canvas`) and swaps each new version
//!   in (titles set as text). `/canvas` lists every agent's latest, `/canvas/{agent}/{version}`
//!   one version with the agent's others (paged), and the chat shows a `canvas_present` result as
//!   a card linking to its version. **Decision:** a canvas opened on its own (not framed) can
//!   still navigate itself to a dashboard page like any link (a GET, which changes nothing and
//!   carries no CSRF token); it cannot read what it lands on.
//!   **What the CSP cannot stop** (issue 41): WebRTC sends STUN requests to any address (and
//!   the STUN host's name through DNS), and Chromium 156 did not reliably enforce CSP's
//!   `webrtc 'block'` (measured: 0 to 2 STUN packets out of the same page). So
//!   `dashboard/canvas.rs` serves every canvas after a prelude script (after its `<!doctype>`,
//!   so standards mode stays): every `RTC*` interface of the window is defined `undefined`,
//!   non-configurable; any `iframe`, `frame`, `object`, `embed`, `portal` or `fencedframe` is
//!   removed as it appears (a `MutationObserver` on the document and, through a fixed
//!   `attachShadow`, on every shadow root), since a frame gets WebRTC afresh; `setHTMLUnsafe`
//!   and `Document.parseHTMLUnsafe` (which make declarative shadow roots no observer sees)
//!   throw, and a `shadowrootmode` in the agent's own markup is renamed before serving. The
//!   response also says `X-DNS-Prefetch-Control: off` and the CSP `webrtc 'block'` (for browsers
//!   that enforce it). `end2end/tests/sandbox.spec.ts` runs the phishing canvas of the attack
//!   (directly, from a `srcdoc` frame, from frame markup, from a closed shadow root) against a
//!   UDP listener in Chromium: nothing arrives.
//! - **Workspace files** (`dashboard/files.rs`). The agent page lists the workspace (path, size,
//!   modified; at most `workspace::MAX_LISTED`), each file has a page (`/agents/{id}/files/view?path=`)
//!   that shows inert types inline — PNG, JPEG, GIF, WebP as `<img>`, audio and MP4/WebM video as
//!   players, text up to 256 KiB as escaped text — and its bytes are at
//!   `/agents/{id}/files/raw?path=`: inert types with their own `Content-Type` and
//!   `Content-Disposition: inline`, every other type (HTML, SVG, PDF, scripts, unknown) as
//!   `application/octet-stream` and `attachment`, `nosniff` on all; `&download=1` makes any an
//!   attachment. The file name in `Content-Disposition` is ASCII-only in `filename` and exact in
//!   `filename*` (RFC 5987), so no name can add a header parameter. Uploads are
//!   `multipart/form-data` posts to `/agents/{id}/files` (an optional `folder`), bounded by
//!   `[workspace] max_file_bytes` as they stream in. **Decision:** a multipart body is not read by
//!   the CSRF middleware (it would have to buffer the file). Only the routes in
//!   `session::UPLOAD_ROUTES` take multipart (any other answers 415), and their form's first field
//!   is the session's token, which the handler checks (`UploadToken::admits`, constant time)
//!   before it reads a byte of the file. The token is never in a URL, where logs and history
//!   would keep it (issue 43).
//! - **Titles** (tasks, canvases, knowledge names and types, inbox reasons) are one line and
//!   refuse Unicode's bidirectional embedding, override and isolate controls (`text::is_title`;
//!   the API schema's `text::TITLE_PATTERN`): an override would show an operator other words than
//!   the title holds. Bodies and messages keep them (right-to-left writing and quoted text need
//!   them); the dashboard shows every stored text as text.
//! - **Operator journeys (issue 14).**
//!   - *Agent types* name only providers `config.toml` defines: `Agents::validate` adds that rule
//!     to the one validator for every front (its refusal joins the others, on `provider`). The
//!     editor offers the configured providers as a choice. On save, a grant that matches no tool
//!     (`Registry::unmatched`) is a warning in the notice, not a refusal, because a dynamic
//!     provider may add the tool later.
//!   - *Agents.* A stopped agent can be started again (`Kernel::start_agent`, `POST
//!     /api/agents/{id}/start`), unless a running agent took its name (409), or deleted
//!     (archived). **Decision:** its schedules stay paused on start: stopping paused them, and
//!     which ones an operator had paused before is not recorded. A stopped agent's page has no
//!     chat box. Wherever agents are chosen, a stopped one reads `name (stopped · shortid)`
//!     (`widgets::agent_label`, `text::short_id`).
//!   - *Chat.* The dashboard opens the session before the turn (labelled `operator NAME`). A
//!     failed turn is stored with its session (`session_failures`, `Sessions::record_failure`,
//!     written by `turn::run`) and shown after the message it left unanswered. The draft comes
//!     back in the box with a Retry: `TurnRequest::retry` answers the session's last message
//!     again when it is that unanswered text, instead of storing it twice. An agent page opens
//!     its latest session; `?session=new` starts a fresh one. Sessions are named by origin from
//!     their labels (`session::Origin`, the one place the label formats live, written when a session opens
//!     and read back for the page: operator, task wake-up, schedule, trigger, agent, A2A). In non-operator sessions, user messages show their sender, not
//!     "You". Ctrl/Cmd+Enter sends.
//!   - *Reload-safe forms.* A new token is held in memory for the session that made it
//!     (`Auth::hold_reveal` / `take_reveal`) and shown once on the page after the redirect. A
//!     try-it URL opened on its own redirects to its tool.
//!   - *Confirmations.* Stopping or deleting an agent, deleting a type, revoking a token and
//!     granting a whole family carry `data-confirm`; `live.js` asks with `window.confirm`.
//!     **Decision:** without JS they post at once. The schedule deletion keeps its typed
//!     confirmation.
//!   - *Other pages and behaviour.*
//!     - Kernel messages put names in backticks; pages show those spans as `<code>`
//!       (`widgets::rich_text`), never as literal backticks.
//!     - Unknown non-API paths get an HTML 404 (`dashboard::not_found`, the router's fallback,
//!       with the security headers), and error pages are titled in words.
//!     - Following a deep link while signed out goes to `/login?next=PATH` and returns there.
//!       Only same-site paths are accepted.
//!     - The overview has a getting-started panel until the first agent exists. It shows each
//!       provider's URL and last failed call (`Provider::last_error`, cleared by a success),
//!       tasks by status, active schedules, and failed fires since midnight UTC.
//!     - At ≤ 640 px the sections fold behind a Menu (a checkbox and its label, no JS), table
//!       rows stack as cards, the board's columns stack, and controls are at least 44 px.
//!   - Filtered lists with nothing in them say so, with a "Clear filters" link
//!     (`widgets::NoMatches`).
//!   - *Applying a type to its agents* (`agent/apply.rs`, `Agents::apply_type`). Agents keep
//!     their own copy of the manifest; applying replaces every running or stopped agent's copy
//!     with the type's (a child keeps `CHILD_DENIED`). The same call previews (`dry_run`, the
//!     default): per agent, each manifest field that differs, lists (grants, skills) as gained
//!     and lost, values before and after. Applying takes the previewed `type_updated_at` and is
//!     refused (409) if the type was saved since, so nothing unseen is applied; all agents change
//!     in one transaction. Fronts: the editor's "Agents made from it" card,
//!     `/agent-types/{name}/apply` (preview + confirm), `POST /api/templates/{name}/apply`.
//!     **Decision:** `[[cron]]` blocks are not re-seeded into schedules (they are seeded once per
//!     agent, and an operator may have deleted one); the preview says so.
//!   - *Operator-action log* (`actions/`, `server/src/actions.rs`). Every state-changing request
//!     of a signed-in operator or an API token is written to `operator_actions` before it is
//!     answered: actor (`operator:NAME`, `token:NAME`, `cli`), action (`agent.stop`,
//!     `type.update`, `token.revoke`, …, declared with each state-changing route by its family
//!     (`server/src/routes.rs`: a dashboard `post` takes its `Action`, an API route lists its
//!     methods' actions, and both fronts use the same names; `Action::Unnamed` routes are
//!     recorded as `METHOD /route`, never skipped), subject (the path's id or
//!     name, or what a create's `Location` leads to), outcome (`ok`, the refusal's kind, or the
//!     status in words for a form sent back) and detail (the notice shown, or the refusal's
//!     message; both fronts leave a `Refused` on error responses). One layer on each router
//!     (inside sign-in, outside the handlers) records, so no handler does. Tool calls
//!     (`/tools/{name}/try`, `…/invoke`) and chat messages are not actions: the tool audit and the
//!     session hold them; an API dry run is marked `Unchanged`. The CLI records its own changes
//!     as `cli`. `/audit/actions` and `GET /api/audit/actions` page it; both logs take
//!     `?before=ID` in the dashboard as well as the cursor.
//!   - *Short ids.* Tasks and schedules are found by the last 8 hex digits the dashboard shows
//!     (`db::full_id`, in every `get` and action of both services, so API, dashboard and tools
//!     accept them). A short form that several ids end in is a 409 asking for the whole id; it is
//!     found by a scan, fine for operators' tables.
//!   - *Task history* merges in each wake-up of the assignee (the sessions labelled
//!     `Origin::Task`, `Sessions::of_origin`, index `sessions_label`), linked to the session;
//!     claim expiry shows as "claim expired: back to pending".
//!   - *Schedules in words*: croner's own description of the expression (`cron::in_words`),
//!     with the expression and zone beside it, and the next run in UTC and on the job's own
//!     clocks (`Schedule::next_fire_in_zone`); a fire links to its session, rows to their agent.
//!   - *Live pages* (`changes.rs`). Each pooled SQLite connection has an update hook that notes
//!     the topics of the tables a transaction writes (tasks, schedules, agents) and a commit hook
//!     that sends them on `Kernel::changes()`; a rollback forgets them. So every writer raises
//!     them with nothing to call at each write. `GET /live/changes?topics=…` streams one
//!     `change` event per burst (settled 250 ms). Pages that follow (`PageMeta.live`: the board,
//!     schedules, the overview, a task, a schedule) carry `data-live` and `data-live-url`;
//!     `live.js` reads the page again and swaps its `main`, never while a field in it has focus
//!     (it waits for the blur), keeping the notice it opened with. A change the CLI makes in another process
//!     raises no hook here; the change watcher's reload raises `agents` for it. Without JS pages are reloaded by hand.
//! - **Live chat:** `public/live.js` intercepts the chat form, opens
//!   `GET /agents/{id}/live` (the same event stream as `/api/agents/{id}/events`, behind the
//!   operator's session), posts the form, shows each model and tool call as it happens, and then
//!   follows the redirect to the session. Without JS the form posts and the page reloads.
//!
//! ## Decisions
//!
//! - **Dashboard turns are not headless** (an operator is watching); API turns are.
//! - **Notices after a form** (issue 43) never travel in the URL: `see_other` leaves the text on
//!   the redirect (`notice::Pending`), `notice::carry` seals it into the `kennel_notice` cookie
//!   (HttpOnly, SameSite=Strict, 60 s) with `Auth::seal_notice` — an HMAC under the process key
//!   over the session cookie's hash and the text — and the next page's `Notice` extractor opens
//!   it only for that session; the page's response clears the cookie, so it shows once. A link's
//!   `?notice=` is ignored. The operator-action log reads the notice from the same extension. A
//!   new API token is shown on the POST's own response only, never after a redirect and never
//!   again.
//!
//! ## Tests
//!
//! - `end2end/`: Playwright specs in Debian's Chromium against the release binary and the
//!   `fake-llm` binary (`serve.sh`), one serial browser session through setup, sign-in, CSRF,
//!   the editor, the inspector and chat; they write `docs/screenshots/`. `sandbox.spec.ts` runs
//!   after `dashboard.spec.ts` (files run in name order) and attacks the canvas sandbox from a
//!   canvas: cookies, the parent's DOM, `top.location`, `window.open`, `fetch` to the API and
//!   pages, a form post to a dashboard route, `javascript:` and `target=_top` links, a meta
//!   refresh; then an honest canvas (a counter, a drawn chart) must work. `phone-a11y.spec.ts`
//!   runs axe-core (`@axe-core/playwright`) on every page at desktop and 390 px width (0 serious
//!   or critical violations), and checks at 390 px that no page scrolls sideways, every control is
//!   at least 44 px, the Menu folds and unfolds the sections, and the board's columns fit.
//! - `tests/tests/system/workspace_canvas.rs`: `canvas_present` through the gate, versions and
//!   limits, the frame's CSP, the live feed, the chat card; uploads, downloads and their headers,
//!   and paths and links that try to leave the workspace.
//! - The dashboard's escaping and headers: `hostile_text.rs` (the hostile-text corpus through
//!   every stored field and page, read with the `html5gum` tokenizer as a browser would) and
//!   `security_headers.rs` (the headers on every route, no inline script or style on any page);
//!   `widgets.rs` has the unit test that keeps raw-text elements out of the pages.

mod agent_types;
mod agents;
mod approvals;
mod browser;
mod canvas;
mod channels;
mod cluster;
mod files;
mod headers;
mod inbox;
mod knowledge;
mod mcp;
mod memory;
mod notice;
mod pages;
mod processes;
mod providers;
mod schedules;
mod session;
mod sign_in;
pub(crate) mod site;
mod skills;
mod tasks;
mod tools;
mod usage;

use axum::Router;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::get;
use kennel_app::{Flash, PageMeta, Section};
use kennel_kernel::changes::Topic;
use kennel_kernel::page::PageRequest;
use kennel_kernel::{Error, Kernel};
use serde::Deserialize;

use crate::routes::Pages;

pub use notice::{Notice, Pending as NoticePending};
pub use session::Operator;

/// Every dashboard route. Sign-in pages and assets are open; everything else needs an
/// operator session, and every POST needs the session's CSRF token. Every response, whatever
/// answers it, gets the security headers (`headers.rs`).
pub fn router(kernel: Kernel) -> Router<Kernel> {
    let (protected, declared) = signed_in(kernel.config().workspace.max_file_bytes).into_parts();
    let protected = protected
        .layer(middleware::from_fn_with_state(
            crate::actions::Log::new(kernel.clone(), declared),
            crate::actions::record,
        ))
        .layer(middleware::from_fn_with_state(kernel.clone(), notice::carry))
        .layer(middleware::from_fn(error_pages))
        .layer(middleware::from_fn(session::check_csrf))
        .layer(middleware::from_fn_with_state(kernel, session::require_operator));
    Router::new()
        .route("/login", get(sign_in::login_page).post(sign_in::login))
        .route("/setup", get(sign_in::setup_page).post(sign_in::setup))
        .route("/style/kennel.css", get(stylesheet))
        .route("/public/live.js", get(live_js))
        .route("/public/favicon.svg", get(favicon))
        .route("/favicon.ico", get(favicon))
        .merge(protected)
        .layer(middleware::from_fn(headers::security_headers))
}

/// The pages and forms of a signed-in operator, with their actions, one line per family.
pub(crate) fn signed_in(max_file_bytes: u64) -> Pages {
    Pages::new()
        .merge(pages::routes())
        .merge(sign_in::routes())
        .merge(tools::routes())
        .merge(agent_types::routes())
        .merge(agents::routes())
        .merge(memory::routes())
        .merge(files::routes(max_file_bytes))
        .merge(canvas::routes())
        .merge(knowledge::routes())
        .merge(browser::routes())
        .merge(processes::routes())
        .merge(tasks::routes())
        .merge(schedules::routes())
        .merge(usage::routes())
        .merge(providers::routes())
        .merge(inbox::routes())
        .merge(approvals::routes())
        .merge(channels::routes())
        .merge(mcp::routes())
        .merge(skills::routes())
        .merge(cluster::routes())
}

// The assets are embedded in the binary; `no-cache` makes a browser ask again, so a new
// binary's script and styles apply at once.
async fn stylesheet() -> impl IntoResponse {
    (
        [(CONTENT_TYPE, "text/css; charset=utf-8"), (CACHE_CONTROL, "no-cache")],
        include_str!("../../../style/kennel.css"),
    )
}

/// The tab's icon: a kennel. Also at `/favicon.ico`, where browsers and tools look unasked.
async fn favicon() -> impl IntoResponse {
    ([(CONTENT_TYPE, "image/svg+xml"), (CACHE_CONTROL, "max-age=86400")], include_str!("../../../public/favicon.svg"))
}

async fn live_js() -> impl IntoResponse {
    (
        [(CONTENT_TYPE, "text/javascript; charset=utf-8"), (CACHE_CONTROL, "no-cache")],
        include_str!("../../../public/live.js"),
    )
}

/// The page frame for a signed-in operator; `nav` is its section of the navigation (`None`:
/// none is current).
pub fn meta(
    op: &Operator,
    title: impl Into<String>,
    nav: impl Into<Option<Section>>,
    flash: Option<Flash>,
) -> PageMeta {
    PageMeta {
        title: title.into(),
        nav: nav.into(),
        operator: Some(op.name.clone()),
        csrf: op.csrf.clone(),
        flash,
        unread: op.unread,
        live: None,
    }
}

/// `meta` for a page that follows `topics` and reads itself again from `url` (see
/// [`kennel_app::Live`]).
pub fn following(mut meta: PageMeta, topics: &[Topic], url: impl Into<String>) -> PageMeta {
    meta.live = Some(kennel_app::Live { topics: topics.to_vec(), url: url.into() });
    meta
}

/// 303 to `path` with a notice for the next page (sealed into a cookie by [`notice::carry`]).
pub fn see_other(path: &str, notice: &str) -> Response {
    let mut response = Redirect::to(path).into_response();
    response.extensions_mut().insert(notice::Pending { text: notice.to_string(), warning: false });
    response
}

/// Like [`see_other`], shown as a warning (not a success) with `warning` after the notice when
/// there is one.
pub fn see_other_warned(path: &str, notice: &str, warning: Option<String>) -> Response {
    let Some(warning) = warning else { return see_other(path, notice) };
    see_other_warning(path, &format!("{notice} Warning: {warning}."))
}

/// Like [`see_other`], with `warning` shown as a warning (something went wrong, nothing was
/// lost: a provider that did not answer a test).
pub fn see_other_warning(path: &str, warning: &str) -> Response {
    let mut response = Redirect::to(path).into_response();
    response.extensions_mut().insert(notice::Pending { text: warning.to_string(), warning: true });
    response
}

/// A rendered page (from `kennel_app::pages`) with a status. Never pass it other text: only the
/// page renderers escape what they show.
pub fn html(status: StatusCode, body: String) -> Response {
    (status, Html(body)).into_response()
}

/// What a page handler answers when its page cannot be shown: an error with no form to show
/// it next to. It becomes the error page, with the API's status code, in the signed-in
/// operator's frame (`error_pages` renders it), so handlers just use `?`.
pub struct PageError(pub Error);

impl From<Error> for PageError {
    fn from(e: Error) -> Self {
        PageError(e)
    }
}

/// An error on its way to [`error_pages`].
#[derive(Clone)]
struct ErrorToShow(Error);

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let mut response = crate::status::status_for(self.0.kind).into_response();
        response.extensions_mut().insert(crate::actions::Refused::of(&self.0));
        response.extensions_mut().insert(ErrorToShow(self.0));
        response
    }
}

/// What a dashboard handler returns.
pub type PageResult = Result<Response, PageError>;

/// Renders the error page for a [`PageError`], with the operator the request was made by.
async fn error_pages(req: Request, next: Next) -> Response {
    let op = req.extensions().get::<Operator>().cloned();
    let mut response = next.run(req).await;
    match (response.extensions_mut().remove::<ErrorToShow>(), op) {
        (Some(ErrorToShow(e)), Some(op)) => error_page(&op, &e),
        _ => response,
    }
}

/// An error with no form to show it next to: its own page, with the API's status code.
fn error_page(op: &Operator, e: &Error) -> Response {
    let title = kind_in_words(e.kind.as_str());
    let page = kennel_app::pages::error::render(meta(op, title.clone(), None, None), &title, &e.message);
    html(crate::status::status_for(e.kind), page)
}

/// `NotFound` → `Not found`: an error kind as a page title.
fn kind_in_words(kind: &str) -> String {
    let mut words = String::new();
    for (i, c) in kind.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            words.push(' ');
            words.extend(c.to_lowercase());
        } else {
            words.push(c);
        }
    }
    words
}

/// Any other path that is not the machine side's: a signed-in operator gets the error page in
/// the dashboard's frame, anyone else a bare one; both with the security headers. (The REST
/// API, A2A and `/.well-known` keep their JSON 404.)
pub async fn not_found(axum::extract::State(kernel): axum::extract::State<Kernel>, req: Request) -> Response {
    let path = req.uri().path().to_string();
    let machine = ["/api/", "/a2a", "/.well-known/"].iter().any(|p| path.starts_with(p)) || path == "/api";
    if machine {
        return crate::http::not_found().await.into_response();
    }
    let error = Error::not_found(format!("There is no page at {path}: it may have moved, or the link is wrong."));
    let op = session::cookie(req.headers(), session::SESSION_COOKIE).and_then(|c| {
        kernel.auth().session(&c).map(|s| Operator { name: s.operator, csrf: s.csrf, cookie: c, unread: 0 })
    });
    let mut res = match op {
        Some(op) => error_page(&op, &error),
        None => {
            let meta = PageMeta {
                title: "Not found".into(),
                nav: None,
                operator: None,
                csrf: String::new(),
                flash: None,
                unread: 0,
                live: None,
            };
            html(StatusCode::NOT_FOUND, kennel_app::pages::error::render(meta, "Not found", &error.message))
        }
    };
    headers::apply(&mut res);
    res
}

/// `?cursor=` of a paged dashboard list, and the link to its next page.
#[derive(Debug, Default, Deserialize)]
pub struct Cursor {
    cursor: Option<String>,
}

impl Cursor {
    /// Whether this is a list's first page.
    pub fn is_first(&self) -> bool {
        self.cursor.is_none()
    }

    /// The page asked for, `per_page` items long.
    pub fn page(&self, per_page: u32) -> PageRequest {
        PageRequest { cursor: self.cursor.clone(), ..PageRequest::first(per_page) }
    }

    /// This cursor, or else `before`: the logs' `?before=ID` (they list newest first, and
    /// their cursor is the last id shown, so "before 120" is where they continue).
    pub fn or_before(self, before: Option<String>) -> Cursor {
        Cursor { cursor: self.cursor.or(before.filter(|b| !b.is_empty())) }
    }
}

/// `path?filters` (the empty ones left out), and `&cursor=` when given: a list's own URL.
pub fn list_url(path: &str, filters: &[(&str, String)], cursor: Option<&str>) -> String {
    let pairs: Vec<(&str, &str)> = filters
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| (*k, v.as_str()))
        .chain(cursor.map(|c| ("cursor", c)))
        .collect();
    if pairs.is_empty() {
        return path.to_string();
    }
    format!("{path}?{}", serde_urlencoded::to_string(pairs).unwrap_or_default())
}

/// The link to a list's next page, its filters kept; `None` on the last page.
pub fn next_page(path: &str, filters: &[(&str, String)], next: Option<&str>) -> Option<String> {
    next.map(|n| list_url(path, filters, Some(n)))
}

/// Form fields for a failed validation: the kernel's field errors, or the whole message on
/// `fallback_field` (a name conflict belongs next to the name).
pub fn field_errors(e: &Error, fallback_field: &str) -> Vec<kennel_kernel::error::FieldError> {
    if e.fields.is_empty() {
        vec![kennel_kernel::error::FieldError { field: fallback_field.into(), message: e.message.clone() }]
    } else {
        e.fields.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every form's route declares what it is in the operator-action log (a name, `Logged` or
    /// `Unnamed`; `routes.rs`), so none is added without one.
    #[test]
    fn every_state_changing_route_declares_its_action() {
        let (served, declared) = signed_in(0).served();
        let changing: Vec<_> = served.into_iter().filter(|(method, _)| crate::routes::changes(method)).collect();
        for (method, path) in &changing {
            assert!(declared.declares(method, path), "{method} {path} declares no action");
        }
        assert!(changing.len() > 30, "{changing:?}");
    }
}
