//! `/login` and `/setup`.

use leptos::prelude::*;

use crate::shell::{PageMeta, Shell};
use crate::widgets::{Csrf, IntoRendered};

pub struct SignIn {
    /// First run: the form creates the first operator.
    pub setup: bool,
    pub name: String,
    pub error: Option<String>,
    /// The page to go to once signed in (a deep link followed while signed out).
    pub next: Option<String>,
}

/// The password of the first operator: its rule said before it is sent (and checked by the
/// browser), typed twice.
fn new_password() -> impl IntoView {
    let min = kennel_kernel::auth::MIN_PASSWORD;
    view! {
        <label>
            "Password"
            <input type="password" name="password" autocomplete="new-password" minlength=min.to_string() required aria-describedby="password-rule"/>
        </label>
        <p class="hint" id="password-rule">{format!("At least {min} characters; a few words are easier to remember than symbols.")}</p>
        <label>
            "The password again"
            <input type="password" name="password_again" autocomplete="new-password" minlength=min.to_string() required/>
        </label>
    }
}

fn current_password() -> impl IntoView {
    view! {
        <label>"Password" <input type="password" name="password" autocomplete="current-password" required/></label>
    }
}

pub fn render(meta: PageMeta, page: SignIn) -> String {
    let csrf = meta.csrf.clone();
    let (heading, action, button, hint) = if page.setup {
        (
            "Create the first operator",
            "/setup",
            "Create operator",
            "Kennel has no operator yet. The operator you create here signs in to this dashboard; more can be added with ",
        )
    } else {
        ("Sign in", "/login", "Sign in", "Operators are added with ")
    };
    let command = if page.setup { "kennel operator add" } else { "kennel operator add NAME --password-stdin" };
    let next = page.next.map(|n| view! { <input type="hidden" name="next" value=n/> });
    let error = page.error.map(|e| view! { <p class="flash error" role="alert">{e}</p> });
    let meta = PageMeta { nav: None, ..meta };
    crate::document(
        view! {
            <Shell meta>
                <section class="card narrow">
                    <h1>{heading}</h1>
                    {error}
                    <form method="post" action=action class="stack">
                        <Csrf token=csrf/>
                        {next}
                        <label>"Name" <input type="text" name="name" value=page.name autocomplete="username" required/></label>
                        {if page.setup { new_password().rendered() } else { current_password().rendered() }}
                        <button type="submit">{button}</button>
                    </form>
                    <p class="hint">{hint}<code>{command}</code>"."</p>
                </section>
            </Shell>
        }
        .to_html(),
    )
}
