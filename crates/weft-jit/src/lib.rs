//! The weft JIT: emit C for procs (`weft-c`), compile it into a shared object with the system C
//! compiler, cache it on disk, load it, and call its entry points with checked arguments.
//!
//! ```no_run
//! # fn demo(procs: &[std::sync::Arc<weft_ir::Proc>]) -> Result<(), weft_jit::JitError> {
//! use weft_jit::{Arg, BufArg, Jit};
//! let jit = Jit::new()?;
//! let module = jit.compile(procs)?;
//! let axpy = module.kernel("axpy")?;
//! let (mut x, mut y, a) = (vec![1.0f32; 8], vec![2.0f32; 8], 3.0f32);
//! axpy.call(&mut [
//!     Arg::Int(8),
//!     Arg::Buf(BufArg::scalar(&a)),
//!     Arg::Buf(BufArg::new(&mut x, &[8])),
//!     Arg::Buf(BufArg::new(&mut y, &[8])),
//! ])?;
//! # Ok(()) }
//! ```
//!
//! Compiler: `cc` unless `WEFT_CC` says otherwise; flags [`DEFAULT_FLAGS`] (`-O3 -march=native
//! -mprefer-vector-width=512`) unless `WEFT_CFLAGS` says otherwise; always `-std=c99 -fPIC
//! -shared -Werror=implicit-function-declaration -ffp-contract=off -fno-trapping-math` (no FMA
//! contraction, so results are bit-identical to the interpreter but for the sign of NaNs folded
//! from constants; no floating-point traps, which weft cannot observe, so GCC may vectorize
//! clamped conversions: [`SEMANTIC_FLAGS`]) and `-lm`, and for a unit whose memories or
//! instructions declare instruction-set extensions (`isa`) the flags that enable them
//! (`-mavx512f`), so such kernels compile whatever `WEFT_CFLAGS` says. A unit that needs an
//! extension this CPU lacks is refused before it is compiled or loaded ([`JitError::Isa`]), never
//! run into an illegal instruction.
//!
//! Cache: `WEFT_CACHE_DIR`, else `$XDG_CACHE_HOME/weft`, else `~/.cache/weft`; one `<sha256>.so`
//! per (source, compiler, compiler version, flags), written to a temporary file, sealed with its
//! length and hash, and renamed into place, so concurrent compiles of one kernel by several
//! threads or processes all succeed. An entry is verified before it is loaded; a damaged one
//! (truncated, empty, altered) is rebuilt, and temporaries of killed compiles are removed.
//! [`Module::describe`] gives one line from which [`Jit::load_described`] loads a module again
//! without its procs (callers that cache what they compiled, like the pipeline cache, skip emitting
//! C on a hit), keying their own entries by [`Jit::fingerprint`] so that other flags never share them.
//!
//! Configuration state: [`Kernel::call`] runs on a fresh zeroed context (config fields read 0
//! until the call writes them), so concurrent calls never share state; [`Kernel::call_with`]
//! takes a [`Context`] the caller keeps, for state that persists across calls (of every kernel of
//! the module, or of any module whose configs are the same).

mod buffer;
mod cache;
mod describe;
pub mod isa;

pub use buffer::{Arg, BufArg, Element};
pub use weft_c::ContextInfo;

use libloading::Library;
use sha2::{Digest, Sha256};
use std::ffi::{c_char, c_void};
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use weft_c::{arg_kind, status, CUnit, EntryArgKind, EntryInfo};
use weft_ir::Proc;

