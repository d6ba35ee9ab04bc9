//! `/providers/…`: adding, editing and removing LLM providers from the dashboard, through the
//! kernel's `save_provider` / `remove_provider` (the API's and the CLI's path too).

use axum::Form;
use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use kennel_app::pages::providers::{ProviderForm, ProviderPage};
use kennel_app::pages::{overview, providers};
use kennel_kernel::error::ErrorKind;
use kennel_kernel::llm::{ProviderConfig, ProviderInfo};
use kennel_kernel::{Error, Kernel};

use super::{Notice, Operator, PageResult, html, meta, see_other};
use crate::routes::{Action, Pages, get, post};

pub fn routes() -> Pages {
    Pages::new()
        .route("/providers", get(new_page).post(add, Action::named("provider.save")))
        .route("/providers/{name}", get(edit_page).post(save, Action::named("provider.save")))
        .route("/providers/{name}/remove", post(remove, Action::named("provider.remove")))
}

fn page(op: &Operator, status: StatusCode, page: ProviderPage, n: Option<Notice>) -> PageResult {
    let title = match &page.info {
        Some(i) => format!("Provider {}", i.name),
        None => "New provider".into(),
    };
    let flash = n.and_then(|n| n.flash());
    Ok(html(status, providers::render(meta(op, title, overview::SECTION, flash), page)))
}

pub async fn new_page(Extension(op): Extension<Operator>) -> PageResult {
    let empty = ProviderPage { info: None, form: ProviderForm::default(), error: None, errors: Vec::new() };
    page(&op, StatusCode::OK, empty, None)
}

pub async fn edit_page(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(name): Path<String>,
    n: Notice,
) -> PageResult {
    let info = kernel.provider_info(&name)?;
    let form = ProviderForm::of(&info);
    page(&op, StatusCode::OK, ProviderPage { info: Some(info), form, error: None, errors: Vec::new() }, Some(n))
}

/// "Add provider": refused for a name already used (`Kernel::add_provider`), so a new provider
/// never overwrites one.
pub async fn add(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Form(fields): Form<Vec<(String, String)>>,
) -> PageResult {
    let form = ProviderForm::from_fields(&fields);
    store(&kernel, &op, None, form).await
}

pub async fn save(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(name): Path<String>,
    Form(fields): Form<Vec<(String, String)>>,
) -> PageResult {
    let info = kernel.provider_info(&name)?;
    let form = ProviderForm { name, ..ProviderForm::from_fields(&fields) };
    store(&kernel, &op, Some(info), form).await
}

async fn store(kernel: &Kernel, op: &Operator, info: Option<ProviderInfo>, form: ProviderForm) -> PageResult {
    let saved = match kennel_kernel::error::from_value::<ProviderConfig>(form.to_json()) {
        // A new one never overwrites one of its name; an existing one is replaced.
        Ok(settings) if info.is_none() => kernel.add_provider(&form.name, settings, form.make_default).await,
        Ok(settings) => kernel.save_provider(&form.name, settings, form.make_default).await,
        Err(e) => Err(e),
    };
    match saved {
        Ok(saved) => {
            let mut notice = format!(
                "Provider `{}` {}: the next model call uses it.",
                saved.name,
                if saved.created { "added" } else { "saved" }
            );
            if let Some(default) = saved.default_set.filter(|d| *d != saved.name) {
                notice += &format!(" `{default}` is now the default provider, as it was for agents naming none.");
            }
            Ok(see_other(&format!("/providers/{}", saved.name), &notice))
        }
        Err(e) => refused(kernel, op, info, form, e),
    }
}

/// The form again, as typed, with why it was refused.
fn refused(kernel: &Kernel, op: &Operator, info: Option<ProviderInfo>, form: ProviderForm, e: Error) -> PageResult {
    if e.kind == ErrorKind::Internal {
        return Err(e.into());
    }
    let status = crate::status::status_for(e.kind);
    let info = info.and_then(|i| kernel.provider_info(&i.name).ok());
    let why = crate::actions::Refused::of(&e);
    let mut response = page(op, status, ProviderPage { info, form, error: Some(e.message), errors: e.fields }, None)?;
    response.extensions_mut().insert(why);
    Ok(response)
}

pub async fn remove(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(name): Path<String>,
) -> PageResult {
    match kernel.remove_provider(&name).await {
        Ok(()) => Ok(see_other("/#providers", &format!("Provider `{name}` removed from config.toml."))),
        Err(e) if e.kind == ErrorKind::NotFound => Err(e.into()),
        Err(e) => {
            let info = kernel.provider_info(&name)?;
            let form = ProviderForm::of(&info);
            refused(&kernel, &op, Some(info), form, e)
        }
    }
}
