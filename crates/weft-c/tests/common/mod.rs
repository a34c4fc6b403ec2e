//! Shared helpers of the weft-c tests: literal memories and a C compiler driver.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use weft_ir::Memory;

/// DRAM from the prelude (lib/std.weft).
pub fn dram() -> Arc<Memory> {
    weft_syntax::std_memory("DRAM").expect("the prelude declares DRAM")
}

/// DRAM_STACK from the prelude (lib/std.weft).
pub fn dram_stack() -> Arc<Memory> {
    weft_syntax::std_memory("DRAM_STACK").expect("the prelude declares DRAM_STACK")
}

/// A fresh scratch directory for one test.
pub fn scratch(tag: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!(
        "weft-c-test-{}-{tag}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Run `cc` with `args`; panics with the compiler output when it fails.
pub fn cc(dir: &Path, args: &[&str]) {
    let out = Command::new("cc")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("run cc");
    assert!(
        out.status.success(),
        "cc {args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Write `source` and compile it warning-free as a C99 object.
pub fn compile_object(tag: &str, source: &str, extra: &[&str]) -> PathBuf {
    let d = scratch(tag);
    std::fs::write(d.join("k.c"), source).unwrap();
    let mut args = vec![
        "-std=c99", "-Wall", "-Wextra", "-Werror", "-O2", "-c", "k.c", "-o", "k.o",
    ];
    args.extend_from_slice(extra);
    cc(&d, &args);
    d
}

/// Compile `source` + `main_c` into a sanitized executable, run it, and return its stdout.
pub fn run_with_main(tag: &str, source: &str, main_c: &str) -> String {
    run_with_main_flags(tag, source, main_c, &[])
}

/// [`run_with_main`] with extra compiler flags.
pub fn run_with_main_flags(tag: &str, source: &str, main_c: &str, extra: &[&str]) -> String {
    run_with_main_env(tag, source, main_c, extra, &[])
}

/// [`run_with_main_flags`], running the program with extra environment variables.
pub fn run_with_main_env(
    tag: &str,
    source: &str,
    main_c: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> String {
    let d = scratch(tag);
    std::fs::write(d.join("k.c"), source).unwrap();
    std::fs::write(d.join("main.c"), main_c).unwrap();
    cc(
        &d,
        &[
            "-std=c99",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-O1",
            "-g",
            "-fsanitize=address,undefined",
            "-fno-sanitize-recover=all",
            "-ffp-contract=off",
            "-fno-trapping-math",
            "k.c",
            "main.c",
            "-o",
            "prog",
        ]
        .iter()
        .chain(extra)
        .chain(&["-lm"])
        .copied()
        .collect::<Vec<_>>(),
    );
    let out = Command::new(d.join("prog"))
        .envs(env.iter().copied())
        .output()
        .expect("run program");
    assert!(
        out.status.success(),
        "program failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}