/// Everything that can go wrong in the JIT.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JitError {
    /// The C backend could not express the program.
    Codegen(weft_ir::Diagnostic),
    /// The C compiler failed: its command line and output.
    Compile { command: String, stderr: String },
    /// Reading or writing the cache, or finding the cache directory, failed.
    Io(String),
    /// The shared object could not be loaded, or lacks a symbol.
    Load(String),
    /// No exported kernel has this name.
    NoSuchKernel(String),
    /// Wrong number of arguments.
    ArgCount { expected: usize, got: usize },
    /// An argument of the wrong kind (int, bool, buffer).
    ArgKind(String),
    /// A buffer of the wrong element type.
    Dtype(String),
    /// A buffer of the wrong rank.
    Rank(String),
    /// A buffer of the wrong shape, or too short for its shape and strides.
    Shape(String),
    /// Strides that are negative or not those of a dense tensor.
    Stride(String),
    /// A size that is not positive.
    Size(String),
    /// A precondition of the proc does not hold for these arguments.
    Precondition(String),
    /// A null pointer (cannot come from safe Rust; reported for completeness).
    Null(String),
    /// A written buffer overlaps another buffer argument, or its strides map two indices to one
    /// element.
    Alias(String),
    /// A control argument or window stride outside `-(2^31-1) ..= 2^31-1`.
    Range(String),
    /// An allocation inside the kernel failed (the message names it).
    Alloc(String),
    /// A [`Context`] made for other configs than the kernel's.
    Context(String),
    /// The kernel needs instruction-set extensions this CPU does not have.
    Isa(String),
    /// A read-only buffer passed where the kernel writes.
    ReadOnly(String),
    /// An error code the JIT does not know.
    Other { code: i32, message: String },
}

impl fmt::Display for JitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JitError::Codegen(d) => write!(f, "{d}"),
            JitError::Compile { command, stderr } => {
                write!(f, "C compiler failed: {command}\n{stderr}")
            }
            JitError::Io(m) => write!(f, "I/O error: {m}"),
            JitError::Load(m) => write!(f, "cannot load kernel library: {m}"),
            JitError::NoSuchKernel(n) => write!(f, "no kernel named '{n}'"),
            JitError::ArgCount { expected, got } => {
                write!(f, "expected {expected} arguments, got {got}")
            }
            JitError::ArgKind(m)
            | JitError::Dtype(m)
            | JitError::Rank(m)
            | JitError::Shape(m)
            | JitError::Stride(m)
            | JitError::Size(m)
            | JitError::Precondition(m)
            | JitError::Null(m)
            | JitError::Alias(m)
            | JitError::Range(m)
            | JitError::Alloc(m)
            | JitError::Context(m)
            | JitError::Isa(m)
            | JitError::ReadOnly(m) => f.write_str(m),
            JitError::Other { code, message } => write!(f, "kernel error {code}: {message}"),
        }
    }
}

impl std::error::Error for JitError {}

fn io_err(what: &str, path: &Path, e: std::io::Error) -> JitError {
    JitError::Io(format!("{what} {}: {e}", path.display()))
}

/// A C compiler and its flags, with a cache directory for compiled kernels.
pub struct Jit {
    cache_dir: PathBuf,
    cc: String,
    flags: Vec<String>,
    version: OnceLock<String>,
}

/// The optimisation flags of a JIT configured from the environment without `WEFT_CFLAGS`:
/// the host's instruction set, with 512-bit vectors where it has them (GCC prefers 256-bit
/// ones on AVX-512 hosts; a schedule's 16-lane f32 or 32-lane u16 vectors then take two
/// instructions each, and Halide, the peer, uses the full width). Without AVX-512 the
/// preference changes nothing.
pub const DEFAULT_FLAGS: &[&str] = &["-O3", "-march=native", "-mprefer-vector-width=512"];

