//! Workspace file tools (family `files`, spec §14 and §15): `apply_patch`, `read_file`,
//! `edit_file`, `find_files`, `remove_file`, `restore_file`. Each works on the calling
//! agent's own workspace; every path goes through [`crate::workspace::Workspaces`], which
//! refuses anything that would leave it (`..`, absolute or encoded-looking names are only
//! names, links are never followed). Text is edited in memory with [`crate::patch`].
//!
//! Destructive tools are separate (`remove_file`, `restore_file`) so a grant of
//! `files.read_file` or `files.find_files` reads without changing anything.

mod apply;
mod glob;
mod tools;

pub(crate) use tools::register;
