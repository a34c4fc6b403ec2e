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
//! let sgemm = kernels::sgemm::sgemm(); // a weft::jit::Kernel, called like a JIT kernel
//! let same = kernels::sgemm(); // while no other file exports a proc `sgemm`
//! ```
//!
//! `examples/aot-demo` is a crate that does exactly this.
//!
//! For each file the helper checks the program, writes `.c`, `.h` and `.d` into `OUT_DIR` (see
//! [`crate::aot`]), compiles the C with `$CC` (default `cc`) into a static library linked into the
//! crate, prints `cargo:rerun-if-changed` for every source and import, and writes
//! `OUT_DIR/<name>.rs`: a module `<name>` with, for each file, a submodule named by the file's
//! namespace holding one function per exported proc that returns a [`weft_jit::Kernel`], so AOT
//! kernels get the same checked call API as JIT ones. A proc whose name no other file exports is
//! also reachable directly as `<name>::<proc>()`.
//!
//! Each file's namespace is its stem made a valid namespace (lowercase letters and digits), with
//! `2`, `3`, ... appended when an earlier file took it: it prefixes the file's C symbols
//! (`saxpy_saxpy`), names its object and its Rust submodule, so files with the same stem or the
//! same proc names do not collide and no proc replaces a C library symbol. A file whose memories
//! need instruction-set extensions (`isa`) is compiled with the flags that enable them, whatever
//! [`Build::flags`] says, and its kernels refuse to run on a CPU without them.

use crate::{aot, Error};
use std::collections::{HashMap, HashSet};
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use weft_c::{EntryArgKind, EntryInfo};

/// Configuration of an ahead-of-time build.
#[derive(Default)]
pub struct Build {
    files: Vec<PathBuf>,
    flags: Vec<String>,
}

/// What [`Build::generate`] made.
#[derive(Debug)]
pub struct Generated {
    /// One object per file.
    pub objects: Vec<PathBuf>,
    /// The Rust bindings (the content of `<name>.rs`).
    pub bindings: String,
    /// Whether some unit has parallel loops (the program then needs the OpenMP runtime).
    pub parallel: bool,
    /// Every file read (sources and imports).
    pub deps: Vec<PathBuf>,
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
    let isa: Vec<String> = info
        .isa
        .iter()
        .map(|x| format!("{x:?}.to_string()"))
        .collect();
    format!(
        "weft::c::EntryInfo {{ name: {:?}.to_string(), direct_symbol: {:?}.to_string(), symbol: {:?}.to_string(), args: vec![{args}], context: weft::c::ContextInfo {{ signature: {:?}.to_string(), bytes: {} }}, isa: vec![{}] }}",
        info.name,
        info.direct_symbol,
        info.symbol,
        info.context.signature,
        info.context.bytes,
        isa.join(", ")
    )
}

/// A Rust identifier for a proc or namespace: its cleaned name, as a raw identifier so that
/// names like Rust keywords still work.
fn rust_ident(name: &str) -> String {
    let clean = weft_c::names::clean(name);
    match clean.as_str() {
        "self" | "Self" | "super" | "crate" | "_" => format!("{clean}_"),
        _ if clean.starts_with(|c: char| c.is_ascii_digit()) => format!("k_{clean}"),
        _ => format!("r#{clean}"),
    }
}