/// The flags weft's C semantics need, wherever it is compiled (JIT and `weft::build`):
/// `-ffp-contract=off`: no FMA contraction, so results are bit-identical to the interpreter.
/// `-fno-trapping-math`: weft has no floating-point exceptions to observe, and without it GCC
/// keeps a clamped float conversion (`min(max(v, 0), 1) * 65535` to u16) as branches, which it
/// may not turn into vector selects since the multiply could trap. It changes no value; only
/// the sign bit of a NaN that GCC makes at compile time from an invalid operation on constants
/// (`0.0 / 0.0`: positive, where x86 and the interpreter make it negative), which no weft
/// operation can observe (NaNs compare alike, convert to 0; tests compare NaN as NaN).
pub const SEMANTIC_FLAGS: &[&str] = &["-std=c99", "-ffp-contract=off", "-fno-trapping-math"];
/// `-Werror=implicit-function-declaration`: a template that calls a function no header declares
/// (an instruction missing its `header`) fails to compile, instead of loading a module that
/// dies on an unresolved symbol at its first call.
const REQUIRED_FLAGS: &[&str] = &["-fPIC", "-shared", "-Werror=implicit-function-declaration"];

/// Added for units with parallel loops: they become OpenMP worksharing loops.
pub const OPENMP_FLAG: &str = "-fopenmp";

/// Also added for JIT units with parallel loops: the module is never unloaded. Unloading it could
/// unload the OpenMP runtime while its idle worker threads still run its code.
const NODELETE_FLAG: &str = "-Wl,-z,nodelete";

fn default_cache_dir() -> Result<PathBuf, JitError> {
    if let Some(d) = std::env::var_os("WEFT_CACHE_DIR").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(d));
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(d).join("weft"));
    }
    match std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        Some(h) => Ok(PathBuf::from(h).join(".cache").join("weft")),
        None => Err(JitError::Io(
            "no cache directory: set WEFT_CACHE_DIR, XDG_CACHE_HOME or HOME".into(),
        )),
    }
}

impl Jit {
    /// A JIT configured from the environment (`WEFT_CC`, `WEFT_CFLAGS`, `WEFT_CACHE_DIR`).
    pub fn new() -> Result<Jit, JitError> {
        Jit::with_cache_dir(default_cache_dir()?)
    }

    /// A JIT with the compiler from the environment and the given cache directory.
    pub fn with_cache_dir(path: impl Into<PathBuf>) -> Result<Jit, JitError> {
        let cc = std::env::var("WEFT_CC")
            .ok()
            .filter(|s| !s.trim().is_empty())
            .unwrap_or_else(|| "cc".to_string());
        let flags = match std::env::var("WEFT_CFLAGS") {
            Ok(s) => s.split_whitespace().map(str::to_string).collect(),
            Err(_) => DEFAULT_FLAGS.iter().map(|s| s.to_string()).collect(),
        };
        Jit::with_compiler(path, cc, flags)
    }

    /// A JIT with an explicit compiler and flags (replacing [`DEFAULT_FLAGS`]; the
    /// required flags are always added).
    pub fn with_compiler(
        cache_dir: impl Into<PathBuf>,
        cc: impl Into<String>,
        flags: Vec<String>,
    ) -> Result<Jit, JitError> {
        let cache_dir = cache_dir.into();
        std::fs::create_dir_all(&cache_dir).map_err(|e| io_err("creating", &cache_dir, e))?;
        cache::sweep_temporaries(&cache_dir);
        Ok(Jit {
            cache_dir,
            cc: cc.into(),
            flags,
            version: OnceLock::new(),
        })
    }

    /// The cache directory.
    pub fn cache_dir(&self) -> &Path {
        &self.cache_dir
    }

    /// `cc --version`, or how running it failed (which then also goes into the key).
    fn compiler_version(&self) -> &str {
        self.version
            .get_or_init(|| match Command::new(&self.cc).arg("--version").output() {
                Ok(o) => format!(
                    "{}{}{}",
                    o.status,
                    String::from_utf8_lossy(&o.stdout),
                    String::from_utf8_lossy(&o.stderr)
                ),
                Err(e) => format!("cannot run: {e}"),
            })
    }

    /// The C compiler this JIT runs.
    pub fn compiler(&self) -> &str {
        &self.cc
    }

