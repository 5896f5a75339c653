//! Every path a README or a crate doc names exists in the tree.
//!
//! Docs drift when code moves: a README that sends a newcomer to `src/up/topology.rs` after
//! it became a folder costs them the first ten minutes. This test reads every `README.md`,
//! `BENCHMARKS.md` and every crate's `lib.rs` tour, and checks three kinds of reference:
//!
//! * a path in backticks (`` `crates/node/src/frame.rs` ``, `` `src/wire/` ``,
//!   `` `benches/veth.sh` ``), looked up beside the document, at its crate's root, at the
//!   repository's root, or (for the measurement notes in BENCHMARKS.md, which name files of
//!   the crate their section is about) at any crate's root;
//! * a relative Markdown link, `[text](path)`, looked up beside the document;
//! * a layout picture, a ```` ```text ```` block whose first line names a directory, each
//!   of whose entries (`  name.rs, other/   what it does`) must exist in that directory.
//!
//! CHANGELOG.md is history and is not checked.

use std::fs;
use std::path::{Path, PathBuf};

/// The repository's root (this crate is `services/waist`).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every document checked, relative to the root.
fn documents(root: &Path) -> Vec<PathBuf> {
    let mut docs = vec![PathBuf::from("README.md"), PathBuf::from("BENCHMARKS.md")];
    for group in ["crates", "services"] {
        let Ok(dir) = fs::read_dir(root.join(group)) else {
            continue;
        };
        let mut crates: Vec<PathBuf> = dir.flatten().map(|e| e.path()).collect();
        crates.sort();
        for c in crates {
            let name = c.file_name().map(PathBuf::from).unwrap_or_default();
            for doc in ["README.md", "REPRODUCTION.md", "src/lib.rs"] {
                let rel = Path::new(group).join(&name).join(doc);
                if root.join(&rel).is_file() {
                    docs.push(rel);
                }
            }
        }
    }
    for extra in ["fuzz/README.md", "services/waist-router/examples/README.md"] {
        if root.join(extra).is_file() {
            docs.push(PathBuf::from(extra));
        }
    }
    docs
}

/// The text a reader sees: all of a Markdown file, or the `//!` lines of a Rust file.
fn prose(root: &Path, doc: &Path) -> String {
    let text = fs::read_to_string(root.join(doc)).unwrap_or_default();
    if doc.extension().is_some_and(|e| e == "rs") {
        text.lines()
            .filter_map(|l| l.trim_start().strip_prefix("//!"))
            .map(|l| l.strip_prefix(' ').unwrap_or(l))
            .collect::<Vec<_>>()
            .join("\n")
    } else {
        text
    }
}

/// Whether `token`, found in backticks, is meant as a file or directory of this tree.
fn looks_like_path(token: &str) -> bool {
    const EXTENSIONS: [&str; 7] = [".rs", ".md", ".sh", ".toml", ".py", ".yml", ".yaml"];
    const ROOTS: [&str; 8] = [
        "src/",
        "crates/",
        "services/",
        "fuzz/",
        "benches/",
        "tests/",
        "examples/",
        ".ci/",
    ];
    let plain = !token.is_empty()
        && token.contains('/')
        && !token.starts_with('/')
        && !token.starts_with("../")
        && token
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./-".contains(c));
    plain
        && (EXTENSIONS.iter().any(|e| token.ends_with(e))
            || ROOTS.iter().any(|r| token.starts_with(r)))
}

/// The directory of the crate `doc` belongs to (`crates/x`, `services/y`), if any.
fn crate_root(doc: &Path) -> Option<PathBuf> {
    let mut parts = doc.components();
    let group = parts.next()?;
    let name = parts.next()?;
    Some(Path::new(group.as_os_str()).join(name.as_os_str())).filter(|_| parts.next().is_some())
}

/// Every crate directory of the workspace.
fn crate_roots(root: &Path) -> Vec<PathBuf> {
    ["crates", "services"]
        .iter()
        .flat_map(|g| fs::read_dir(root.join(g)).into_iter().flatten().flatten())
        .map(|e| e.path())
        .collect()
}