/// The namespace of each file: its stem made a namespace, unique among the files.
fn namespaces(files: &[PathBuf]) -> Vec<String> {
    let mut taken = HashSet::new();
    files
        .iter()
        .map(|f| {
            let stem = f
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let base = weft_c::names::namespace_from(&stem);
            let mut ns = base.clone();
            let mut k = 2;
            while !taken.insert(ns.clone()) {
                ns = format!("{base}{k}");
                k += 1;
            }
            ns
        })
        .collect()
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

    /// Replace the optimisation flags (default `-O3`; `weft_jit::SEMANTIC_FLAGS` are always
    /// added, since weft's semantics need them, and so are the flags of the instruction-set
    /// extensions a file needs).
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
        let generated = self.generate(name, &out, &cc)?;
        for dep in &generated.deps {
            println!("cargo:rerun-if-changed={}", dep.display());
        }
        let lib = out.join(format!("lib{name}.a"));
        let _ = std::fs::remove_file(&lib);
        run(Command::new("ar")
            .arg("crs")
            .arg(&lib)
            .args(&generated.objects))?;
        std::fs::write(out.join(format!("{name}.rs")), &generated.bindings)
            .map_err(|e| Error::message(format!("error: writing bindings: {e}")))?;
        println!("cargo:rustc-link-search=native={}", out.display());
        println!("cargo:rustc-link-lib=static={name}");
        println!("cargo:rustc-link-lib=m");
        if generated.parallel {
            // Parallel loops are OpenMP worksharing loops: link GCC's OpenMP runtime.
            println!("cargo:rustc-link-lib=gomp");
        }
        Ok(())
    }

    /// Check every file, write its C into `out` and compile it with `cc` into `out/<ns>.o`, and
    /// make the Rust bindings of module `name` (without archiving or printing anything).
    pub fn generate(&self, name: &str, out: &Path, cc: &str) -> Result<Generated, Error> {
        let mut g = Generated {
            objects: Vec::new(),
            bindings: String::new(),
            parallel: false,
            deps: Vec::new(),
        };
        let mut modules = String::new();
        // Each proc name with the namespaces of the files that export it.
        let mut exporters: HashMap<String, Vec<String>> = HashMap::new();
        for (file, ns) in self.files.iter().zip(namespaces(&self.files)) {
            let program = crate::load(file)?;
            g.deps.extend(program.deps.iter().cloned());
            let procs = aot::select_procs(&program, None)?;
            // Pipelines' procs whose derived arguments the bindings compute.
            let derived: HashMap<String, String> = procs
                .iter()
                .filter(|p| program.module.pipelines.iter().any(|i| i.name == p.name))
                .filter(|p| weft_pipe::lower::first_derived(p) < p.args.len())
                // The derivation alone (arguments and the preconditions that define the
                // derived ones): a proc that calls instructions after proc-level steps would
                // not read back without them.
                .map(|p| {
                    let d = weft_pipe::lower::derivation(p);
                    (p.name.clone(), format!("{d}\n"))
                })
                .collect();
            let (files, unit) = aot::write(&program, &procs, out, &ns, &ns)?;
            let isa_flags = weft_jit::isa::flags(&unit.isa).map_err(|n| {
                Error::message(format!(
                    "error: {}: unknown instruction-set extension `{n}`",
                    file.display()
                ))
            })?;
            let obj = out.join(format!("{ns}.o"));
            g.parallel |= unit.parallel;
            run(Command::new(cc)
                .args(&self.flags)
                .args(&isa_flags)
                .args(weft_jit::SEMANTIC_FLAGS)
                .args(["-fPIC", "-c", "-Werror=implicit-function-declaration"])
                .args(unit.parallel.then_some(weft_jit::OPENMP_FLAG))
                .arg(&files.c)
                .arg("-o")
                .arg(&obj))?;
            g.objects.push(obj);
            let _ = write!(
                modules,
                "    /// The kernels of `{file}` (C namespace `{ns}`).\n    pub mod {module} {{\n        use std::ffi::{{c_char, c_void}};\n",
                file = file.display(),
                module = rust_ident(&ns)
            );
            for e in &unit.entries {
                let _ = write!(
                    modules,
                    "        extern \"C\" {{\n            #[link_name = {sym:?}]\n            fn {sym}(ctxt: *mut c_void, args: *const weft::jit::WeftArg, nargs: i64, err: *mut c_char, err_len: i64) -> i32;\n        }}\n        /// The kernel `{name}` of `{file}`.\n        pub fn {fname}() -> weft::jit::Kernel {{\n            // SAFETY: the symbol is the uniform entry point weft generated for this proc.\n            unsafe {{ weft::jit::Kernel::from_entry({sym}, {info}) }}\n        }}\n",
                    sym = e.symbol,
                    name = e.name,
                    file = file.display(),
                    fname = rust_ident(&e.name),
                    info = rust_literal(e)
                );
                if let Some(text) = derived.get(&e.name) {
                    let _ = write!(
                        modules,
                        "        /// Append the derived arguments of the pipeline `{name}` (the named ends of its\n        /// regions) to `args`, which hold every argument before them.\n        pub fn {fname}_push_derived(args: &mut Vec<weft::jit::Arg>) -> Result<(), weft::Error> {{\n            static PROC: std::sync::OnceLock<std::sync::Arc<weft::ir::Proc>> = std::sync::OnceLock::new();\n            let proc = PROC.get_or_init(|| {{\n                weft::pipeline::lowered_from_text({text:?}, {name:?}).expect(\"weft printed this proc\")\n            }});\n            weft::pipeline::push_derived(proc, args)\n        }}\n",
                        name = e.name,
                        fname = rust_ident(&e.name),
                    );
                }
                exporters
                    .entry(e.name.clone())
                    .or_default()
                    .push(ns.clone());
            }
            modules.push_str("    }\n");
        }
        let mut flat: Vec<(&String, &Vec<String>)> =
            exporters.iter().filter(|(_, v)| v.len() == 1).collect();
        flat.sort();
        g.bindings = format!(
            "/// weft kernels compiled ahead of time from {:?}.\n#[allow(dead_code)]\npub mod {name} {{\n{modules}",
            self.files
        );
        for (proc, ns) in flat {
            let _ = writeln!(
                g.bindings,
                "    pub use self::{}::{};",
                rust_ident(&ns[0]),
                rust_ident(proc)
            );
        }
        g.bindings.push_str("}\n");
        Ok(g)
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