    /// Every flag passed to the compiler: the configured ones and the required ones. Benchmarks
    /// compile their reference C with exactly these.
    pub fn all_flags(&self) -> Vec<String> {
        self.flags
            .iter()
            .cloned()
            .chain(
                SEMANTIC_FLAGS
                    .iter()
                    .chain(REQUIRED_FLAGS)
                    .map(|s| s.to_string()),
            )
            .collect()
    }

    /// The flags a unit is compiled with: [`Jit::all_flags`], those of the instruction-set
    /// extensions it needs, and for a unit with parallel loops the OpenMP ones.
    fn unit_flags(&self, unit: &CUnit) -> Result<Vec<String>, JitError> {
        let mut flags = self.all_flags();
        flags.extend(
            isa::flags(&unit.isa)
                .map_err(|n| JitError::Isa(format!("unknown instruction-set extension '{n}'")))?,
        );
        if unit.parallel {
            flags.push(OPENMP_FLAG.to_string());
            flags.push(NODELETE_FLAG.to_string());
        }
        Ok(flags)
    }

    /// The cache key of a source under this compiler configuration.
    fn key(&self, source: &str, flags: &[String]) -> String {
        let mut h = Sha256::new();
        let parts = [source, &self.cc, self.compiler_version()];
        for part in parts.into_iter().chain(flags.iter().map(String::as_str)) {
            h.update((part.len() as u64).to_le_bytes());
            h.update(part.as_bytes());
        }
        h.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Compile `procs` (and everything they call) into a loaded module, reusing the cache.
    /// Instructions among `procs` are not exported.
    pub fn compile(&self, procs: &[Arc<Proc>]) -> Result<Module, JitError> {
        let unit = weft_c::emit(procs).map_err(JitError::Codegen)?;
        if let Some(m) = isa::missing(&unit.isa) {
            return Err(JitError::Isa(m));
        }
        let flags = self.unit_flags(&unit)?;
        let so = self
            .cache_dir
            .join(format!("{}.so", self.key(&unit.source, &flags)));
        if let Err(why) = cache::verify(&so) {
            self.build(&unit.source, &flags, &so)?;
            cache::verify(&so).map_err(|again| {
                JitError::Io(format!(
                    "cache entry {} is not whole right after it was written ({why:?}, then {again:?})",
                    so.display()
                ))
            })?;
        }
        Self::load(so, unit.entries, unit.context)
    }

    /// Load the verified object `so` of the cache.
    fn load(
        so: PathBuf,
        entries: Vec<EntryInfo>,
        context: ContextInfo,
    ) -> Result<Module, JitError> {
        // SAFETY: the library is generated by weft-c (no initialisers with side effects), it was
        // verified whole just now, and entries are only ever replaced by whole ones (renames).
        let lib = unsafe { Library::new(&so) }.map_err(|e| JitError::Load(e.to_string()))?;
        Ok(Module {
            lib: Arc::new(lib),
            entries,
            context,
            path: so,
        })
    }

    /// A digest of this JIT's compiler configuration (compiler, its version, flags): a cache
    /// of what was compiled from what keys its entries by it, so that [`Jit::load_described`]
    /// never loads an object another configuration built. It says nothing of the code that
    /// emitted the C: such a cache keys its entries by that too (the pipeline cache by a hash
    /// of weft's sources).
    pub fn fingerprint(&self) -> String {
        self.key("", &self.all_flags())
    }

    /// Load again the module that [`Module::describe`] described, from this JIT's cache,
    /// without emitting or compiling C: the object is verified whole as on every load, and a
    /// kernel needing instruction-set extensions this CPU lacks is refused. An error (the
    /// object was removed or damaged, the text is not a description) leaves the caller to
    /// compile the procs again. The entry points are taken as described, not read from the
    /// object: a description is trusted as the cache directory is (whoever writes there can
    /// replace the objects), and must come from this build's [`Module::describe`] of a module
    /// this JIT compiled.
    pub fn load_described(&self, description: &str) -> Result<Module, JitError> {
        let d = describe::parse(description)
            .ok_or_else(|| JitError::Io("not a module description".into()))?;
        if let Some(m) = d.entries.iter().find_map(|e| isa::missing(&e.isa)) {
            return Err(JitError::Isa(m));
        }
        let so = self.cache_dir.join(&d.file);
        cache::verify(&so)
            .map_err(|why| JitError::Io(format!("cache entry {}: {why:?}", so.display())))?;
        Self::load(so, d.entries, d.context)
    }

    /// Compile `source` with `flags` into `so` through uniquely named temporary files, seal it
    /// (see the `cache` module) and rename it into place atomically.
    fn build(&self, source: &str, flags: &[String], so: &Path) -> Result<(), JitError> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let unique = format!(
            "tmp-{}-{}-{nanos}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let c_path = self.cache_dir.join(format!("{unique}.c"));
        let tmp_so = self.cache_dir.join(format!("{unique}.so"));
        std::fs::write(&c_path, source).map_err(|e| io_err("writing", &c_path, e))?;
        let mut cmd = Command::new(&self.cc);
        cmd.args(flags)
            .arg(&c_path)
            .arg("-o")
            .arg(&tmp_so)
            .arg("-lm");
        let command = format!(
            "{} {} {} -o {} -lm",
            self.cc,
            flags.join(" "),
            c_path.display(),
            tmp_so.display()
        );
        let result = cmd.output();
        let _ = std::fs::remove_file(&c_path);
        let out = match result {
            Ok(o) => o,
            Err(e) => {
                let _ = std::fs::remove_file(&tmp_so);
                return Err(JitError::Compile {
                    command,
                    stderr: format!("cannot run the compiler: {e}"),
                });
            }
        };
        if !out.status.success() || !tmp_so.exists() {
            let _ = std::fs::remove_file(&tmp_so);
            return Err(JitError::Compile {
                command,
                stderr: format!(
                    "{} ({})\n{}",
                    String::from_utf8_lossy(&out.stderr),
                    out.status,
                    String::from_utf8_lossy(&out.stdout)
                ),
            });
        }
        cache::seal(&tmp_so)
            .map_err(|e| io_err("sealing", &tmp_so, e))
            .and_then(|()| std::fs::rename(&tmp_so, so).map_err(|e| io_err("renaming into", so, e)))
            .inspect_err(|_| {
                let _ = std::fs::remove_file(&tmp_so);
            })
    }
}

/// A loaded shared object with its entry points.
pub struct Module {
    lib: Arc<Library>,
    entries: Vec<EntryInfo>,
    context: ContextInfo,
    path: PathBuf,
}

/// The C type of a uniform entry point `NS_NAME_entry(ctxt, args, nargs, err, err_len)`.
pub type EntryFn = unsafe extern "C" fn(*mut c_void, *const WeftArg, i64, *mut c_char, i64) -> i32;

/// The configuration state of the kernels of a module (`struct NS_context` in C): the values of
/// its config fields, zero when made. [`Kernel::call_with`] reads and writes it, so what one call
/// writes the next call given this context reads. Made by [`Module::context`] or
/// [`Kernel::context`]; usable with every kernel whose configs are the same.
#[derive(Clone, Debug)]
pub struct Context {
    /// 8-byte words, so the C struct's alignment (at most 8) is met.
    words: Box<[u64]>,
    info: ContextInfo,
}

impl Context {
    fn new(info: &ContextInfo) -> Context {
        Context {
            words: vec![0u64; info.bytes.div_ceil(8)].into_boxed_slice(),
            info: info.clone(),
        }
    }

