//! Checks that keep `docs/ARCHITECTURE.md` true of the tree, and the rules it states that a
//! reading of the source can check: SQL only in stores, no web server or HTML in the kernel.
//! Each failure names what differs, so the fix (the map or the code) is plain.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use regex::Regex;

/// The workspace root: the kernel crate's parent.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(relative: &str) -> String {
    fs::read_to_string(root().join(relative)).unwrap_or_else(|e| panic!("cannot read {relative}: {e}"))
}

fn map() -> String {
    read("docs/ARCHITECTURE.md")
}

/// The text of the map's `## {heading}` section, up to the next `## ` heading.
fn section<'a>(doc: &'a str, heading: &str) -> &'a str {
    let start = doc
        .find(&format!("\n## {heading}"))
        .unwrap_or_else(|| panic!("docs/ARCHITECTURE.md has no section `## {heading}`"));
    let body = &doc[start + 1..];
    let end = body[3..].find("\n## ").map_or(body.len(), |i| i + 3);
    &body[..end]
}

/// The names of a folder's entries, folders written `name/`, files filtered by `keep`.
fn entries(relative: &str, keep: impl Fn(&str, bool) -> bool) -> BTreeSet<String> {
    let dir = root().join(relative);
    fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {relative}: {e}"))
        .map(|entry| entry.unwrap())
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let is_dir = entry.file_type().unwrap().is_dir();
            keep(&name, is_dir).then(|| if is_dir { format!("{name}/") } else { name })
        })
        .collect()
}

/// Asserts the map's list equals the tree's, naming each side's extras.
fn assert_same(what: &str, in_tree: &BTreeSet<String>, in_map: &BTreeSet<String>) {
    let missing: Vec<&String> = in_tree.difference(in_map).collect();
    let stale: Vec<&String> = in_map.difference(in_tree).collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "docs/ARCHITECTURE.md's {what} differs from the tree:\n  missing from the map: {missing:?}\n  named in the map but not in the tree: {stale:?}"
    );
}

/// Every top-level file and folder of `kernel/src` has a row in the module table (rows start
/// `| \`name/\` |` or `| \`name.rs\` |`), and every row names one that exists.
#[test]
fn the_module_table_names_every_kernel_module() {
    let in_tree = entries("kernel/src", |name, is_dir| is_dir || name.ends_with(".rs"));
    let doc = map();
    let row = Regex::new(r"(?m)^\| `([^`]+)` \|").unwrap();
    let in_map: BTreeSet<String> =
        row.captures_iter(section(&doc, "The kernel, module by module")).map(|c| c[1].to_string()).collect();
    assert_same("module table (## The kernel, module by module)", &in_tree, &in_map);

    // And every module `lib.rs` declares is one of those files or folders.
    let lib = read("kernel/src/lib.rs");
    let declared = Regex::new(r"(?m)^(?:pub(?:\([a-z]+\))? )?mod ([a-z_0-9]+);").unwrap();
    for name in declared.captures_iter(&lib).map(|c| c[1].to_string()) {
        assert!(
            in_tree.contains(&format!("{name}/")) || in_tree.contains(&format!("{name}.rs")),
            "kernel/src/lib.rs declares `mod {name}` but kernel/src has neither {name}.rs nor {name}/"
        );
    }
}

/// The scripts list (`- \`scripts/NAME\``) names exactly the files in `scripts/`.
#[test]
fn the_scripts_list_names_every_script() {
    let in_tree = entries("scripts", |_, is_dir| !is_dir);
    let doc = map();
    let item = Regex::new(r"(?m)^- `scripts/([^`]+)`").unwrap();
    let in_map: BTreeSet<String> = item.captures_iter(section(&doc, "Scripts")).map(|c| c[1].to_string()).collect();
    assert_same("scripts list (## Scripts)", &in_tree, &in_map);
}

/// The benches list (`- \`kernel/benches/NAME.rs\``) names exactly the bench files of
/// `kernel/benches` and `tests/benches`.
#[test]
fn the_benches_list_names_every_bench() {
    let mut in_tree = BTreeSet::new();
    for folder in ["kernel/benches", "tests/benches"] {
        let benches = entries(folder, |name, is_dir| !is_dir && name.ends_with(".rs"));
        in_tree.extend(benches.into_iter().map(|name| format!("{folder}/{name}")));
    }
    let doc = map();
    let item = Regex::new(r"(?m)^- `((?:kernel|tests)/benches/[^`]+)`").unwrap();
    let in_map: BTreeSet<String> = item.captures_iter(section(&doc, "Benches")).map(|c| c[1].to_string()).collect();
    assert_same("benches list (## Benches)", &in_tree, &in_map);
}

