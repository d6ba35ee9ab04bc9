//! The images tool results carry ([`crate::llm::ToolImage`]): which result names one, and
//! reading those a model call sends from the agent's workspace. Anything wrong with an image
//! (gone, too large, not a type the providers take) sends its result as text with the
//! image's path, never fails the call.

use std::io::Read;

use base64::Engine;
use serde_json::Value;
use uuid::Uuid;

use crate::llm::{LoadedImage, LoadedImages, Message, ToolImage};
use crate::workspace::Workspaces;

/// The largest image sent: Anthropic takes at most 5 MB per image, counted on its base64 text
/// (4/3 of the file); a larger one goes as its path.
pub const MAX_IMAGE_BYTES: u64 = 3_750_000;

/// The longest side sent (Anthropic refuses images over 8,000 px; a tall full-page screenshot
/// is one): a longer one goes as its path, or every later call of the session would fail.
pub const MAX_IMAGE_SIDE: u32 = 8_000;

/// The types both wire protocols take as images.
const SENDABLE: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp"];

/// The image a successful result of a tool marked `returns_image` names: a string `path`
/// that is a workspace path and a string `media_type` starting with `image/`. A result
/// without them (a spill placeholder, say) names none.
pub(super) fn named_by(result: &Value) -> Option<ToolImage> {
    let path = result.get("path")?.as_str()?;
    let media_type = result.get("media_type")?.as_str()?;
    if !media_type.starts_with("image/") || crate::workspace::check_relative(path).is_err() {
        return None;
    }
    Some(ToolImage { path: path.to_string(), media_type: media_type.to_string() })
}

/// Reads the images `messages` sends to a model that takes them ([`super::context::images_to_send`])
/// from `agent`'s workspace; those that cannot be sent are left out (their results go as text).
pub(super) async fn load(workspaces: &Workspaces, agent: Uuid, messages: &[Message]) -> LoadedImages {
    let mut loaded = LoadedImages::new();
    for (call_id, image) in super::context::images_to_send(messages) {
        if let Some(image) = read(workspaces, agent, image).await {
            loaded.insert(call_id.to_string(), image);
        }
    }
    loaded
}

async fn read(workspaces: &Workspaces, agent: Uuid, image: &ToolImage) -> Option<LoadedImage> {
    if !SENDABLE.contains(&image.media_type.as_str()) {
        tracing::info!(path = %image.path, media_type = %image.media_type, "a tool result's image is of a type not sent to models");
        return None;
    }
    let (file, entry) = match workspaces.open(agent, &image.path).await {
        Ok(opened) => opened,
        Err(e) => {
            tracing::info!(path = %image.path, error = %e.message, "a tool result's image cannot be read; its path is sent");
            return None;
        }
    };
    if entry.bytes > MAX_IMAGE_BYTES {
        tracing::info!(path = %image.path, bytes = entry.bytes, "a tool result's image is over 3.75 MB; its path is sent");
        return None;
    }
    let bytes = tokio::task::spawn_blocking(move || {
        let mut bytes = Vec::with_capacity(entry.bytes as usize);
        // Bounded again: the file may have grown since it was measured.
        file.take(MAX_IMAGE_BYTES + 1).read_to_end(&mut bytes).map(|_| bytes)
    })
    .await
    .ok()?
    .ok()
    .filter(|b| b.len() as u64 <= MAX_IMAGE_BYTES)?;
    if let Some((width, height)) = png_size(&bytes)
        && width.max(height) > MAX_IMAGE_SIDE
    {
        tracing::info!(path = %image.path, width, height, "a tool result's image is over 8,000 px on a side; its path is sent");
        return None;
    }
    Some(LoadedImage {
        media_type: image.media_type.clone(),
        base64: base64::engine::general_purpose::STANDARD.encode(bytes),
    })
}

/// Width and height from a PNG's header (other types: not read).
pub(crate) fn png_size(png: &[u8]) -> Option<(u32, u32)> {
    if png.len() < 24 || &png[..8] != b"\x89PNG\r\n\x1a\n" {
        return None;
    }
    let width = u32::from_be_bytes(png[16..20].try_into().ok()?);
    let height = u32::from_be_bytes(png[20..24].try_into().ok()?);
    Some((width, height))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_result_names_an_image_by_a_workspace_path_and_an_image_type() {
        let named = named_by(&json!({"path": "screenshots/a.png", "media_type": "image/png", "bytes": 3}));
        assert_eq!(named, Some(ToolImage { path: "screenshots/a.png".into(), media_type: "image/png".into() }));
        for none in [
            json!({"path": "a.png"}),
            json!({"path": "a.txt", "media_type": "text/plain"}),
            json!({"path": "../a.png", "media_type": "image/png"}),
            json!({"path": "/etc/a.png", "media_type": "image/png"}),
            json!({"path": 1, "media_type": "image/png"}),
            json!({"spilled": true, "artifact_id": "x", "preview": "…"}),
            json!("a.png"),
        ] {
            assert_eq!(named_by(&none), None, "{none}");
        }
    }

    #[tokio::test]
    async fn images_are_read_bounded_and_missing_or_large_ones_left_out() {
        let home = tempfile::tempdir().unwrap();
        let ws = Workspaces::new(
            home.path().join("workspaces"),
            crate::workspace::WorkspaceConfig { max_file_bytes: 64 * 1024 * 1024, ..Default::default() },
        );
        let agent = Uuid::now_v7();
        ws.write(agent, "a.png", b"png bytes".to_vec()).await.unwrap();
        ws.write(agent, "big.png", vec![0; MAX_IMAGE_BYTES as usize + 1]).await.unwrap();
        ws.write(agent, "b.svg", b"<svg/>".to_vec()).await.unwrap();
        let tool = |id: &str, path: &str, media_type: &str| Message::Tool {
            call_id: id.into(),
            name: "shot".into(),
            content: "{}".into(),
            is_error: false,
            image: Some(ToolImage { path: path.into(), media_type: media_type.into() }),
        };
        let messages = [
            tool("ok", "a.png", "image/png"),
            tool("big", "big.png", "image/png"),
            tool("gone", "deleted.png", "image/png"),
            tool("svg", "b.svg", "image/svg+xml"),
        ];
        let loaded = load(&ws, agent, &messages).await;
        assert!(loaded.is_empty(), "the first is not among the last three: {loaded:?}");
        let loaded = load(&ws, agent, &messages[..3]).await;
        assert_eq!(loaded.len(), 1, "{loaded:?}");
        assert_eq!(loaded["ok"], LoadedImage { media_type: "image/png".into(), base64: "cG5nIGJ5dGVz".into() });
    }
}