    /// Set every config field back to zero.
    pub fn reset(&mut self) {
        self.words.iter_mut().for_each(|w| *w = 0);
    }

    /// The configs this context holds.
    pub fn info(&self) -> &ContextInfo {
        &self.info
    }
}

#[repr(C)]
#[derive(Clone, Copy)]
struct WeftBuffer {
    data: *mut c_void,
    dtype: i32,
    rank: i32,
    shape: *const i64,
    strides: *const i64,
}

impl WeftBuffer {
    const EMPTY: WeftBuffer = WeftBuffer {
        data: std::ptr::null_mut(),
        dtype: 0,
        rank: 0,
        shape: std::ptr::null(),
        strides: std::ptr::null(),
    };
}

/// How many arguments a call passes to C from the stack (more go through the heap).
const STACK_ARGS: usize = 16;

/// One argument of a uniform entry point (the C `weft_arg`); built only by [`Kernel::call`].
#[repr(C)]
#[derive(Clone, Copy)]
pub struct WeftArg {
    kind: i32,
    i: i64,
    buf: *const WeftBuffer,
}

impl WeftArg {
    const EMPTY: WeftArg = WeftArg {
        kind: 0,
        i: 0,
        buf: std::ptr::null(),
    };
}

impl Module {
    /// The path of the shared object in the cache.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The exported entry points.
    pub fn entries(&self) -> &[EntryInfo] {
        &self.entries
    }

