//! `/settings`: API tokens for automation.

use kennel_kernel::auth::TokenInfo;
use leptos::prelude::*;

use crate::shell::{PageMeta, Section, Shell};
use crate::widgets::{Csrf, short_time};

/// Its section of the navigation.
pub const SECTION: Section = Section::new("/settings", "Settings");

pub struct Settings {
    pub tokens: Vec<TokenInfo>,
    /// A token just created: its only showing.
    pub new_token: Option<(String, String)>,
    pub name_error: Option<String>,
}

pub fn render(meta: PageMeta, page: Settings) -> String {
    let csrf = meta.csrf.clone();
    let fresh = page.new_token.map(|(name, token)| {
        view! {
            <section class="card highlight" id="new-token">
                <h2>"Token "<code>{name.clone()}</code>" created"</h2>
                <p>"Copy it now: it is shown only this once, and only its hash is stored."</p>
                <pre class="token">{token}</pre>
            </section>
        }
    });
    let rows = page
        .tokens
        .into_iter()
        .map(|t| {
            let csrf = csrf.clone();
            let action = format!("/settings/tokens/{}/revoke", t.name);
            let confirm = format!("Revoke token {}? Whatever uses it is refused from now on.", t.name);
            view! {
                <tr>
                    <td>{t.name.clone()}</td>
                    <td>{short_time(&t.created_at)}</td>
                    <td>
                        <form method="post" action=action data-confirm=confirm>
                            <Csrf token=csrf/>
                            <button type="submit" class="danger">"Revoke"</button>
                        </form>
                    </td>
                </tr>
            }
        })
        .collect::<Vec<_>>();
    let name_error =
        page.name_error.map(|e| view! { <p class="field-error" id="name-error">{crate::widgets::rich_text(&e)}</p> });
    crate::document(
        view! {
            <Shell meta>
                <h1>"Settings"</h1>
                {fresh}
                <section class="card">
                    <h2>"API tokens"</h2>
                    <p class="hint">"Scripts send a token as "<code>"Authorization: Bearer TOKEN"</code>" to "<code>"/api/*"</code>". Revoking one refuses it at once. What each route takes and answers: "<a href="/api-reference">"the API reference"</a>"."</p>
                    <table><thead><tr><th>"Name"</th><th>"Created"</th><th></th></tr></thead><tbody>{rows}</tbody></table>
                    <form method="post" action="/settings/tokens" class="inline">
                        <Csrf token=csrf.clone()/>
                        <label>"New token named " <input type="text" name="name" required pattern="[a-z0-9_\\-]{1,64}" aria-describedby="token-name-rule"/></label>
                        <button type="submit">"Create token"</button>
                        <p class="hint" id="token-name-rule">"1 to 64 characters: lowercase letters, digits, - or _."</p>
                        {name_error}
                    </form>
                </section>
            </Shell>
        }
        .to_html(),
    )
}
