//! docs/ARCHITECTURE.md is the map of the tree: this test fails when the
//! map and the tree part. Every source file of the host's three crates
//! must be named in it (by its path, or in the row of its directory), and
//! every path it names must exist.
//!
//! Its module table's rows start with the paths they describe: a
//! directory row (`host/src/api/`) names its files relative to it
//! (`lookup.rs`, `waits/index.rs`, or a subdirectory `waits/` and the
//! file's name); a file row names one file.
//!
//! And no source file of those crates is longer than one screen of
//! thought holds ([`MAX_LINES`]): past it, a file is split into a directory
//! of modules with one job each.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The crates whose every source file the map must name.
const SOURCE_ROOTS: [&str; 3] = ["host/src", "host/sandbox/src", "host/core/src"];

/// The most lines a host source file may have.
const MAX_LINES: usize = 600;

/// Where a path the document names may start.
const TOP: [&str; 8] = [
    "host/",
    "tests/",
    "guest-sdk/",
    "jobs/",
    "wit/",
    "docs/",
    "scripts/",
    ".ci/",
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn doc() -> String {
    std::fs::read_to_string(root().join("docs/ARCHITECTURE.md")).unwrap()
}

/// The `code spans` of `text`.
fn spans(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// A module-table row: the paths of its first cell, and the whole row.
struct Row<'d> {
    paths: Vec<&'d str>,
    text: &'d str,
}

/// The directory a module-table row describes, if the line is one.
fn row_dir(line: &str) -> Option<&str> {
    rows(line)
        .pop()?
        .paths
        .into_iter()
        .find(|p| p.ends_with('/'))
}

fn rows(doc: &str) -> Vec<Row<'_>> {
    doc.lines()
        .filter(|line| line.starts_with("| `"))
        .filter_map(|line| {
            let first = line.split(" | ").next()?;
            let paths: Vec<&str> = spans(first)
                .into_iter()
                .filter(|p| TOP.iter().any(|t| p.starts_with(t)))
                .collect();
            (!paths.is_empty()).then_some(Row { paths, text: line })
        })
        .collect()
}

/// Every file under `dir`, as paths relative to the repository.
fn files_under(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files_under(&path, found);
        } else {
            found.push(path);
        }
    }
}

/// Every Rust source file of the host's three crates: its path relative to
/// the repository, and where it is on disk.
fn host_sources() -> Vec<(String, PathBuf)> {
    let root = root();
    let mut files = Vec::new();
    for source_root in SOURCE_ROOTS {
        files_under(&root.join(source_root), &mut files);
    }
    files
        .into_iter()
        .filter(|f| f.extension().is_some_and(|e| e == "rs"))
        .map(|f| (f.strip_prefix(&root).unwrap().display().to_string(), f))
        .collect()
}

/// A span that names a concrete path (not a pattern or a key).
fn names_a_path(span: &str) -> bool {
    TOP.iter().any(|t| span.starts_with(t))
        && !span.contains(['*', '<', '{', ' ', '|'])
        && !span.chars().any(|c| c.is_ascii_uppercase())
}

#[test]
fn every_path_the_map_names_exists() {
    let doc = doc();
    let root = root();
    let mut missing = BTreeSet::new();
    // Whole paths, from the root — or, in a row, from its directory (a
    // package's own `wit/world.wit`).
    for line in doc.lines() {
        let dir = row_dir(line).unwrap_or("");
        for span in spans(line).into_iter().filter(|s| names_a_path(s)) {
            let path = span.split(':').next().unwrap();
            if !root.join(path).exists() && !root.join(dir).join(path).exists() {
                missing.insert(span.to_string());
            }
        }
    }
    // A directory row's own files, named relative to it.
    for row in rows(&doc) {
        let Some(dir) = row.paths.iter().find(|p| p.ends_with('/')) else {
            continue;
        };
        let mut files = Vec::new();
        files_under(&root.join(dir), &mut files);
        for span in spans(row.text) {
            let relative_file = span.ends_with(".rs")
                && !names_a_path(span)
                && !span.contains([' ', '*', '{', '<']);
            if !relative_file {
                continue;
            }
            // Or one of the host crate's modules (`cli/new.rs`), which rows
            // name relative to `host/src/`.
            let found = files
                .iter()
                .any(|f| f.to_string_lossy().ends_with(&format!("/{span}")))
                || root.join("host/src").join(span).is_file();
            if !found {
                missing.insert(format!("{span} (in the row of {dir})"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/ARCHITECTURE.md names paths that do not exist: {missing:#?}"
    );
}

#[test]
fn every_host_source_file_is_on_the_map() {
    let doc = doc();
    let rows = rows(&doc);
    let mut unnamed: Vec<String> = host_sources()
        .into_iter()
        .map(|(path, _)| path)
        .filter(|path| !is_named(&doc, &rows, path))
        .collect();
    unnamed.sort();
    assert!(
        unnamed.is_empty(),
        "source files docs/ARCHITECTURE.md does not name (add each to its directory's row): {unnamed:#?}"
    );
}

/// Whether the map names `path`: by its whole path, or in the row of the
/// deepest directory holding it.
fn is_named(doc: &str, rows: &[Row<'_>], path: &str) -> bool {
    if doc.contains(&format!("`{path}`")) {
        return true;
    }
    // A crate's root is the crate.
    if SOURCE_ROOTS
        .iter()
        .any(|r| [format!("{r}/lib.rs"), format!("{r}/main.rs")].contains(&path.to_string()))
    {
        return true;
    }
    let Some((dir, row)) = rows
        .iter()
        .flat_map(|row| row.paths.iter().map(move |p| (*p, row)))
        .filter(|(p, _)| p.ends_with('/') && path.starts_with(p))
        .max_by_key(|(p, _)| p.len())
    else {
        return false;
    };
    // Relative to the row's directory; a crate row's files sit in `src/`.
    let relative = path.strip_prefix(dir).unwrap();
    let relative = relative.strip_prefix("src/").unwrap_or(relative);
    let spans = spans(row.text);
    let named = |s: &str| spans.contains(&s);
    let (parent, name) = match relative.rsplit_once('/') {
        Some((parent, name)) => (Some(parent), name),
        None => (None, relative),
    };
    // The row's own module is the row.
    let own = matches!(name, "lib.rs" | "main.rs" | "mod.rs") && parent.is_none();
    match parent {
        _ if own || named(relative) => true,
        // A subdirectory's module: the subdirectory named, and the file
        // too unless it is the subdirectory's own `mod.rs`.
        Some(parent) => named(&format!("{parent}/")) && (name == "mod.rs" || named(name)),
        None => false,
    }
}

#[test]
fn no_host_source_file_is_over_600_lines() {
    let mut long = Vec::new();
    for (path, file) in host_sources() {
        let lines = std::fs::read_to_string(&file).unwrap().lines().count();
        if lines > MAX_LINES {
            long.push(format!("{path}: {lines} lines"));
        }
    }
    assert!(
        long.is_empty(),
        "host source files over {MAX_LINES} lines (split each into modules with one job): {long:#?}"
    );
}