/// Paths in backticks that resolve nowhere.
fn missing_backticked(root: &Path, doc: &Path, text: &str) -> Vec<String> {
    let here = root.join(doc.parent().unwrap_or(Path::new("")));
    let own_crate = crate_root(doc).map(|c| root.join(c));
    let any_crate = doc == Path::new("BENCHMARKS.md");
    let crates = crate_roots(root);
    let mut missing = Vec::new();
    for token in text.split('`').skip(1).step_by(2) {
        if !looks_like_path(token) {
            continue;
        }
        let mut bases = vec![here.clone(), root.to_path_buf()];
        bases.extend(own_crate.clone());
        if any_crate {
            bases.extend(crates.iter().cloned());
        }
        if !bases.iter().any(|b| b.join(token).exists()) {
            missing.push(format!("`{token}`"));
        }
    }
    missing
}

/// Relative Markdown links that resolve nowhere.
fn missing_links(root: &Path, doc: &Path, text: &str) -> Vec<String> {
    let here = root.join(doc.parent().unwrap_or(Path::new("")));
    let mut missing = Vec::new();
    for piece in text.split("](").skip(1) {
        let Some(end) = piece.find(')') else { continue };
        let target = piece[..end].split('#').next().unwrap_or("");
        if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
            continue;
        }
        if !target
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./-".contains(c))
        {
            continue;
        }
        if !here.join(target).exists() {
            missing.push(format!("({target})"));
        }
    }
    missing
}

/// Entries of layout pictures that do not exist in the directory the picture names.
fn missing_in_pictures(root: &Path, doc: &Path, text: &str) -> Vec<String> {
    let here = root.join(doc.parent().unwrap_or(Path::new("")));
    let mut missing = Vec::new();
    for block in text.split("```text\n").skip(1) {
        let block = block.split("```").next().unwrap_or("");
        let mut lines = block.lines();
        let Some(head) = lines.next().map(str::trim) else {
            continue;
        };
        let Some(dir) = [root.join(head), here.join(head)]
            .into_iter()
            .find(|d| !head.is_empty() && !head.contains(' ') && d.is_dir())
        else {
            continue;
        };
        for line in lines {
            // An entry is indented by exactly two spaces; deeper lines continue a description.
            let Some(entry) = line.strip_prefix("  ").filter(|l| !l.starts_with(' ')) else {
                continue;
            };
            let names = entry.split("  ").next().unwrap_or("");
            for name in names.split(", ").map(str::trim).filter(|n| !n.is_empty()) {
                if !dir.join(name).exists() {
                    missing.push(format!("{head}: {name}"));
                }
            }
        }
    }
    missing
}

#[test]
fn every_path_a_doc_names_exists() {
    let root = root();
    let mut report = Vec::new();
    let docs = documents(&root);
    assert!(docs.len() > 10, "found only {docs:?}");
    for doc in &docs {
        let text = prose(&root, doc);
        let mut missing = missing_backticked(&root, doc, &text);
        if doc.extension().is_some_and(|e| e == "md") {
            missing.extend(missing_links(&root, doc, &text));
            missing.extend(missing_in_pictures(&root, doc, &text));
        }
        for m in missing {
            report.push(format!("{}: {m}", doc.display()));
        }
    }
    assert!(
        report.is_empty(),
        "paths named in docs that do not exist:\n{}",
        report.join("\n")
    );
}

#[test]
fn the_checks_catch_what_they_should() {
    let root = root();
    let doc = Path::new("crates/node/README.md");
    let text = "see `src/nowhere.rs`, `crates/node/src/lib.rs` and `a/b c`";
    assert_eq!(missing_backticked(&root, doc, text), ["`src/nowhere.rs`"]);
    let text = "[ok](src/lib.rs) [gone](src/gone.rs) [web](https://example.org/x)";
    assert_eq!(missing_links(&root, doc, text), ["(src/gone.rs)"]);
    let text = "```text\ncrates/node/src\n  lib.rs, gone.rs   what\n      deeper.rs  ignored\n```";
    assert_eq!(
        missing_in_pictures(&root, doc, text),
        ["crates/node/src: gone.rs"]
    );
}