    /// One line from which [`Jit::load_described`] loads this module again (see the `describe`
    /// module); `None` where a name holds white space.
    pub fn describe(&self) -> Option<String> {
        let file = self.path.file_name()?.to_str()?;
        describe::describe(file, &self.entries, &self.context)
    }

    /// A fresh (zeroed) context for the kernels of this module.
    pub fn context(&self) -> Context {
        Context::new(&self.context)
    }

    /// The kernel of the exported proc `name`.
    pub fn kernel(&self, name: &str) -> Result<Kernel, JitError> {
        let info = self
            .entries
            .iter()
            .find(|e| e.name == name)
            .ok_or_else(|| JitError::NoSuchKernel(name.to_string()))?;
        let mut sym = info.symbol.clone().into_bytes();
        sym.push(0);
        // SAFETY: weft-c defines this symbol with exactly the `EntryFn` signature.
        let f: EntryFn = unsafe {
            *self
                .lib
                .get::<EntryFn>(&sym)
                .map_err(|e| JitError::Load(e.to_string()))?
        };
        Ok(Kernel::new(Some(self.lib.clone()), f, info.clone()))
    }
}

/// A callable entry point; keeps its shared object loaded.
#[derive(Clone)]
pub struct Kernel {
    /// The shared object the entry point lives in; None for code linked into the program (AOT).
    _lib: Option<Arc<Library>>,
    entry: EntryFn,
    info: EntryInfo,
    /// Why this CPU cannot run the kernel, if it cannot (see [`isa::missing`]).
    unrunnable: Option<String>,
}

impl Kernel {
    fn new(lib: Option<Arc<Library>>, entry: EntryFn, info: EntryInfo) -> Kernel {
        Kernel {
            _lib: lib,
            entry,
            unrunnable: isa::missing(&info.isa),
            info,
        }
    }

    /// A fresh (zeroed) context for this kernel (and the others of its module).
    pub fn context(&self) -> Context {
        Context::new(&self.info.context)
    }

    /// A kernel for an entry point linked into the program ahead of time (see `weft::build`).
    ///
    /// # Safety
    /// `entry` must be the uniform entry point that weft generated for exactly the proc `info`
    /// describes.
    pub unsafe fn from_entry(entry: EntryFn, info: EntryInfo) -> Kernel {
        Kernel::new(None, entry, info)
    }

    /// The entry point's description.
    pub fn info(&self) -> &EntryInfo {
        &self.info
    }