/// Every repository path the map names in backticks (`kernel/src/db.rs`, `docs/BENCHMARKS.md`,
/// `tests/tests/system/`) exists. Patterns with a placeholder (`kernel/src/<family>/`) are not
/// paths and are skipped.
#[test]
fn every_path_the_map_names_exists() {
    let doc = map();
    let quoted =
        Regex::new(r"`((?:kernel|server|app|tests|scripts|end2end|migrations|docs|style|public)/[^`]*)`").unwrap();
    let mut absent = Vec::new();
    for path in quoted.captures_iter(&doc).map(|c| c[1].to_string()) {
        if path.contains(['<', '{', '*', '…', ' ']) {
            continue;
        }
        if !root().join(&path).exists() {
            absent.push(path);
        }
    }
    assert!(absent.is_empty(), "docs/ARCHITECTURE.md names paths that do not exist: {absent:?}");
}

/// Every test the map cites as `` `FILE` → `test_a`, `test_b` `` is a function of that file.
#[test]
fn every_test_the_map_names_exists() {
    let doc = map();
    let cited = Regex::new(r"`([\w/.-]+\.rs)` →((?:\s*`\w+`,?)+)").unwrap();
    let name = Regex::new(r"`(\w+)`").unwrap();
    let mut missing = Vec::new();
    let mut seen = 0;
    for citation in cited.captures_iter(&doc) {
        let file = &citation[1];
        let text = read(file);
        for test in name.captures_iter(&citation[2]).map(|c| c[1].to_string()) {
            seen += 1;
            if !text.contains(&format!("fn {test}(")) {
                missing.push(format!("{file} → {test}"));
            }
        }
    }
    assert!(seen > 0, "docs/ARCHITECTURE.md cites no tests as `FILE` → `test`: has the format changed?");
    assert!(missing.is_empty(), "docs/ARCHITECTURE.md cites tests that do not exist:\n{}", missing.join("\n"));
}

/// Files outside `store.rs`, `kernel/src/db.rs` and `kernel/src/db/` that are stores in all but
/// name: each holds the SQL of one table of its module.
const STORES_BY_ANOTHER_NAME: [(&str, &str); 2] = [
    // The `skill_proposals` table, beside `skills/store.rs` (skill history).
    ("kernel/src/skills/proposals.rs", "skill_proposals"),
    // The `agent_bindings` table, beside `agent/store.rs`.
    ("kernel/src/agent/binding.rs", "agent_bindings"),
];

