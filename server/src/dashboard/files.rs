//! An agent's workspace on its page: one file shown (`/agents/{id}/files/view?path=`), its
//! bytes (`/agents/{id}/files/raw?path=`: inline only for inert types, every other type as an
//! attachment, never sniffed), and uploads (`POST /agents/{id}/files`, multipart). Paths go
//! through the kernel's workspace service, like every path an agent gives.

use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Extension, Multipart, Path, Query, State};
use axum::http::StatusCode;
use axum::http::header::{CONTENT_DISPOSITION, CONTENT_LENGTH, CONTENT_TYPE};
use axum::response::IntoResponse;
use kennel_app::pages::agents::{self, FilePage};
use kennel_kernel::workspace::Inert;
use kennel_kernel::workspace::Workspaces;
use kennel_kernel::{Error, Kernel};
use serde::Deserialize;
use tokio::io::AsyncReadExt;

use super::agents::{Refused, agent_page};
use super::session::{UploadToken, csrf_refused};
use super::{Cursor, Notice, Operator, PageResult, html, meta, see_other};
use crate::routes::{Action, Pages, get, post};

/// Its routes: a file's page and bytes, and uploads of at most `max_file_bytes` (and room
/// for the form around the file).
pub fn routes(max_file_bytes: u64) -> Pages {
    let upload_limit = usize::try_from(max_file_bytes).unwrap_or(usize::MAX).saturating_add(64 * 1024);
    Pages::new()
        .route(
            "/agents/{id}/files",
            post(upload, Action::named("workspace.upload")).layer(DefaultBodyLimit::max(upload_limit)),
        )
        .route("/agents/{id}/files/view", get(view))
        .route("/agents/{id}/files/raw", get(raw))
}

/// The most text a file page shows inline; longer text files are downloaded.
const TEXT_SHOWN: u64 = 256 * 1024;

#[derive(Deserialize)]
pub struct FileQuery {
    path: String,
    /// Any value: serve as an attachment whatever the type.
    download: Option<String>,
}

pub async fn view(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Path(id): Path<String>,
    Query(q): Query<FileQuery>,
) -> PageResult {
    let agent = kernel.agents().get(&id)?;
    let (opened, file) = kernel.service::<Workspaces>().open(agent.id, &q.path).await?;
    let inert = Inert::of(&file.path);
    let text = match inert {
        Some(Inert::Text) if file.bytes <= TEXT_SHOWN => {
            let mut bytes = Vec::new();
            tokio::fs::File::from_std(opened).read_to_end(&mut bytes).await.map_err(Error::from)?;
            String::from_utf8(bytes).ok()
        }
        _ => None,
    };
    let title = file.path.clone();
    let page = FilePage { agent, file, inert, text };
    Ok(html(StatusCode::OK, agents::render_file(meta(&op, title, agents::SECTION, None), page)))
}

pub async fn raw(
    State(kernel): State<Kernel>,
    Extension(_): Extension<Operator>,
    Path(id): Path<String>,
    Query(q): Query<FileQuery>,
) -> PageResult {
    let agent = kernel.agents().get(&id)?;
    let (file, entry) = kernel.service::<Workspaces>().open(agent.id, &q.path).await?;
    let inline = Inert::of(&entry.path).filter(|_| q.download.is_none());
    let content_type = inline.map_or("application/octet-stream", Inert::content_type);
    let name = entry.path.rsplit('/').next().unwrap_or(&entry.path);
    let disposition = content_disposition(if inline.is_some() { "inline" } else { "attachment" }, name);
    let body = Body::from_stream(tokio_util::io::ReaderStream::new(tokio::fs::File::from_std(file)));
    let headers = [
        (CONTENT_TYPE, content_type.to_string()),
        (CONTENT_LENGTH, entry.bytes.to_string()),
        (CONTENT_DISPOSITION, disposition),
    ];
    Ok((headers, body).into_response())
}

