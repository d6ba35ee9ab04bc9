//! One-time notices: what a form's redirect tells the next page ("Agent `x` stopped."). They
//! travel in a cookie sealed for the operator's session (`Auth::seal_notice`) and read once,
//! never in the URL: `?notice=` let any link put its words in the dashboard's notice (issue 43).

use axum::extract::{FromRequestParts, Request, State};
use axum::http::header::SET_COOKIE;
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::Response;
use kennel_app::Flash;
use kennel_kernel::Kernel;

use super::Operator;
use super::session::{cookie, set_cookie};

/// The cookie a notice travels in, for the one page after a redirect.
const NOTICE_COOKIE: &str = "kennel_notice";
/// How long it waits for that page.
const NOTICE_SECS: i64 = 60;

/// A notice a redirect leaves for the next page ([`super::see_other`]); [`carry`] seals it.
#[derive(Debug, Clone)]
pub struct Pending {
    pub text: String,
    /// Shown as a warning rather than a success.
    pub warning: bool,
}

/// The first character of a sealed notice says its kind.
const WARNING: char = 'w';
const NOTICE: char = 'n';

/// The notice a page was opened with, if a redirect of this session left one.
#[derive(Debug, Default)]
pub struct Notice {
    text: Option<String>,
}

impl Notice {
    pub fn flash(self) -> Option<Flash> {
        let text = self.text?;
        let mut chars = text.chars();
        let kind = chars.next()?;
        let words = chars.as_str().to_string();
        match kind {
            _ if words.is_empty() => None,
            WARNING => Some(Flash::Warning(words)),
            _ => Some(Flash::Notice(words)),
        }
    }
}

impl FromRequestParts<Kernel> for Notice {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, kernel: &Kernel) -> Result<Notice, Self::Rejection> {
        let text = parts.extensions.get::<Operator>().and_then(|op| {
            let sealed = cookie(&parts.headers, NOTICE_COOKIE)?;
            kernel.auth().open_notice(&op.cookie, &sealed)
        });
        Ok(Notice { text })
    }
}

/// Seals a redirect's notice into the cookie for the next page, and clears a notice the request
/// brought: each is shown once.
pub async fn carry(State(kernel): State<Kernel>, req: Request, next: Next) -> Response {
    let session = req.extensions().get::<Operator>().map(|op| op.cookie.clone());
    let brought = cookie(req.headers(), NOTICE_COOKIE).is_some();
    let mut headers = axum::http::HeaderMap::new();
    if let Some(proto) = req.headers().get("x-forwarded-proto") {
        headers.insert("x-forwarded-proto", proto.clone());
    }
    let mut response = next.run(req).await;
    let pending = response.extensions().get::<Pending>().cloned();
    let value = match (pending, session) {
        (Some(Pending { text, warning }), Some(session)) => {
            let kinded = format!("{}{text}", if warning { WARNING } else { NOTICE });
            Some(set_cookie(&headers, NOTICE_COOKIE, &kernel.auth().seal_notice(&session, &kinded), NOTICE_SECS))
        }
        _ if brought => Some(set_cookie(&headers, NOTICE_COOKIE, "", 0)),
        _ => None,
    };
    if let Some(value) = value {
        response.headers_mut().append(SET_COOKIE, value);
    }
    response
}
