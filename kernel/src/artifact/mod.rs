//! The content-addressed artifact store (spec §0.5): large tool results live here as files
//! named by their SHA-256, and `read_artifact` pages them back. The store is shared (the same
//! bytes are one file), so each spill also records which agent it belongs to, and an agent
//! reads only its own: another agent's artifact is not found.
//!
//! # Design notes
//!
//! ## Layout
//!
//! The content-addressed artifact store, which agent each spilled result belongs to (`store.rs`,
//! table `artifact_owners`), and `read_artifact`.

mod store;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::db::Db;
use crate::error::{Error, Result};
use crate::family::{Family, Home, Services};
use crate::tool::{CallContext, Registry, Tool, ToolDef};

/// The family's part in the kernel (see [`crate::family`]).
pub const FAMILY: Family = Family {
    name: "artifact",
    open: |s| {
        let store = ArtifactStore::new(s.get::<Home>().path().join("artifacts"), s.get::<Db>().clone());
        s.provide(store);
        Ok(())
    },
    register,
};

/// What this family's tools reach, taken from the kernel's services when they are registered.
#[derive(Clone)]
pub(super) struct Uses {
    artifacts: Arc<ArtifactStore>,
    /// `[tool_results] spill_threshold_bytes`: the longest page one call reads.
    page_bytes: u64,
}

pub(crate) fn register(r: &mut Registry, services: &Services) {
    let page_bytes = services.config().tool_results.spill_threshold_bytes;
    let uses = Uses { artifacts: services.need(), page_bytes };
    r.add(ReadArtifact(uses.clone()));
}

pub struct ArtifactStore {
    dir: PathBuf,
    db: Db,
}

impl ArtifactStore {
    pub(crate) fn new(dir: PathBuf, db: Db) -> ArtifactStore {
        ArtifactStore { dir, db }
    }

    /// Stores a result of `agent` that spilled, and records it as that agent's.
    pub async fn put_for(&self, agent: Uuid, bytes: &[u8]) -> Result<String> {
        let id = self.put(bytes).await?;
        store::add_owner(&self.db, agent, &id).await?;
        Ok(id)
    }

    /// Reads part of one of `agent`'s artifacts (see [`ArtifactStore::read`]); an artifact of
    /// another agent is not found, as if it did not exist.
    pub async fn read_own(&self, agent: Uuid, id: &str, offset: u64, length: u64) -> Result<(Vec<u8>, u64)> {
        let not_found = || Error::not_found(format!("no artifact `{id}` among your spilled results"));
        if self.path(id).is_some() && !store::is_owner(&self.db, agent, id).await? {
            return Err(not_found());
        }
        self.read(id, offset, length)
            .await
            .map_err(|e| if e.kind == crate::ErrorKind::NotFound { not_found() } else { e })
    }

    /// Where an id's bytes live; `None` if `id` is not a SHA-256 in hex (so no id can name a
    /// path outside the store).
    fn path(&self, id: &str) -> Option<PathBuf> {
        let valid = id.len() == 64 && id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        valid.then(|| self.dir.join(&id[..2]).join(&id[2..]))
    }

    /// Stores `bytes` and returns their id. Storing the same bytes twice is one file.
    async fn put(&self, bytes: &[u8]) -> Result<String> {
        let id = hex::encode(Sha256::digest(bytes));
        let path = self.path(&id).expect("a sha256 hex digest is a valid id");
        if tokio::fs::try_exists(&path).await? {
            return Ok(id);
        }
        let parent = path.parent().expect("artifact paths have a parent");
        tokio::fs::create_dir_all(parent).await?;
        // Write then rename, so a reader never sees a half-written artifact.
        let tmp = parent.join(format!(".{}.{}", &id[2..], uuid::Uuid::now_v7()));
        tokio::fs::write(&tmp, bytes).await?;
        tokio::fs::rename(&tmp, &path).await?;
        Ok(id)
    }

    /// Reads up to `length` bytes from `offset`, and the artifact's total size.
    async fn read(&self, id: &str, offset: u64, length: u64) -> Result<(Vec<u8>, u64)> {
        use tokio::io::{AsyncReadExt, AsyncSeekExt};
        let path =
            self.path(id).ok_or_else(|| Error::invalid(format!("`{id}` is not an artifact id (64 hex digits)")))?;
        let mut file = match tokio::fs::File::open(&path).await {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::not_found(format!("no artifact `{id}`")));
            }
            Err(e) => return Err(e.into()),
        };
        let size = file.metadata().await?.len();
        if offset > size {
            return Err(Error::invalid(format!("offset {offset} is past the end of the artifact ({size} bytes)")));
        }
        file.seek(std::io::SeekFrom::Start(offset)).await?;
        let mut buf = Vec::with_capacity(length.min(size - offset) as usize);
        file.take(length).read_to_end(&mut buf).await?;
        Ok((buf, size))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// The tool that reads artifacts.
