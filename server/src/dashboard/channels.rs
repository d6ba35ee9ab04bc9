//! `/channels` and `/channels/{name}`: the channels service's state, conversations, rosters and
//! traffic (the same `Channels::detail` as `GET /api/channels/{name}`).

use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use kennel_app::pages::channels;
use kennel_kernel::Kernel;
use kennel_kernel::channel::Channels;

use super::{Operator, PageResult, html, meta};
use crate::routes::{Pages, get};

pub fn routes() -> Pages {
    Pages::new().route("/channels", get(list)).route("/channels/{name}", get(one))
}

/// Messages shown each way on a channel's page.
const TRAFFIC: i64 = 50;

pub async fn list(State(kernel): State<Kernel>, Extension(op): Extension<Operator>) -> PageResult {
    let all = kernel.service::<Channels>().list();
    Ok(html(StatusCode::OK, channels::render_list(meta(&op, "Channels", channels::SECTION, None), all)))
}

pub async fn one(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(name): Path<String>,
) -> PageResult {
    let detail = kernel.service::<Channels>().detail(&name, TRAFFIC).await?;
    let title = format!("{name} · channel");
    Ok(html(
        StatusCode::OK,
        channels::render_channel(
            meta(&op, title, channels::SECTION, None),
            detail,
            kernel.config().retention.channel_traffic_days,
        ),
    ))
}
