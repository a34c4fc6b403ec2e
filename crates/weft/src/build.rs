//! A `build.rs` helper: compile `.weft` files into a Rust crate ahead of time.
//!
//! ```text
//! // build.rs
//! fn main() {
//!     weft::build::Build::new()
//!         .file("kernels/sgemm.weft")
//!         .compile("kernels")
//!         .unwrap_or_else(|e| panic!("{e}"));
//! }
//! // src/main.rs
//! include!(concat!(env!("OUT_DIR"), "/kernels.rs"));
//! let sgemm = kernels::sgemm(); // a weft::jit::Kernel, called like a JIT kernel
//! ```
//!
//! `examples/aot-demo` is a crate that does exactly this.
//!
//! For each file the helper checks the program, writes `.c`, `.h` and `.d` into `OUT_DIR` (see
//! [`crate::aot`]), compiles the C with `$CC` (default `cc`) into a static library linked into the
//! crate, prints `cargo:rerun-if-changed` for every source and import, and writes
//! `OUT_DIR/<name>.rs`: a module `<name>` with one function per exported proc returning a
//! [`weft_jit::Kernel`], so AOT kernels get the same checked call API as JIT ones.

use crate::{aot, Error};
use std::fmt::Write;
use std::path::PathBuf;
use std::process::Command;
use weft_c::{EntryArgKind, EntryInfo};

/// Configuration of an ahead-of-time build.
#[derive(Default)]
pub struct Build {
    files: Vec<PathBuf>,
    flags: Vec<String>,
}

fn rust_literal(info: &EntryInfo) -> String {
    let mut args = String::new();
    for a in &info.args {
        let kind = match &a.kind {
            EntryArgKind::Int(c) => format!("weft::c::EntryArgKind::Int(weft::ir::CtrlType::{c:?})"),
            EntryArgKind::Bool => "weft::c::EntryArgKind::Bool".to_string(),
            EntryArgKind::Buffer {
                elem,
                rank,
                window,
                written,
            } => format!(
                "weft::c::EntryArgKind::Buffer {{ elem: weft::ir::DType::{elem:?}, rank: {rank}, window: {window}, written: {written} }}"
            ),
        };
        let _ = write!(
            args,
            "weft::c::EntryArg {{ name: {:?}.to_string(), kind: {kind} }}, ",
            a.name
        );
    }
    format!(
        "weft::c::EntryInfo {{ name: {:?}.to_string(), direct_symbol: {:?}.to_string(), symbol: {:?}.to_string(), args: vec![{args}] }}",
        info.name, info.direct_symbol, info.symbol
    )
}

/// A Rust function name for a proc: its cleaned name, as a raw identifier so that procs named
/// like Rust keywords still work.
fn rust_fn_name(proc: &str) -> String {
    let clean = weft_c::names::clean(proc);
    match clean.as_str() {
        "self" | "Self" | "super" | "crate" | "_" => format!("{clean}_"),
        _ if clean.starts_with(|c: char| c.is_ascii_digit()) => format!("k_{clean}"),
        _ => format!("r#{clean}"),
    }
}

impl Build {
    pub fn new() -> Build {
        Build {
            files: Vec::new(),
            flags: vec!["-O3".into()],
        }
    }

    /// Add a `.weft` file; every proc in it that is not an instruction is exported.
    pub fn file(mut self, path: impl Into<PathBuf>) -> Build {
        self.files.push(path.into());
        self
    }

    /// Replace the optimisation flags (default `-O3`; `-std=c99 -ffp-contract=off` are always
    /// added, since weft's semantics need them).
    pub fn flags(mut self, flags: &[&str]) -> Build {
        self.flags = flags.iter().map(|s| s.to_string()).collect();
        self
    }

    /// Generate, compile and link; `name` names the static library and the Rust module.
    pub fn compile(self, name: &str) -> Result<(), Error> {
        let out = PathBuf::from(
            std::env::var_os("OUT_DIR")
                .ok_or_else(|| Error::message("error: OUT_DIR is not set (run from build.rs)"))?,
        );
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let mut objects = Vec::new();
        let mut parallel = false;
        let mut bindings = format!(
            "/// weft kernels compiled ahead of time from {:?}.\n#[allow(dead_code)]\npub mod {name} {{\n    use std::ffi::c_char;\n",
            self.files
        );
        for file in &self.files {
            let program = crate::load(file)?;
            for dep in &program.deps {
                println!("cargo:rerun-if-changed={}", dep.display());
            }
            let procs = aot::select_procs(&program, None)?;
            let stem = file
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "weft".into());
            let files = aot::write(&program, &procs, &out, &stem)?;
            let unit = weft_c::emit(&procs).map_err(|d| Error::new(&program.sources, vec![d]))?;
            let obj = out.join(format!("{stem}.o"));
            if unit.parallel {
                parallel = true;
            }
            run(Command::new(&cc)
                .args(&self.flags)
                .args(["-std=c99", "-ffp-contract=off", "-fPIC", "-c"])
                .args(unit.parallel.then_some(weft_jit::OPENMP_FLAG))
                .arg(&files.c)
                .arg("-o")
                .arg(&obj))?;
            objects.push(obj);
            for e in &unit.entries {
                let _ = write!(
                    bindings,
                    "    extern \"C\" {{\n        #[link_name = {sym:?}]\n        fn {sym}(args: *const weft::jit::WeftArg, nargs: i64, err: *mut c_char, err_len: i64) -> i32;\n    }}\n    /// The kernel `{name}` of `{file}`.\n    pub fn {fname}() -> weft::jit::Kernel {{\n        // SAFETY: the symbol is the uniform entry point weft generated for this proc.\n        unsafe {{ weft::jit::Kernel::from_entry({sym}, {info}) }}\n    }}\n",
                    sym = e.symbol,
                    name = e.name,
                    file = file.display(),
                    fname = rust_fn_name(&e.name),
                    info = rust_literal(e)
                );
            }
        }
        bindings.push_str("}\n");
        let lib = out.join(format!("lib{name}.a"));
        let _ = std::fs::remove_file(&lib);
        run(Command::new("ar").arg("crs").arg(&lib).args(&objects))?;
        std::fs::write(out.join(format!("{name}.rs")), bindings)
            .map_err(|e| Error::message(format!("error: writing bindings: {e}")))?;
        println!("cargo:rustc-link-search=native={}", out.display());
        println!("cargo:rustc-link-lib=static={name}");
        println!("cargo:rustc-link-lib=m");
        if parallel {
            // Parallel loops are OpenMP worksharing loops: link GCC's OpenMP runtime.
            println!("cargo:rustc-link-lib=gomp");
        }
        Ok(())
    }
}

fn run(cmd: &mut Command) -> Result<(), Error> {
    let shown = format!("{cmd:?}");
    let o = cmd
        .output()
        .map_err(|e| Error::message(format!("error: cannot run {shown}: {e}")))?;
    if !o.status.success() {
        return Err(Error::message(format!(
            "error: {shown} failed:\n{}",
            String::from_utf8_lossy(&o.stderr)
        )));
    }
    Ok(())
}
