//! `/api/questions`: what agents' `ask_user` calls wait on in chats (the dashboard's, `kennel
//! chat`), and their answers. A question asked on a channel is answered there, not here.

use crate::routes::api;
use axum::Json;
use axum::extract::{Extension, Path, State};
use axum::http::Method;
use kennel_kernel::Kernel;
use kennel_kernel::ask::{Question, Questions};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use super::auth::Bearer;
use super::body::{JsonBody, QueryParams};
use super::error::ApiResult;
use crate::routes::{Action, Api};

pub fn routes() -> Api {
    Api::new().route(api!(waiting_questions), &[]).route(api!(answer_question), &[(Method::POST, Action::Logged)])
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct QuestionFilter {
    /// Only this agent's (its id or a running agent's name).
    agent: Option<String>,
}

/// The questions turns are waiting on, oldest first.
#[utoipa::path(get, path = "/api/questions", tag = "questions", params(QuestionFilter),
    responses((status = 200, description = "Waiting questions", body = Vec<Question>),
        (status = 422, description = "No such agent")))]
async fn waiting_questions(
    State(kernel): State<Kernel>,
    QueryParams(filter): QueryParams<QuestionFilter>,
) -> ApiResult<Json<Vec<Question>>> {
    let agent = match filter.agent {
        Some(a) => Some(kernel.agents().get(&a).map_err(|e| e.on_field("agent"))?.id),
        None => None,
    };
    Ok(Json(kernel.service::<Questions>().waiting(agent).await?))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct AnswerBody {
    /// The answer: one of the question's choices, or any text (at most 4,000 characters).
    #[schema(min_length = 1, max_length = 4000)]
    answer: String,
}

/// Answers a waiting question; its turn goes on with the answer.
#[utoipa::path(post, path = "/api/questions/{id}/answer", tag = "questions",
    params(("id" = String, Path, description = "The question's id")),
    request_body = AnswerBody,
    responses((status = 200, description = "The question answered", body = Question),
        (status = 404, description = "No such question is waiting (answered, timed out, or its turn ended)"),
        (status = 409, description = "It was asked on a channel: the person there answers it"),
        (status = 422, description = "An empty or too long answer")))]
async fn answer_question(
    State(kernel): State<Kernel>,
    Extension(Bearer(caller)): Extension<Bearer>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<AnswerBody>,
) -> ApiResult<Json<Question>> {
    Ok(Json(kernel.service::<Questions>().answer(&id, &body.answer, &caller.audit_label()).await?))
}