pub const READ_TOOL: &str = "read_artifact";

/// `read_artifact(artifact_id, offset?, length?)`: every agent may call it, granted or not and
/// in every tool mode, so a spill placeholder never points at a tool the agent cannot call.
/// A turn offers it once its session holds a spilled result (stable mode: always).
pub struct ReadArtifact(pub(super) Uses);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadArtifactArgs {
    /// The id from a spilled result's placeholder.
    pub artifact_id: String,
    /// Byte offset to start at (default 0). Use `next_offset` from the previous page.
    #[serde(default)]
    pub offset: u64,
    /// How many bytes to read (default and maximum: the spill threshold).
    pub length: Option<u64>,
}

impl Tool for ReadArtifact {
    type Args = ReadArtifactArgs;

    fn def(&self) -> ToolDef {
        ToolDef::new(
            READ_TOOL,
            "meta",
            "Read part of one of your spilled tool results by artifact id, offset and length.",
        )
        .tags(&["artifact", "spill", "read", "page"])
        .read_only()
        .never_spill()
        .built_in_grant()
    }

    async fn run(&self, ctx: CallContext, args: ReadArtifactArgs) -> Result<Value> {
        let page = self.0.page_bytes;
        let length = args.length.unwrap_or(page).clamp(1, page);
        let (bytes, size) = self.0.artifacts.read_own(ctx.agent.id, &args.artifact_id, args.offset, length).await?;
        let text = utf8_page(&bytes, args.offset)?;
        let end = args.offset + text.len() as u64;
        Ok(json!({
            "artifact_id": args.artifact_id,
            "offset": args.offset,
            "length": text.len(),
            "size_bytes": size,
            "content": text,
            "next_offset": (end < size).then_some(end),
        }))
    }
}

/// The longest valid UTF-8 text at the start of `bytes`. A page may end inside a character
/// (it is then shorter, and `next_offset` starts at that character); it may not start inside one.
fn utf8_page(bytes: &[u8], offset: u64) -> Result<&str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Ok(text),
        Err(e) if e.valid_up_to() > 0 => Ok(std::str::from_utf8(&bytes[..e.valid_up_to()]).expect("valid up to here")),
        Err(_) => Err(Error::invalid(format!(
            "no whole character at offset {offset}: continue from a `next_offset` and read at least 4 bytes"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file-system fault is `Internal`: the store's path never reaches a client or a model.
    #[tokio::test]
    async fn an_io_fault_hides_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::db::open_for_test(dir.path()).await;
        let store = ArtifactStore::new(dir.path().join("artifacts"), db);
        let id = store.put(b"some bytes").await.unwrap();
        // The artifact's file replaced by a directory: opening works, reading fails.
        let file = store.path(&id).unwrap();
        std::fs::remove_file(&file).unwrap();
        std::fs::create_dir(&file).unwrap();
        let e = store.read(&id, 0, 10).await.unwrap_err();
        assert_eq!(e.kind, crate::ErrorKind::Internal, "{e}");
        let root = dir.path().to_string_lossy();
        assert!(!e.message.contains(root.as_ref()) && !e.message.contains(&id[2..]), "{e}");
        assert!(e.message.starts_with("internal error (ref "), "{e}");
    }

    /// The store is shared, ownership is not: the same bytes spilled by two agents are one
    /// file that each may read, and an agent that never spilled them reads "not found".
    #[tokio::test]
    async fn an_agent_reads_only_its_own_artifacts() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::db::open_for_test(dir.path()).await;
        let store = ArtifactStore::new(dir.path().join("artifacts"), db);
        let (alice, bob, carol) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
        let id = store.put_for(alice, b"alice's long result").await.unwrap();
        assert_eq!(store.read_own(alice, &id, 0, 7).await.unwrap(), (b"alice's".to_vec(), 19));
        let e = store.read_own(bob, &id, 0, 7).await.unwrap_err();
        assert_eq!(e.kind, crate::ErrorKind::NotFound, "{e}");
        assert_eq!(store.put_for(bob, b"alice's long result").await.unwrap(), id, "one file for the same bytes");
        assert!(store.read_own(bob, &id, 0, 7).await.is_ok());
        let missing = "0".repeat(64);
        let (foreign, absent) = (
            store.read_own(carol, &id, 0, 1).await.unwrap_err(),
            store.read_own(carol, &missing, 0, 1).await.unwrap_err(),
        );
        assert_eq!(
            foreign.message.replace(&id, "ID"),
            absent.message.replace(&missing, "ID"),
            "nothing tells them apart"
        );
    }
}