    /// Call the kernel on a fresh zeroed context (config fields read 0 until the call writes
    /// them; nothing persists). Every argument is validated (here, and again by the C entry
    /// point) before anything runs; misuse is an error, never undefined behaviour.
    pub fn call(&self, args: &mut [Arg<'_>]) -> Result<(), JitError> {
        self.invoke(std::ptr::null_mut(), args)
    }

    /// Call the kernel on `ctx`: it reads the config fields earlier calls wrote into `ctx`, and
    /// leaves its own writes there.
    pub fn call_with(&self, ctx: &mut Context, args: &mut [Arg<'_>]) -> Result<(), JitError> {
        let want = &self.info.context;
        if ctx.info.signature != want.signature || ctx.words.len() * 8 < want.bytes {
            return Err(JitError::Context(format!(
                "'{}' takes a context of configs `{}`, given one of `{}`",
                self.info.name, want.signature, ctx.info.signature
            )));
        }
        self.invoke(ctx.words.as_mut_ptr() as *mut c_void, args)
    }

    /// Validate `args` and run the entry point on the context at `ctx` (null: a fresh one).
    fn invoke(&self, ctx: *mut c_void, args: &mut [Arg<'_>]) -> Result<(), JitError> {
        if let Some(m) = &self.unrunnable {
            return Err(JitError::Isa(format!("'{}': {m}", self.info.name)));
        }
        let params = &self.info.args;
        if args.len() != params.len() {
            return Err(JitError::ArgCount {
                expected: params.len(),
                got: args.len(),
            });
        }
        let name = &self.info.name;
        // Rust-side checks: kinds, dtypes, mutability and that every reachable element lies
        // inside the borrowed memory (C cannot see slice lengths).
        for (i, (a, p)) in args.iter().zip(params).enumerate() {
            let pn = &p.name;
            match (a, &p.kind) {
                (Arg::Int(v), EntryArgKind::Int(weft_ir::CtrlType::Size)) if *v <= 0 => {
                    return Err(JitError::Size(format!(
                        "argument {i} ('{pn}') of '{name}': a size must be positive, got {v}"
                    )))
                }
                (Arg::Int(_), EntryArgKind::Int(_)) | (Arg::Bool(_), EntryArgKind::Bool) => {}
                (
                    Arg::Buf(b),
                    EntryArgKind::Buffer {
                        elem,
                        rank,
                        written,
                        ..
                    },
                ) => {
                    // Formatted only for an error: this runs at every call.
                    let what = || format!("argument {i} ('{pn}') of '{name}'");
                    if let Some(m) = &b.invalid {
                        return Err(JitError::Stride(format!("{}: {m}", what())));
                    }
                    if b.dtype != *elem {
                        return Err(JitError::Dtype(format!(
                            "{}: expected {elem} elements, got {}",
                            what(),
                            b.dtype
                        )));
                    }
                    if b.shape.len() != *rank {
                        return Err(JitError::Rank(format!(
                            "{}: expected rank {rank}, got {}",
                            what(),
                            b.shape.len()
                        )));
                    }
                    if b.strides.len() != b.shape.len() {
                        return Err(JitError::Stride(format!(
                            "{}: strides and shape differ in rank",
                            what()
                        )));
                    }
                    if b.strides.iter().any(|s| *s < 0) {
                        return Err(JitError::Stride(format!("{}: negative strides", what())));
                    }
                    if *written && !b.mutable {
                        return Err(JitError::ReadOnly(format!(
                            "{}: the kernel writes this buffer, but it was passed read-only",
                            what()
                        )));
                    }
                    match b.reach() {
                        Err(m) => return Err(JitError::Shape(format!("{}: {m}", what()))),
                        Ok(Some(last)) if last >= b.len => {
                            return Err(JitError::Shape(format!(
                                "{}: shape {:?} with strides {:?} reaches element {last}, but the buffer has {} elements",
                                what(), b.shape, b.strides, b.len
                            )))
                        }
                        Ok(_) => {}
                    }
                }
                (_, k) => {
                    let want = match k {
                        EntryArgKind::Int(_) => "an integer",
                        EntryArgKind::Bool => "a bool",
                        EntryArgKind::Buffer { .. } => "a buffer",
                    };
                    return Err(JitError::ArgKind(format!(
                        "argument {i} ('{pn}') of '{name}' must be {want}"
                    )));
                }
            }
        }
        // The C view of the arguments, on the stack for up to STACK_ARGS of them (this runs at
        // every call; a tiny kernel's whole time is of this order).
        let n = args.len();
        let mut bufs_stack = [WeftBuffer::EMPTY; STACK_ARGS];
        let mut raw_stack = [WeftArg::EMPTY; STACK_ARGS];
        let (mut bufs_heap, mut raw_heap) = (Vec::new(), Vec::new());
        let (bufs, raw): (&mut [WeftBuffer], &mut [WeftArg]) = if n <= STACK_ARGS {
            (&mut bufs_stack[..n], &mut raw_stack[..n])
        } else {
            bufs_heap.resize(n, WeftBuffer::EMPTY);
            raw_heap.resize(n, WeftArg::EMPTY);
            (&mut bufs_heap[..], &mut raw_heap[..])
        };
        for (k, a) in args.iter().enumerate() {
            if let Arg::Buf(b) = a {
                bufs[k] = WeftBuffer {
                    data: b.ptr as *mut c_void,
                    dtype: weft_c::dtype_code(b.dtype),
                    rank: b.shape.len() as i32,
                    shape: b.shape.as_ptr(),
                    strides: b.strides.as_ptr(),
                };
            }
        }
        for (k, a) in args.iter().enumerate() {
            raw[k] = match a {
                Arg::Int(v) => WeftArg {
                    kind: arg_kind::INT,
                    i: *v,
                    buf: std::ptr::null(),
                },
                Arg::Bool(v) => WeftArg {
                    kind: arg_kind::BOOL,
                    i: *v as i64,
                    buf: std::ptr::null(),
                },
                Arg::Buf(_) => WeftArg {
                    kind: arg_kind::BUFFER,
                    i: 0,
                    buf: &bufs[k] as *const WeftBuffer,
                },
            };
        }
        // On the stack and not cleared: the C writes a message (NUL-terminated, by `vsnprintf`)
        // only on an error; an error without one reads the empty string written here.
        let mut err = std::mem::MaybeUninit::<[u8; 1024]>::uninit();
        let err_ptr = err.as_mut_ptr() as *mut u8;
        // SAFETY: `err_ptr` points to the first of 1024 bytes of `err`.
        unsafe { err_ptr.write(0) };
        // SAFETY: the arguments were checked above against the entry's declared kinds, and every
        // element reachable through each buffer's shape and strides lies inside its borrowed
        // memory; the C entry validates shapes, strides and preconditions before running. `ctx`
        // is null or an exclusively borrowed context at least as large as the unit's (checked by
        // `call_with`), the CPU has the extensions the code was compiled for (checked above).
        // `raw` points into `bufs`, both alive through the call.
        let rc = unsafe {
            (self.entry)(
                ctx,
                raw.as_ptr(),
                raw.len() as i64,
                err_ptr as *mut c_char,
                1024,
            )
        };
        if rc == status::OK {
            return Ok(());
        }
        // SAFETY: the bytes up to the first NUL were written, by the C's `vsnprintf` (which ends
        // what it writes with a NUL within the 1024 bytes) or by the write of the empty string.
        let message = unsafe { std::ffi::CStr::from_ptr(err_ptr as *const c_char) }
            .to_string_lossy()
            .into_owned();
        Err(match rc {
            status::ARG_COUNT => JitError::ArgCount {
                expected: params.len(),
                got: args.len(),
            },
            status::ARG_KIND => JitError::ArgKind(message),
            status::DTYPE => JitError::Dtype(message),
            status::RANK => JitError::Rank(message),
            status::SHAPE => JitError::Shape(message),
            status::STRIDE => JitError::Stride(message),
            status::SIZE => JitError::Size(message),
            status::PRECONDITION => JitError::Precondition(message),
            status::NULL => JitError::Null(message),
            status::ALIAS => JitError::Alias(message),
            status::RANGE => JitError::Range(message),
            status::ALLOC => JitError::Alloc(message),
            code => JitError::Other { code, message },
        })
    }
}
