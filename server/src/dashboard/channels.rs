//! `/channels` and `/channels/{name}`: the channels service's state, conversations, rosters and
//! traffic (the same `Channels::detail` as `GET /api/channels/{name}`), and the forms that add,
//! edit and remove channels (the kernel's `save_channel` / `remove_channel`, as for
//! `PUT`/`DELETE /api/channels/{name}` and `kennel channel`).

use axum::Form;
use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use kennel_app::Flash;
use kennel_app::pages::channels::{self, ChannelForm, NewChannel};
use kennel_kernel::Kernel;
use kennel_kernel::channel::Channels;
use kennel_kernel::error::FieldError;

use super::{Operator, PageResult, field_errors, html, meta, see_other, see_other_warning};
use crate::routes::{Action, Pages, get, post};

pub fn routes() -> Pages {
    Pages::new()
        .route("/channels", get(list).post(add, Action::named("channel.add")))
        .route("/channels/{name}", get(one).post(save, Action::named("channel.save")))
        .route("/channels/{name}/remove", post(remove, Action::named("channel.remove")))
        .route("/channels/{name}/test", post(test, Action::named("channel.test")))
}

/// Messages shown each way on a channel's page.
const TRAFFIC: i64 = 50;

fn list_page(kernel: &Kernel, op: &Operator, status: StatusCode, new: NewChannel) -> Response {
    let all = kernel.service::<Channels>().list();
    let flash = (!new.errors.is_empty()).then(|| Flash::Error("The channel was not added: see below.".into()));
    html(status, channels::render_list(meta(op, "Channels", channels::SECTION, flash), all, new))
}

pub async fn list(State(kernel): State<Kernel>, Extension(op): Extension<Operator>) -> PageResult {
    Ok(list_page(&kernel, &op, StatusCode::OK, NewChannel { form: ChannelForm::default(), errors: Vec::new() }))
}

/// Adds a channel (never over one of the same name); it listens at once.
pub async fn add(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Form(fields): Form<Vec<(String, String)>>,
) -> PageResult {
    let form = ChannelForm::from_fields(&fields);
    match store(&kernel, &form, true).await {
        Ok(_) => Ok(see_other(&format!("/channels/{}", form.name), &format!("Channel `{}` added.", form.name))),
        Err((status, errors)) => Ok(list_page(&kernel, &op, status, NewChannel { form, errors })),
    }
}

/// Saves the form's channel (`must_be_new`: never over one of its name), or says why not: the
/// status to answer and the errors to show next to the form.
async fn store(kernel: &Kernel, form: &ChannelForm, must_be_new: bool) -> Result<bool, (StatusCode, Vec<FieldError>)> {
    let settings = form.to_settings().map_err(|errors| (StatusCode::UNPROCESSABLE_ENTITY, errors))?;
    kernel
        .save_channel(&form.name, settings, must_be_new)
        .await
        .map_err(|e| (crate::status::status_for(e.kind), field_errors(&e, "channel")))
}

pub async fn one(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(name): Path<String>,
) -> PageResult {
    channel_page(&kernel, &op, &name, StatusCode::OK, None).await
}

async fn channel_page(
    kernel: &Kernel,
    op: &Operator,
    name: &str,
    status: StatusCode,
    form: Option<(ChannelForm, Vec<FieldError>)>,
) -> PageResult {
    let detail = kernel.service::<Channels>().detail(name, TRAFFIC).await?;
    let title = format!("{name} · channel");
    let flash = form.as_ref().map(|_| Flash::Error("The settings were not saved: see below.".into()));
    Ok(html(
        status,
        channels::render_channel(
            meta(op, title, channels::SECTION, flash),
            detail,
            kernel.config().retention.channel_traffic_days,
            form,
        ),
    ))
}

/// Replaces a channel's settings; it listens with them at once.
pub async fn save(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(name): Path<String>,
    Form(fields): Form<Vec<(String, String)>>,
) -> PageResult {
    kernel.service::<Channels>().one(&name)?;
    let form = ChannelForm { name: name.clone(), ..ChannelForm::from_fields(&fields) };
    match store(&kernel, &form, false).await {
        Ok(_) => Ok(see_other(&format!("/channels/{name}"), "Saved: the channel listens with these settings now.")),
        Err((status, errors)) => channel_page(&kernel, &op, &name, status, Some((form, errors))).await,
    }
}

pub async fn remove(
    State(kernel): State<Kernel>,
    Extension(_): Extension<Operator>,
    Path(name): Path<String>,
) -> PageResult {
    kernel.remove_channel(&name).await?;
    Ok(see_other("/channels", &format!("Channel `{name}` removed; its conversations stay in the store.")))
}

/// "Test connection": back to the channel's page saying what the platform answered (a
/// failure as a warning).
pub async fn test(
    State(kernel): State<Kernel>,
    Extension(_): Extension<Operator>,
    Path(name): Path<String>,
) -> PageResult {
    let tested = kernel.service::<Channels>().test(&name).await?;
    let path = format!("/channels/{name}");
    Ok(if tested.ok {
        see_other(&path, &format!("Test passed in {} ms: {}.", tested.millis, tested.answer))
    } else {
        see_other_warning(&path, &format!("Test failed after {} ms: {}", tested.millis, tested.answer))
    })
}
