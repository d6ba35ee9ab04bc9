//! An agent's workspace: the card on its page (files, upload), one file's page
//! (`/agents/{id}/files/view`) and where a file is served.

use std::sync::Arc;

use kennel_kernel::agent::Agent;
use kennel_kernel::workspace::{FileEntry, Inert, Listing};
use leptos::prelude::*;

use crate::shell::{PageMeta, Shell};
use crate::widgets::{IntoRendered, human_bytes, short_time};

/// Where a workspace file is served: inline for inert types, else as a download.
pub fn file_url(agent: &str, path: &str, download: bool) -> String {
    let query = serde_urlencoded::to_string([("path", path)]).unwrap_or_default();
    format!("/agents/{agent}/files/raw?{query}{}", if download { "&download=1" } else { "" })
}

pub(super) fn workspace_card(
    agent: &str,
    csrf: &str,
    listing: Listing,
    error: Option<String>,
) -> impl IntoView + use<> {
    let empty = listing.files.is_empty().then(|| view! { <p class="hint">"No files yet."</p> });
    let more = listing.truncated.then(|| view! { <p class="hint">{format!("Only the first {} files are listed.", kennel_kernel::workspace::MAX_LISTED)}</p> });
    let rows = listing
        .files
        .into_iter()
        .map(|f| {
            let view_url = format!(
                "/agents/{agent}/files/view?{}",
                serde_urlencoded::to_string([("path", &f.path)]).unwrap_or_default()
            );
            let download = file_url(agent, &f.path, true);
            view! {
                <tr>
                    <td><a href=view_url>{f.path.clone()}</a></td>
                    <td>{human_bytes(f.bytes)}</td>
                    <td>{short_time(&f.modified)}</td>
                    <td><a href=download download="">"Download"</a></td>
                </tr>
            }
        })
        .collect::<Vec<_>>();
    // The CSRF token is the upload's first field: the handler checks it before the file.
    let action = format!("/agents/{agent}/files");
    view! {
        <section class="card" id="workspace">
            <h2>"Workspace"</h2>
            <div class="scroll">
                <table>
                    <thead><tr><th>"File"</th><th>"Size"</th><th>"Modified"</th><th></th></tr></thead>
                    <tbody>{rows}</tbody>
                </table>
            </div>
            {empty}
            {more}
            <form method="post" action=action enctype="multipart/form-data" class="inline" id="upload-form">
                <input type="hidden" name="csrf" value=csrf.to_string()/>
                <input type="file" name="file" required aria-label="File to upload"/>
                <input type="text" name="folder" placeholder="folder (optional)" aria-label="Folder in the workspace"/>
                <button type="submit">"Upload"</button>
            </form>
            {error.map(|e| view! { <p class="field-error" id="upload-error" role="alert">{crate::widgets::rich_text(&e)}</p> })}
        </section>
    }
}

pub struct FilePage {
    pub agent: Arc<Agent>,
    pub file: FileEntry,
    pub inert: Option<Inert>,
    /// The text of a text file (valid UTF-8, not too long to show).
    pub text: Option<String>,
}

/// One workspace file: shown inline when its type is inert, else offered as a download.
pub fn render_file(meta: PageMeta, page: FilePage) -> String {
    let agent = page.agent.id.to_string();
    let f = page.file;
    let inline = file_url(&agent, &f.path, false);
    let preview = match (page.inert, page.text) {
        (Some(Inert::Image(_)), _) => view! { <img class="preview" src=inline alt=f.path.clone()/> }.rendered(),
        (Some(Inert::Audio(_)), _) => view! { <audio controls src=inline></audio> }.rendered(),
        (Some(Inert::Video(_)), _) => view! { <video class="preview" controls src=inline></video> }.rendered(),
        (Some(Inert::Text), Some(text)) => view! { <pre class="code">{text}</pre> }.rendered(),
        _ => view! { <p class="hint">"This type is not shown here (it could run as a page on the dashboard's origin): download it."</p> }.rendered(),
    };
    crate::document(
        view! {
            <Shell meta>
                <h1>{f.path.clone()}</h1>
                <p class="hint">
                    "In the workspace of "<a href=format!("/agents/{agent}#workspace")>{page.agent.name.clone()}</a>
                    {format!(" · {} · modified {}", human_bytes(f.bytes), short_time(&f.modified))}
                </p>
                <section class="card">{preview}</section>
                <p><a href=file_url(&agent, &f.path, true) download="">"Download"</a></p>
            </Shell>
        }
        .to_html(),
    )
}
