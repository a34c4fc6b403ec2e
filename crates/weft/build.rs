//! Computes `WEFT_SOURCE_HASH`: a hash of weft's own sources (every crate's `src` and the weft
//! libraries in `lib/`). The pipeline cache keys its entries by it, so that an entry written by
//! another build of weft (another lowering, checker or code generator, whose shared object and
//! entry points may differ) is never read as this build's.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if p
            .extension()
            .is_some_and(|x| x == "rs" || x == "weft" || x == "toml")
        {
            out.push(p);
        }
    }
}

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let root = manifest.join("../..");
    let mut dirs = vec![root.join("lib")];
    if let Ok(crates) = std::fs::read_dir(root.join("crates")) {
        for c in crates.flatten() {
            dirs.push(c.path().join("src"));
            dirs.push(c.path().join("Cargo.toml"));
        }
    }
    dirs.push(root.join("Cargo.lock"));
    let mut all = Vec::new();
    for d in &dirs {
        println!("cargo:rerun-if-changed={}", d.display());
        if d.is_dir() {
            files(d, &mut all);
        } else if d.exists() {
            all.push(d.clone());
        }
    }
    all.sort();
    let mut h = Sha256::new();
    for p in &all {
        let rel = p
            .strip_prefix(&root)
            .unwrap_or(p)
            .to_string_lossy()
            .into_owned();
        let text = std::fs::read(p).unwrap_or_default();
        for part in [rel.as_bytes(), &text] {
            h.update((part.len() as u64).to_le_bytes());
            h.update(part);
        }
    }
    let hex: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    println!("cargo:rustc-env=WEFT_SOURCE_HASH={hex}");
}