/// `Content-Disposition` with the name as plain ASCII (for old clients) and exactly, as
/// RFC 5987 UTF-8 (`filename*`). Quotes, backslashes and control characters never reach
/// the header.
fn content_disposition(kind: &str, name: &str) -> String {
    let ascii: String =
        name.chars().map(|c| if c.is_ascii_graphic() && c != '"' && c != '\\' || c == ' ' { c } else { '_' }).collect();
    let exact: String = name
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'.' | b'-' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    format!("{kind}; filename=\"{ascii}\"; filename*=UTF-8''{exact}")
}

/// Stores an uploaded file in the agent's workspace (`folder` optional), then shows the page.
pub async fn upload(
    State(kernel): State<Kernel>,
    Extension(op): Extension<Operator>,
    Extension(token): Extension<UploadToken>,
    Path(id): Path<String>,
    mut multipart: Multipart,
) -> PageResult {
    if !token.admits(&mut multipart).await {
        return Ok(csrf_refused());
    }
    let agent = kernel.agents().get(&id)?;
    let stored = match read_upload(multipart, kernel.service::<Workspaces>().max_file_bytes()).await {
        Ok((path, bytes)) => kernel.service::<Workspaces>().write(agent.id, &path, bytes).await,
        Err(e) => Err(e),
    };
    match stored {
        Ok(file) => Ok(see_other(&format!("/agents/{}#workspace", agent.id), &format!("`{}` uploaded.", file.path))),
        Err(e) => {
            let refused = Refused { upload: Some(&e), ..Default::default() };
            agent_page(&kernel, &op, &id, (None, &Cursor::default()), refused, Notice::default()).await
        }
    }
}

/// The file's workspace path (`folder/name`) and its bytes, bounded by `max` as they arrive.
async fn read_upload(mut multipart: Multipart, max: u64) -> Result<(String, Vec<u8>), Error> {
    let bad =
        |e: axum::extract::multipart::MultipartError| Error::invalid(format!("the upload could not be read: {e}"));
    let (mut folder, mut file) = (String::new(), None);
    while let Some(mut field) = multipart.next_field().await.map_err(bad)? {
        match field.name() {
            Some("folder") => folder = field.text().await.map_err(bad)?.trim().trim_matches('/').to_string(),
            Some("file") => {
                let name = field.file_name().map(str::to_string).unwrap_or_default();
                let mut bytes = Vec::new();
                while let Some(chunk) = field.chunk().await.map_err(bad)? {
                    if (bytes.len() + chunk.len()) as u64 > max {
                        return Err(Error::invalid(format!(
                            "the file is larger than {max} bytes ([workspace] max_file_bytes)"
                        )));
                    }
                    bytes.extend_from_slice(&chunk);
                }
                file = Some((name, bytes));
            }
            _ => {}
        }
    }
    let (name, bytes) = file.ok_or_else(|| Error::invalid("choose a file to upload"))?;
    // Browsers send a bare name; some old ones a whole client path: keep its last part.
    let name = name.rsplit(['/', '\\']).next().unwrap_or_default();
    if name.is_empty() {
        return Err(Error::invalid("the file has no name"));
    }
    Ok((if folder.is_empty() { name.to_string() } else { format!("{folder}/{name}") }, bytes))
}

#[cfg(test)]
mod tests {
    use super::content_disposition;

    #[test]
    fn a_file_name_cannot_break_out_of_its_header() {
        assert_eq!(
            content_disposition("attachment", "a b.txt"),
            "attachment; filename=\"a b.txt\"; filename*=UTF-8''a%20b.txt"
        );
        let hostile = content_disposition("inline", "x\"; filename=evil.html\r\n\\é.png");
        let quoted = "inline; filename=\"x_; filename=evil.html____.png\"";
        assert_eq!(hostile, format!("{quoted}; filename*=UTF-8''x%22%3B%20filename%3Devil.html%0D%0A%5C%C3%A9.png"));
    }
}