/// SQL lives only in stores (tests aside): `kernel/src/db.rs`, `kernel/src/db/`, files named
/// `store.rs`, and [`STORES_BY_ANOTHER_NAME`]. The fronts (`server/src`, `app/src`) hold none.
/// So a second database back end replaces stores, never services, tools or fronts.
#[test]
fn sql_is_written_only_in_store_modules() {
    // Every way into the database: sqlx's own query functions and builder, a raw pool, the
    // kernel's query layer (`db::query`, `db::query_as`, `db::query_scalar`, `QueryBuilder`,
    // also when imported and called bare), and SQL statements written as string literals.
    let entry_points = Regex::new(
        r#"sqlx::query|sqlx::raw_sql|sqlx::Executor|QueryBuilder|\.pool\(\)|db::query|(?:^|[^\w.:])(query|query_as|query_scalar)\s*(?:\(|::<)|"\s*(?:SELECT|INSERT INTO|UPDATE \w+ SET|DELETE FROM|CREATE (?:TABLE|INDEX)|PRAGMA|WITH \w+ AS)\s"#,
    )
    .unwrap();
    let allowed = |relative: &str| {
        relative.ends_with("/store.rs")
            || relative == "kernel/src/db.rs"
            || relative.starts_with("kernel/src/db/")
            || STORES_BY_ANOTHER_NAME.iter().any(|(path, _)| *path == relative)
    };
    let mut found = Vec::new();
    for tree in ["kernel/src", "server/src", "app/src"] {
        for relative in rust_files(tree) {
            if allowed(&relative) {
                continue;
            }
            let text = read(&relative);
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            for (number, line) in code.lines().enumerate() {
                if line.trim_start().starts_with("//") {
                    continue;
                }
                for hit in entry_points.captures_iter(line) {
                    // A function *named* `query` (`fn query(`) is not a query.
                    let whole = hit.get(0).unwrap();
                    if hit.get(1).is_some_and(|name| line[..name.start()].trim_end().ends_with("fn")) {
                        continue;
                    }
                    found.push(format!("{relative}:{}: `{}`", number + 1, whole.as_str().trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "SQL outside the stores (move it into the module's store.rs, or, if the file is a store \
         by another name, add it to STORES_BY_ANOTHER_NAME):\n{}",
        found.join("\n")
    );
    for (path, table) in STORES_BY_ANOTHER_NAME {
        assert!(read(path).contains(table), "{path} is allowed SQL for `{table}` but no longer names it");
    }
}

/// Every `.rs` file under `relative`, as paths relative to the workspace root.
fn rust_files(relative: &str) -> Vec<String> {
    let mut files = Vec::new();
    let mut folders = vec![relative.to_string()];
    while let Some(folder) = folders.pop() {
        for entry in fs::read_dir(root().join(&folder)).unwrap() {
            let entry = entry.unwrap();
            let path = format!("{folder}/{}", entry.file_name().to_string_lossy());
            if entry.file_type().unwrap().is_dir() {
                folders.push(path);
            } else if path.ends_with(".rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The kernel names no web framework, router or HTML crate among its dependencies (the map's
/// first invariant; `utoipa`'s derives, `reqwest`, `hyper` for the guard proxy and `rmcp` are
/// its stated exceptions).
#[test]
fn the_kernel_depends_on_no_web_server_or_html_crate() {
    const WEB_OR_HTML: [&str; 18] = [
        "axum",
        "axum-extra",
        "utoipa-axum",
        "tower-http",
        "leptos",
        "leptos_axum",
        "leptos_router",
        "tachys",
        "actix-web",
        "warp",
        "rocket",
        "poem",
        "tide",
        "salvo",
        "maud",
        "askama",
        "tera",
        "minijinja",
    ];
    let manifest = read("kernel/Cargo.toml");
    let mut in_dependencies = false;
    let mut found = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_dependencies = line == "[dependencies]";
            continue;
        }
        if !in_dependencies || line.is_empty() || line.starts_with('#') {
            continue;
        }
        let name = line.split(['=', '.', ' ']).next().unwrap_or_default();
        if WEB_OR_HTML.contains(&name) {
            found.push(name.to_string());
        }
    }
    assert!(found.is_empty(), "kernel/Cargo.toml depends on web server or HTML crates: {found:?}");
}

/// The source of a family as it is built into the kernel, without comments or unit tests:
/// `system` is `system.rs`, `tool::meta` is `tool/meta.rs`, any other its folder. A unit test
/// may open a whole kernel to drive the family; the family itself may not name it.
fn family_code(family: &str) -> Vec<(String, String)> {
    let path = family.replace("::", "/");
    let files = if root().join(format!("kernel/src/{path}.rs")).exists() {
        vec![format!("kernel/src/{path}.rs")]
    } else {
        rust_files(&format!("kernel/src/{path}")).into_iter().filter(|f| !f.ends_with("/tests.rs")).collect()
    };
    files.into_iter().map(|file| (file.clone(), without_tests(&read(&file)))).collect()
}

/// `code` without comment lines and without its `#[cfg(test)] mod tests { … }` (the last
/// item of a file, by our layout).
fn without_tests(code: &str) -> String {
    let lines: Vec<&str> = code.lines().collect();
    let end = lines
        .windows(2)
        .position(|pair| pair[0] == "#[cfg(test)]" && pair[1].starts_with("mod ") && pair[1].ends_with('{'))
        .unwrap_or(lines.len());
    lines[..end].iter().filter(|l| !l.trim_start().starts_with("//")).copied().collect::<Vec<_>>().join("\n")
}

/// The modules a family imports to reach the running kernel: they must not lead back to it.
const RUNTIME_LEAVES: [&str; 3] = ["kernel/src/runtime.rs", "kernel/src/turn/request.rs", "kernel/src/tool/context.rs"];

/// No family names the kernel: each takes what it needs from `Services` when it opens and
/// registers (its tools hold it: `Uses`), and starts turns, stops agents and runs tools through
/// a `Runtime` — so what a family depends on is written in its own folder, and the kernel's
/// import graph has no cycle through `Kernel`.
#[test]
fn no_family_names_the_kernel() {
    let families: Vec<String> = Regex::new(r"(?m)^\s+([a-z0-9_:]+)::FAMILY,")
        .unwrap()
        .captures_iter(&read("kernel/src/lib.rs"))
        .map(|c| c[1].to_string())
        .collect();
    assert!(families.len() >= 20, "lib.rs's FAMILIES was not found: {families:?}");
    let names_kernel = Regex::new(r"\bKernel\b|\bkernel\s*[.:,)]").unwrap();
    let leaves = RUNTIME_LEAVES.iter().map(|file| (file.to_string(), without_tests(&read(file))));
    let naming: Vec<String> = families
        .iter()
        .flat_map(|family| family_code(family))
        .chain(leaves)
        .flat_map(|(file, code)| {
            code.lines()
                .filter(|l| names_kernel.is_match(l))
                .map(|l| format!("{file}: {}", l.trim()))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        naming.is_empty(),
        "these lines of families (or of the modules they reach the runtime through) name the kernel; \
         take the service from Services, or start turns and tools through runtime::Runtime:\n{}",
        naming.join("\n")
    );
}
