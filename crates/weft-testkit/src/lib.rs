//! Random weft procs for property and differential tests.
//!
//! [`random_proc`] builds a proc (and the helper procs it calls) with the Rust builder API. Every
//! generated proc is meant to be accepted by the checker: each index is in bounds *by
//! construction* (a loop variable only indexes a dimension whose extent bounds its range, or it is
//! clamped with `min`, reduced with `%` by a constant extent, or guarded by an `if`), every
//! temporary is fully written before it is read, and literals fit their type. A proc the checker
//! rejects is therefore a generator bug or a checker bug, and the tests treat it as a failure.
//!
//! [`random_proc_with`] adds [`Hazards`] on request: uses after `free` through windows,
//! constants near the 64-bit and 2^31 bounds in control expressions, loops that may have
//! negative extents, temporaries read before they are fully written. Such procs may be unsafe;
//! the checker must reject them or prove them safe (`tests/generated_hazards.rs`).
//!
//! The data expressions stay away from `exp`/`log`/`sin`/`cos`/`tanh`/`pow`, whose results differ
//! between libm implementations; everything else (wrapping integer arithmetic, Euclidean `/` and
//! `%`, casts in every direction, `min`/`max`, `select`, `sqrt`, `floor`, `ceil`, `abs`) must give
//! bit-identical results in the interpreter and in compiled C.

use rand::seq::SliceRandom;
use rand::Rng;
use std::collections::HashMap;
use std::sync::Arc;
use weft_ir::build::{BlockBuilder, Buf, ProcBuilder};
use weft_ir::{BinOp, DType, Expr, MathFn, Memory, Proc, Ty, UnOp, WinCoord};

/// A generated proc with the values to run it with.
#[derive(Clone, Debug)]
pub struct GeneratedProc {
    /// The proc under test.
    pub proc: Arc<Proc>,
    /// A value for every size argument (`n0`, `n1`, ...), each `>= 1`; 1 is chosen often.
    pub sizes: HashMap<String, i64>,
    /// The procs `proc` calls, in an order where each comes before its callers. A module holding
    /// them followed by `proc` is complete.
    pub helper_procs: Vec<Arc<Proc>>,
}

impl GeneratedProc {
    /// Names of the size arguments of [`GeneratedProc::proc`], in declaration order.
    pub fn size_names(&self) -> Vec<String> {
        self.proc
            .args
            .iter()
            .filter(|a| a.ctrl().is_some())
            .map(|a| a.sym.name().to_string())
            .collect()
    }
}

/// Hazards the generator may put into a proc (all off by default). A proc with hazards may
/// break the rules the checker enforces, so the checker may reject it: tests check that it
/// never panics, and that whatever it accepts runs without an error in the interpreter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Hazards {
    /// A window of an allocation is used after the allocation's `free`.
    pub use_after_free: bool,
    /// Control expressions with constants near the 64-bit and 2^31 bounds (some overflow, some
    /// do not).
    pub extreme_constants: bool,
    /// Loops whose lower bound may exceed their upper bound.
    pub negative_extents: bool,
    /// Temporaries written only in part before they are read, or only through calls of helpers
    /// whose writes depend on the strides of their window arguments.
    pub uninit_reads: bool,
}

impl Hazards {
    /// Every hazard.
    pub const ALL: Hazards = Hazards {
        use_after_free: true,
        extreme_constants: true,
        negative_extents: true,
        uninit_reads: true,
    };
}

/// A random proc with a random name (`gen_` and 8 hex digits); see [`random_proc_named`].
pub fn random_proc(rng: &mut impl Rng, dram: &Arc<Memory>) -> GeneratedProc {
    let name = format!("gen_{:08x}", rng.gen::<u32>());
    random_proc_named(rng, dram, &name)
}

/// A random well-typed, in-bounds proc called `name`; its helpers are called `{name}_h0`, ...
/// Tensors live in `dram`; some temporaries use the prelude's `DRAM_STACK`.
pub fn random_proc_named(rng: &mut impl Rng, dram: &Arc<Memory>, name: &str) -> GeneratedProc {
    random_proc_with(rng, dram, name, Hazards::default())
}

/// A random proc as [`random_proc_named`], with `hazards` (which make it possibly unsafe, so
/// the checker may reject it). Without hazards the same seed gives the same proc.
pub fn random_proc_with(
    rng: &mut impl Rng,
    dram: &Arc<Memory>,
    name: &str,
    hazards: Hazards,
) -> GeneratedProc {
    let stack = weft_syntax::std_memory("DRAM_STACK").unwrap_or_else(|| dram.clone());
    let mut p = ProcBuilder::new(name, dram);
    let n_sizes = rng.gen_range(1..=3);
    let sizes: Vec<Expr> = (0..n_sizes).map(|k| p.size(&format!("n{k}"))).collect();
    // Bounded sizes keep the strides of windows passed to helpers in the entry range (±(2^31 - 1),
    // the control-arithmetic rule) for every size the checker considers.
    for n in &sizes {
        p.assert(n.clone().le(Expr::int(1000)));
    }
    let mut g = Gen {
        rng,
        dram: dram.clone(),
        stack,
        sizes,
        bufs: Vec::new(),
        loops: Vec::new(),
        guards: Vec::new(),
        helpers: Vec::new(),
        proc_name: name.to_string(),
        call_levels: 2,
        callable: Vec::new(),
        counter: 0,
        allocs: 0,
        hazards,
        in_data_index: false,
    };
    let n_tensors = g.rng.gen_range(1..=4);
    for k in 0..n_tensors {
        let rank = g.rng.gen_range(1..=3);
        let dims: Vec<Ext> = (0..rank).map(|_| g.random_ext()).collect();
        let elem = *DType::ALL.choose(g.rng).unwrap_or(&DType::F32);
        let shape = dims.iter().map(|d| g.ext_expr(d)).collect();
        let buf = p.tensor(&format!("A{k}"), elem, shape);
        g.add_buf(buf, dims, true, true);
    }
    if g.rng.gen_bool(0.4) {
        let elem = *DType::ALL.choose(g.rng).unwrap_or(&DType::I32);
        let buf = p.scalar("s", elem);
        g.add_buf(buf, vec![], true, true);
    }
    g.gen_block(p.body(), 0);
    let proc = p.finish();
    let mut values = HashMap::new();
    for k in 0..n_sizes {
        values.insert(format!("n{k}"), random_size(g.rng));
    }
    GeneratedProc {
        proc,
        sizes: values,
        helper_procs: g.helpers,
    }
}

/// A random value for a size argument: 1 a third of the time, otherwise a small number that is
/// mostly not a multiple of anything (2..=13, plus 17).
pub fn random_size(rng: &mut impl Rng) -> i64 {
    if rng.gen_bool(1.0 / 3.0) {
        1
    } else {
        *[2, 3, 5, 7, 4, 6, 9, 11, 13, 17].choose(rng).unwrap_or(&3)
    }
}

/// Fresh random values for the size arguments of `g` (for running one proc at several sizes).
pub fn random_sizes(rng: &mut impl Rng, g: &GeneratedProc) -> HashMap<String, i64> {
    g.size_names()
        .into_iter()
        .map(|n| (n, random_size(rng)))
        .collect()
}

/// A buffer extent, kept symbolic so that the generator knows which loop ranges fit which
/// dimensions. Every extent is positive for every positive size value.
#[derive(Clone, Debug, PartialEq)]
enum Ext {
    /// The k-th size argument.
    Size(usize),
    /// The k-th size argument plus a positive constant.
    SizePlus(usize, i64),
    /// A positive constant.
    Const(i64),
}

/// A buffer visible to the statement being generated.
struct BufInfo {
    buf: Buf,
    dims: Vec<Ext>,
    /// The symbol id of the argument or allocation this buffer views: buffers with the same
    /// root may alias, so a call never gets two of them.
    root: u64,
    /// Whether the buffer lives in DRAM (only those are passed to helpers, whose parameters are
    /// DRAM windows).
    in_dram: bool,
    writable: bool,
}

/// A loop variable running over `lo..hi - minus`.
struct LoopVar {
    var: Expr,
    lo: i64,
    hi: Ext,
    minus: i64,
}

/// The state of generating one proc body.
struct Gen<'r, R: Rng> {
    rng: &'r mut R,
    dram: Arc<Memory>,
    stack: Arc<Memory>,
    sizes: Vec<Expr>,
    bufs: Vec<BufInfo>,
    loops: Vec<LoopVar>,
    /// `(loop index, extent)`: facts `loops[i].var < extent` established by an enclosing `if`.
    guards: Vec<(usize, Ext)>,
    /// Every helper generated so far, callees before callers.
    helpers: Vec<Arc<Proc>>,
    proc_name: String,
    /// How many levels of calls may still be nested below this proc (0: it makes no calls).
    call_levels: usize,
    /// Helpers this proc already calls, by the element types of `x` and `y`, for reuse.
    callable: Vec<(DType, DType, Arc<Proc>)>,
    /// Numbers fresh local names.
    counter: u64,
    /// Temporaries allocated so far (at most 3 per proc keep the procs small).
    allocs: usize,
    hazards: Hazards,
    /// Set while no `clamp_index` may be generated: inside the value of one (they do not nest)
    /// and in window coordinates.
    in_data_index: bool,
}

/// The deepest nesting of `for`/`if` blocks.
const MAX_DEPTH: usize = 3;

impl<R: Rng> Gen<'_, R> {
    fn fresh(&mut self, prefix: &str) -> String {
        self.counter += 1;
        format!("{prefix}{}", self.counter)
    }

    fn add_buf(&mut self, buf: Buf, dims: Vec<Ext>, in_dram: bool, writable: bool) {
        let root = buf.sym.id();
        self.bufs.push(BufInfo {
            buf,
            dims,
            root,
            in_dram,
            writable,
        });
    }

    fn random_ext(&mut self) -> Ext {
        let k = self.rng.gen_range(0..self.sizes.len());
        match self.rng.gen_range(0..6) {
            // Sometimes 8 or 9: a loop of that many iterations whose body only assigns is
            // emitted as a short vector loop (with gathers in 32 bits in one version).
            0 if self.rng.gen_bool(0.25) => Ext::Const(self.rng.gen_range(8..=9)),
            // Sometimes 16 or 17: room for the strided lanes `2 x`, `2 x + 1` of such a loop.
            0 if self.rng.gen_bool(0.15) => Ext::Const(self.rng.gen_range(16..=17)),
            0 => Ext::Const(self.rng.gen_range(1..=4)),
            1 => Ext::SizePlus(k, self.rng.gen_range(1..=3)),
            _ => Ext::Size(k),
        }
    }

    /// An extent already used by a visible buffer (so loops over it can index it), or a new one.
    fn used_ext(&mut self) -> Ext {
        let used: Vec<Ext> = self.bufs.iter().flat_map(|b| b.dims.clone()).collect();
        match used.choose(self.rng) {
            Some(e) if self.rng.gen_bool(0.8) => e.clone(),
            _ => self.random_ext(),
        }
    }

    fn ext_expr(&self, e: &Ext) -> Expr {
        match e {
            Ext::Size(k) => self.sizes[*k].clone(),
            Ext::SizePlus(k, c) => &self.sizes[*k] + *c,
            Ext::Const(c) => Expr::int(*c),
        }
    }

    /// `extent - 1`, the largest valid index.
    fn ext_last(&self, e: &Ext) -> Expr {
        match e {
            Ext::Const(c) => Expr::int(c - 1),
            Ext::SizePlus(k, c) => &self.sizes[*k] + (c - 1),
            Ext::Size(k) => &self.sizes[*k] - 1,
        }
    }

    /// A control index expression that lies in `0..extent` whatever the sizes are; sometimes an
    /// index computed from data, `clamp_index(v, 0, extent - 1)`.
    fn index_for(&mut self, ext: &Ext) -> Expr {
        if !self.in_data_index && self.rng.gen_bool(0.05) {
            self.in_data_index = true;
            let v = self.read_where(DType::is_int);
            self.in_data_index = false;
            if let Some(v) = v {
                // Sometimes a value whose range takes care to bound (for the C's 32-bit
                // offsets of gathers): a quotient by a divisor that only looks like a power of
                // two in its type (`-(-128)` in i8), widened and scaled past 2^31.
                let v = match v.ty {
                    Ty::Data(d) if d.is_int() && self.rng.gen_bool(0.3) => {
                        let q = Expr::binary(BinOp::Div, v, self.power_of_two_divisor(d));
                        Expr::cast(DType::I64, q) * Expr::int(1i64 << 31)
                    }
                    _ => v,
                };
                return Expr::data_index(v, Expr::int(0), self.ext_last(ext));
            }
        }
        let mut cands: Vec<Expr> = vec![Expr::int(0)];
        for (k, v) in self.loops.iter().enumerate() {
            let x = &v.var;
            if v.hi == *ext {
                cands.push(x.clone());
                cands.push(x.clone());
                cands.push(self.ext_last(ext) - x);
                cands.push(Expr::max(x - 1, Expr::int(0)));
                if v.minus >= 1 {
                    cands.push(x + 1);
                }
            }
            if let (Ext::SizePlus(j, c), Ext::Size(j2)) = (ext, &v.hi) {
                if j == j2 {
                    cands.push(x.clone());
                    cands.push(x + *c);
                }
            }
            if let Ext::Const(c) = ext {
                cands.push(x % *c);
                if let Ext::Const(c2) = v.hi {
                    if c2 <= *c {
                        cands.push(x.clone());
                    }
                    // The lanes of an unrolled split by 2 (C's hoisted strided offsets, which
                    // accesses a literal apart share).
                    if 2 * c2 <= *c {
                        cands.push(Expr::int(2) * x.clone());
                        cands.push(Expr::int(2) * x.clone() + 1);
                    }
                }
            }
            if v.lo >= 0 {
                cands.push(Expr::min(x.clone(), self.ext_last(ext)));
                // A product of negated constants (each a term the C's 32-bit offsets assume
                // small), clamped into the extent: its interval must not overflow.
                if let Ext::Const(_) = v.hi {
                    let (c, n) = *[(32i64, 6), (3, 7), (1000, 4)]
                        .choose(self.rng)
                        .unwrap_or(&(32, 6));
                    let mut p = x.clone();
                    for _ in 0..self.rng.gen_range(2..=n) {
                        p = p * -Expr::int(c);
                    }
                    cands.push(Expr::max(Expr::min(p, self.ext_last(ext)), Expr::int(0)));
                }
            }
            if self.guards.iter().any(|(g, e)| *g == k && e == ext) {
                cands.push(x.clone());
                cands.push(x.clone());
            }
        }
        let i = cands
            .choose(self.rng)
            .cloned()
            .unwrap_or_else(|| Expr::int(0));
        if self.hazards.extreme_constants && self.rng.gen_bool(0.2) {
            return self.extreme(i);
        }
        i
    }

    /// An index that does not read data (a window coordinate: control values never depend
    /// on data).
    fn ctrl_index_for(&mut self, ext: &Ext) -> Expr {
        let was = std::mem::replace(&mut self.in_data_index, true);
        let i = self.index_for(ext);
        self.in_data_index = was;
        i
    }

    /// `e + c - c` or `e * c / c`, with `c` near a bound: the same value, through an
    /// intermediate that may not fit 64 bits (the checker must then reject it).
    fn extreme(&mut self, e: Expr) -> Expr {
        let c = *[
            (1i64 << 31) - 1,
            1 << 31,
            1 << 32,
            1 << 62,
            i64::MAX - 3,
            i64::MAX,
        ]
        .choose(self.rng)
        .unwrap_or(&(1 << 31));
        if self.rng.gen_bool(0.5) {
            e + c - c
        } else {
            let k = c.clamp(1, 1 << 40);
            e * k / k
        }
    }

    fn indices_for(&mut self, dims: &[Ext]) -> Vec<Expr> {
        dims.iter().map(|d| self.index_for(d)).collect()
    }

    // ----- statements -----

    fn gen_block(&mut self, b: &mut BlockBuilder, depth: usize) {
        let mark_bufs = self.bufs.len();
        let n = if depth == 0 {
            self.rng.gen_range(2..=5)
        } else {
            self.rng.gen_range(1..=3)
        };
        let mut allocated: Vec<Buf> = Vec::new();
        for _ in 0..n {
            match self.rng.gen_range(0..16) {
                0..=3 => self.gen_write(b),
                4..=8 if depth < MAX_DEPTH => self.gen_for(b, depth),
                9 if depth < MAX_DEPTH => self.gen_if(b, depth),
                10 | 11 if self.allocs < 3 => {
                    if let Some(t) = self.gen_alloc(b) {
                        allocated.push(t);
                    }
                }
                12 => self.gen_window(b),
                13 | 14 if self.call_levels > 0 && self.callable.len() < 3 => self.gen_call(b),
                15 if self.hazards.uninit_reads && self.allocs < 3 && self.rng.gen_bool(0.5) => {
                    allocated.push(self.gen_written_by_stride(b));
                }
                _ => self.gen_write(b),
            }
        }
        // Freeing at the very end of the block keeps every later statement clear of freed buffers.
        let mut used_after_free = Vec::new();
        for t in allocated {
            if !self.rng.gen_bool(0.5) {
                continue;
            }
            // A hazard: a window of it, used after the free.
            if self.hazards.use_after_free && self.rng.gen_bool(0.3) {
                if let Some(k) = self.bufs.iter().position(|x| x.buf.sym == t.sym) {
                    let dims = self.bufs[k].dims.clone();
                    let name = self.fresh("w");
                    let w = b.window(&name, &t, Vec::new());
                    used_after_free.push((w, dims));
                }
            }
            b.free(&t);
        }
        for (w, dims) in used_after_free {
            let idx = self.indices_for(&dims);
            let v = self.literal(w.elem);
            b.assign(&w, idx, v);
        }
        self.bufs.truncate(mark_bufs);
    }

    fn gen_write(&mut self, b: &mut BlockBuilder) {
        let writable: Vec<usize> = (0..self.bufs.len())
            .filter(|&k| self.bufs[k].writable)
            .collect();
        let Some(&k) = writable.choose(self.rng) else {
            return;
        };
        let dims = self.bufs[k].dims.clone();
        let buf = self.bufs[k].buf.clone();
        let idx = self.indices_for(&dims);
        let reduce = buf.elem != DType::Bool && self.rng.gen_bool(0.3);
        let rhs = if self.rng.gen_bool(0.1) {
            self.literal(buf.elem)
        } else {
            self.gen_expr(buf.elem, 3)
        };
        if reduce {
            b.reduce(&buf, idx, rhs);
        } else {
            b.assign(&buf, idx, rhs);
        }
    }

    fn gen_for(&mut self, b: &mut BlockBuilder, depth: usize) {
        let ext = self.used_ext();
        let name = self.fresh("i");
        let (lo, minus) = match self.rng.gen_range(0..5) {
            0 => (1, 0),
            1 => (0, 1),
            // A lower bound above 1 may exceed the extent (a negative extent).
            2 if self.hazards.negative_extents => (self.rng.gen_range(2..=4), 0),
            _ => (0, 0),
        };
        let hi = if minus == 1 {
            self.ext_last(&ext)
        } else {
            self.ext_expr(&ext)
        };
        b.for_(&name, lo, hi, |inner, var| {
            self.loops.push(LoopVar {
                var: var.clone(),
                lo,
                hi: ext,
                minus,
            });
            self.gen_block(inner, depth + 1);
            self.loops.pop();
        });
    }

    /// A control condition; the second value is a guard `loop var < extent` it establishes.
    fn gen_cond(&mut self) -> (Expr, Option<(usize, Ext)>) {
        if self.hazards.extreme_constants && self.rng.gen_bool(0.2) {
            let size = self.sizes[self.rng.gen_range(0..self.sizes.len())].clone();
            return (self.extreme(size).gt(Expr::int(0)), None);
        }
        let nl = self.loops.len();
        let size = self.sizes[self.rng.gen_range(0..self.sizes.len())].clone();
        if nl == 0 {
            let other = self.sizes[self.rng.gen_range(0..self.sizes.len())].clone();
            return match self.rng.gen_range(0..3) {
                0 => (size.lt(other), None),
                1 => ((&size % 2).eq_(Expr::int(1)), None),
                _ => (size.eq_(Expr::int(1)).not(), None),
            };
        }
        if self.rng.gen_bool(0.1) {
            let ranked: Vec<(Buf, usize)> = self
                .bufs
                .iter()
                .flat_map(|b| (0..b.dims.len()).map(move |d| (b.buf.clone(), d)))
                .collect();
            if let Some((buf, d)) = ranked.choose(self.rng) {
                return (buf.stride(*d).eq_(Expr::int(1)), None);
            }
        }
        let k = self.rng.gen_range(0..nl);
        let v = self.loops[k].var.clone();
        match self.rng.gen_range(0..7) {
            0 => {
                let w = self.loops[self.rng.gen_range(0..nl)].var.clone();
                (v.lt(w), None)
            }
            1 => ((&v % 2).eq_(Expr::int(0)), None),
            2 => ((&v + 1).lt(size), None),
            3 => (v.clone().gt(Expr::int(0)).and(v.lt(size)), None),
            4 => (v.eq_(Expr::int(0)).or(size.le(Expr::int(2))), None),
            _ => {
                let ext = self.used_ext();
                (v.lt(self.ext_expr(&ext)), Some((k, ext)))
            }
        }
    }

    fn gen_if(&mut self, b: &mut BlockBuilder, depth: usize) {
        let (cond, guard) = self.gen_cond();
        let with_else = self.rng.gen_bool(0.4);
        let mut then_b = BlockBuilder::default();
        let n = self.guards.len();
        self.guards.extend(guard);
        self.gen_block(&mut then_b, depth + 1);
        self.guards.truncate(n);
        let mut else_b = BlockBuilder::default();
        if with_else {
            self.gen_block(&mut else_b, depth + 1);
        }
        b.if_else(cond, |t| t.stmts = then_b.stmts, |e| e.stmts = else_b.stmts);
    }

    /// `alloc` a temporary and write every cell of it; afterwards it can be read.
    fn gen_alloc(&mut self, b: &mut BlockBuilder) -> Option<Buf> {
        self.allocs += 1;
        let rank = self.rng.gen_range(0..=2);
        let dims: Vec<Ext> = (0..rank).map(|_| self.used_ext()).collect();
        let elem = *DType::ALL.choose(self.rng)?;
        // The stack holds only buffers of a constant size (DRAM_STACK's `max_bytes`).
        let on_stack = dims.iter().all(|d| matches!(d, Ext::Const(_))) && self.rng.gen_bool(0.6);
        let mem = if on_stack {
            self.stack.clone()
        } else {
            self.dram.clone()
        };
        let shape = dims.iter().map(|d| self.ext_expr(d)).collect();
        let name = self.fresh("t");
        let t = b.alloc(&name, elem, shape, &mem);
        // A hazard: no write at all, or none of the first row.
        let first = match self.hazards.uninit_reads && self.rng.gen_bool(0.3) {
            true if dims.is_empty() || self.rng.gen_bool(0.5) => None,
            true => Some(1),
            false => Some(0),
        };
        if let Some(first) = first {
            self.init_nest(b, &t, &dims, (0, first), Vec::new());
        }
        self.add_buf(t.clone(), dims, !on_stack, true);
        Some(t)
    }

    /// A hazard: a 2×2 temporary written only through calls of a helper whose writes depend on
    /// the stride of its window argument (a row of the temporary has stride 1, a column 2), so
    /// which cells end up written depends on each call's orientation. Afterwards the temporary is
    /// read like any other: the checker must follow the strides into the helper.
    fn gen_written_by_stride(&mut self, b: &mut BlockBuilder) -> Buf {
        self.allocs += 1;
        let elem = DType::F32;
        let name = self.fresh("s");
        let two = || Expr::int(2);
        let t = b.alloc(&name, elem, vec![two(), two()], &self.dram);
        let helper = self.gen_stride_helper(elem);
        for _ in 0..self.rng.gen_range(2..=3) {
            let k = Expr::int(self.rng.gen_range(0..2));
            let coords = if self.rng.gen_bool(0.5) {
                vec![WinCoord::Point(k), WinCoord::Interval(Expr::int(0), two())]
            } else {
                vec![WinCoord::Interval(Expr::int(0), two()), WinCoord::Point(k)]
            };
            b.call(&helper, vec![t.win(coords)]);
        }
        // Read a cell at once into a buffer the caller sees (the first writable buffer is an
        // argument), so a cell the calls did not write shows as an error value in the output.
        let out = self
            .bufs
            .iter()
            .find(|x| x.writable && x.buf.elem != DType::Bool)
            .map(|x| (x.buf.clone(), x.dims.clone()));
        if let Some((out, dims)) = out {
            let idx = self.indices_for(&dims);
            let cell = vec![
                Expr::int(self.rng.gen_range(0..2)),
                Expr::int(self.rng.gen_range(0..2)),
            ];
            b.assign(
                &out,
                idx,
                Expr::cast(out.elem, Expr::read(&t.sym, elem, cell)),
            );
        }
        self.add_buf(t.clone(), vec![Ext::Const(2), Ext::Const(2)], true, true);
        t
    }

    /// `h(x: [elem][2])` writing `x[0]` or `x[1]` under conditions on `stride(x, 0)`.
    fn gen_stride_helper(&mut self, elem: DType) -> Arc<Proc> {
        let name = self.fresh(&format!("{}_s", self.proc_name));
        let mut p = ProcBuilder::new(&name, &self.dram);
        let x = p.window("x", elem, vec![Expr::int(2)]);
        for _ in 0..self.rng.gen_range(1..=2) {
            let cell = self.rng.gen_range(0..2);
            let mut cond = x.stride(0).eq_(Expr::int(1));
            if self.rng.gen_bool(0.5) {
                cond = cond.not();
            }
            let (v, w) = (self.literal(elem), self.literal(elem));
            let other = self.rng.gen_bool(0.8);
            p.body().if_else(
                cond,
                |t| {
                    t.assign(&x, vec![Expr::int(cell)], v);
                },
                |e| {
                    if other {
                        e.assign(&x, vec![Expr::int(1 - cell)], w);
                    }
                },
            );
        }
        let h = p.finish();
        self.helpers.push(h.clone());
        h
    }

    /// Loops over every dimension from `d` on, writing `t[idx...]` in the innermost one; the
    /// loop over dimension 0 starts at `first`.
    fn init_nest(
        &mut self,
        b: &mut BlockBuilder,
        t: &Buf,
        dims: &[Ext],
        (d, first): (usize, i64),
        idx: Vec<Expr>,
    ) {
        if d == dims.len() {
            let rhs = self.gen_expr(t.elem, 2);
            b.assign(t, idx, rhs);
            return;
        }
        let name = self.fresh("j");
        let ext = dims[d].clone();
        let hi = self.ext_expr(&ext);
        let lo = if d == 0 { first } else { 0 };
        b.for_(&name, lo, hi, |inner, var| {
            self.loops.push(LoopVar {
                var: var.clone(),
                lo,
                hi: ext,
                minus: 0,
            });
            let mut idx = idx;
            idx.push(var.clone());
            self.init_nest(inner, t, dims, (d + 1, 0), idx);
            self.loops.pop();
        });
    }

    /// Window coordinates for `dims`: `keep` dimensions become intervals, the others points.
    /// Returns the coordinates and the extents of the kept dimensions.
    fn window_coords(&mut self, dims: &[Ext], keep: &[bool]) -> (Vec<WinCoord>, Vec<Ext>) {
        let mut coords = Vec::new();
        let mut out = Vec::new();
        for (d, ext) in dims.iter().enumerate() {
            if !keep[d] {
                let i = self.ctrl_index_for(ext);
                coords.push(WinCoord::Point(i));
                continue;
            }
            let full = WinCoord::Interval(Expr::int(0), self.ext_expr(ext));
            match ext {
                Ext::SizePlus(k, c) if self.rng.gen_bool(0.5) => {
                    coords.push(WinCoord::Interval(Expr::int(*c), self.ext_expr(ext)));
                    out.push(Ext::Size(*k));
                }
                Ext::Const(c) if *c >= 2 && self.rng.gen_bool(0.5) => {
                    coords.push(WinCoord::Interval(Expr::int(1), Expr::int(*c)));
                    out.push(Ext::Const(c - 1));
                }
                _ => {
                    coords.push(full);
                    out.push(ext.clone());
                }
            }
        }
        (coords, out)
    }

    fn gen_window(&mut self, b: &mut BlockBuilder) {
        let cands: Vec<usize> = (0..self.bufs.len())
            .filter(|&k| !self.bufs[k].dims.is_empty())
            .collect();
        let Some(&k) = cands.choose(self.rng) else {
            return;
        };
        let dims = self.bufs[k].dims.clone();
        let keep: Vec<bool> = dims.iter().map(|_| self.rng.gen_bool(0.6)).collect();
        let (coords, out) = self.window_coords(&dims, &keep);
        let src = self.bufs[k].buf.clone();
        let (root, in_dram, writable) = (
            self.bufs[k].root,
            self.bufs[k].in_dram,
            self.bufs[k].writable,
        );
        let name = self.fresh("w");
        let w = b.window(&name, &src, coords);
        self.bufs.push(BufInfo {
            buf: w,
            dims: out,
            root,
            in_dram,
            writable,
        });
    }

    /// A call to a new helper `h(m: size, x: [tx][m], y: [ty][m])` that reads `x` and updates
    /// `y`, with windows of two buffers that cannot alias.
    fn gen_call(&mut self, b: &mut BlockBuilder) {
        let ys: Vec<(usize, usize)> = (0..self.bufs.len())
            .filter(|&k| self.bufs[k].writable && self.bufs[k].in_dram)
            .flat_map(|k| (0..self.bufs[k].dims.len()).map(move |d| (k, d)))
            .collect();
        let Some(&(yk, yd)) = ys.choose(self.rng) else {
            return;
        };
        let ext = self.bufs[yk].dims[yd].clone();
        let y_root = self.bufs[yk].root;
        let xs: Vec<(usize, usize)> = (0..self.bufs.len())
            .filter(|&k| self.bufs[k].in_dram && self.bufs[k].root != y_root)
            .flat_map(|k| {
                let dims = &self.bufs[k].dims;
                (0..dims.len())
                    .filter(|&d| dims[d] == ext)
                    .map(move |d| (k, d))
            })
            .collect();
        let Some(&(xk, xd)) = xs.choose(self.rng) else {
            return;
        };
        let (x_buf, x_dims) = (self.bufs[xk].buf.clone(), self.bufs[xk].dims.clone());
        let (y_buf, y_dims) = (self.bufs[yk].buf.clone(), self.bufs[yk].dims.clone());
        let keep_x: Vec<bool> = (0..x_dims.len()).map(|d| d == xd).collect();
        let keep_y: Vec<bool> = (0..y_dims.len()).map(|d| d == yd).collect();
        // Full intervals only: the helper's parameter extent is `ext` itself.
        let x_coords = self.full_window(&x_dims, &keep_x);
        let y_coords = self.full_window(&y_dims, &keep_y);
        let known = self
            .callable
            .iter()
            .find(|(tx, ty, _)| *tx == x_buf.elem && *ty == y_buf.elem)
            .map(|(_, _, h)| h.clone());
        let helper = match known {
            Some(h) if self.rng.gen_bool(0.6) => h,
            _ => {
                let h = self.gen_helper(x_buf.elem, y_buf.elem);
                self.callable.push((x_buf.elem, y_buf.elem, h.clone()));
                self.helpers.push(h.clone());
                h
            }
        };
        let m = self.ext_expr(&ext);
        b.call(&helper, vec![m, x_buf.win(x_coords), y_buf.win(y_coords)]);
    }

    fn full_window(&mut self, dims: &[Ext], keep: &[bool]) -> Vec<WinCoord> {
        dims.iter()
            .zip(keep)
            .map(|(ext, &k)| {
                if k {
                    WinCoord::Interval(Expr::int(0), self.ext_expr(ext))
                } else {
                    WinCoord::Point(self.ctrl_index_for(ext))
                }
            })
            .collect()
    }

    fn gen_helper(&mut self, tx: DType, ty: DType) -> Arc<Proc> {
        let name = format!("{}_h{}", self.proc_name, self.callable.len());
        let mut p = ProcBuilder::new(&name, &self.dram);
        let m = p.size("m");
        let x = p.window("x", tx, vec![m.clone()]);
        let y = p.window("y", ty, vec![m.clone()]);
        let mut sub = Gen {
            rng: &mut *self.rng,
            dram: self.dram.clone(),
            stack: self.stack.clone(),
            sizes: vec![m],
            bufs: Vec::new(),
            loops: Vec::new(),
            guards: Vec::new(),
            helpers: Vec::new(),
            proc_name: name.clone(),
            call_levels: self.call_levels - 1,
            callable: Vec::new(),
            counter: 0,
            allocs: 0,
            hazards: self.hazards,
            in_data_index: false,
        };
        sub.add_buf(x, vec![Ext::Size(0)], true, false);
        sub.add_buf(y, vec![Ext::Size(0)], true, true);
        sub.gen_block(p.body(), 1);
        // The helper's own callees come before it, so the list stays in dependency order.
        let nested = std::mem::take(&mut sub.helpers);
        self.helpers.extend(nested);
        p.finish()
    }

    // ----- data expressions -----

    /// A literal of type `dtype`, untyped the way the parser makes it (an int or float literal is
    /// typed by its context), so a literal must only appear where context types it: as the
    /// right-hand side of a write, or beside a non-literal operand.
    fn literal(&mut self, dtype: DType) -> Expr {
        match dtype {
            DType::Bool => Expr::bool(self.rng.gen_bool(0.5)),
            DType::F32 | DType::F64 => {
                if self.rng.gen_bool(0.1) {
                    // Large powers of two (exact in f32 and f64): they reach the saturating
                    // float-to-int casts and overflow to infinity.
                    let k = *[31, 32, 40, 63, 64, 100].choose(self.rng).unwrap_or(&31);
                    let sign = if self.rng.gen_bool(0.5) { -1.0 } else { 1.0 };
                    Expr::float(sign * 2f64.powi(k))
                } else if self.rng.gen_bool(0.3) {
                    Expr::int(self.rng.gen_range(-4..=4))
                } else {
                    Expr::float(self.rng.gen_range(-16..=16) as f64 / 4.0)
                }
            }
            d => {
                let (lo, hi) = d.int_range().unwrap_or((0, 1));
                let v: i128 = match self.rng.gen_range(0..8) {
                    0 => lo,
                    1 => hi,
                    _ => self.rng.gen_range(-3..=5i128).clamp(lo, hi),
                };
                Expr::int(v as i64)
            }
        }
    }

    /// An operand: a literal a quarter of the time, otherwise a non-literal expression.
    fn operand(&mut self, dtype: DType, depth: usize) -> Expr {
        if self.rng.gen_bool(0.25) {
            self.literal(dtype)
        } else {
            self.gen_expr(dtype, depth)
        }
    }

    /// Reads of visible buffers with element type `dtype` (any type when `dtype` is `None`).
    fn read_of(&mut self, dtype: Option<DType>) -> Option<Expr> {
        self.read_where(|e| dtype.is_none_or(|d| e == d))
    }

    /// A read of a visible buffer whose element type satisfies `elem_ok`.
    fn read_where(&mut self, elem_ok: impl Fn(DType) -> bool) -> Option<Expr> {
        let cands: Vec<usize> = (0..self.bufs.len())
            .filter(|&k| elem_ok(self.bufs[k].buf.elem))
            .collect();
        let &k = cands.choose(self.rng)?;
        let dims = self.bufs[k].dims.clone();
        let buf = self.bufs[k].buf.clone();
        let idx = self.indices_for(&dims);
        Some(buf.at(idx))
    }

    fn leaf(&mut self, dtype: DType) -> Expr {
        if self.rng.gen_bool(0.85) {
            if let Some(r) = self.read_of(Some(dtype)) {
                return r;
            }
        }
        if !self.loops.is_empty() && self.rng.gen_bool(0.3) {
            let k = self.rng.gen_range(0..self.loops.len());
            return Expr::cast(dtype, self.loops[k].var.clone());
        }
        match self.read_of(None) {
            Some(r) if r.ty == Ty::Data(dtype) => r,
            Some(r) => Expr::cast(dtype, r),
            // Every generated proc has a buffer; this is only a fallback.
            None => Expr::cast(dtype, self.sizes[0].clone()),
        }
    }

    fn binary(&mut self, op: BinOp, dtype: DType, depth: usize) -> Expr {
        if matches!(op, BinOp::Div | BinOp::Mod) && dtype.is_int() && self.rng.gen_bool(0.25) {
            let a = self.gen_expr(dtype, depth - 1);
            return Expr::binary(op, a, self.power_of_two_divisor(dtype));
        }
        let a = self.gen_expr(dtype, depth - 1);
        let b = self.operand(dtype, depth - 1);
        if self.rng.gen_bool(0.5) {
            Expr::binary(op, a, b)
        } else {
            Expr::binary(op, b, a)
        }
    }

    /// A constant divisor the C backend may turn into a shift and a mask: a power of two the
    /// type holds, or one that only looks like one (`-(-128)` in i8 is -128).
    fn power_of_two_divisor(&mut self, dtype: DType) -> Expr {
        let bits = dtype.bits().min(63);
        let top = if dtype.is_signed() { bits - 1 } else { bits };
        match self.rng.gen_range(0..3) {
            0 => Expr::int(1i64 << self.rng.gen_range(1..top.max(2))),
            1 if dtype.is_signed() => -Expr::int(-(1i64 << (bits - 1))),
            _ => Expr::int(if top > 2 { 1i64 << (top - 1) } else { 2 }),
        }
    }

    fn select(&mut self, dtype: DType, depth: usize) -> Expr {
        let cond = if self.rng.gen_bool(0.3) {
            self.gen_cond().0
        } else {
            self.gen_expr(DType::Bool, depth - 1)
        };
        let a = self.gen_expr(dtype, depth - 1);
        let b = self.operand(dtype, depth - 1);
        if self.rng.gen_bool(0.5) {
            Expr::select(cond, a, b)
        } else {
            Expr::select(cond, b, a)
        }
    }

    fn other_cast(&mut self, dtype: DType, depth: usize) -> Expr {
        let from = *DType::ALL.choose(self.rng).unwrap_or(&DType::I32);
        Expr::cast(dtype, self.gen_expr(from, depth - 1))
    }

    /// A non-literal data expression of type `dtype`, at most `depth` operators deep.
    fn gen_expr(&mut self, dtype: DType, depth: usize) -> Expr {
        if depth == 0 || self.rng.gen_bool(0.3) {
            return self.leaf(dtype);
        }
        match dtype {
            DType::Bool => match self.rng.gen_range(0..7) {
                0..=2 => {
                    let t = *DType::ALL.choose(self.rng).unwrap_or(&DType::I32);
                    let op = *[
                        BinOp::Lt,
                        BinOp::Le,
                        BinOp::Gt,
                        BinOp::Ge,
                        BinOp::Eq,
                        BinOp::Ne,
                    ]
                    .choose(self.rng)
                    .unwrap_or(&BinOp::Lt);
                    if t == DType::Bool && !matches!(op, BinOp::Eq | BinOp::Ne) {
                        self.binary(BinOp::Eq, t, depth)
                    } else {
                        self.binary(op, t, depth)
                    }
                }
                3 => self.binary(BinOp::And, dtype, depth),
                4 => self.binary(BinOp::Or, dtype, depth),
                5 => Expr::unary(UnOp::Not, self.gen_expr(dtype, depth - 1)),
                _ => self.select(dtype, depth),
            },
            d if d.is_int() => match self.rng.gen_range(0..12) {
                0 => self.binary(BinOp::Add, d, depth),
                1 => self.binary(BinOp::Sub, d, depth),
                2 => self.binary(BinOp::Mul, d, depth),
                3 => self.binary(BinOp::Div, d, depth),
                4 => self.binary(BinOp::Mod, d, depth),
                5 => self.binary(BinOp::Min, d, depth),
                6 => self.binary(BinOp::Max, d, depth),
                7 => Expr::unary(UnOp::Neg, self.gen_expr(d, depth - 1)),
                8 => Expr::math(MathFn::Abs, vec![self.gen_expr(d, depth - 1)]),
                9 => self.select(d, depth),
                _ => self.other_cast(d, depth),
            },
            d => match self.rng.gen_range(0..14) {
                0 => self.binary(BinOp::Add, d, depth),
                1 => self.binary(BinOp::Sub, d, depth),
                2 => self.binary(BinOp::Mul, d, depth),
                3 => self.binary(BinOp::Div, d, depth),
                4 => self.binary(BinOp::Min, d, depth),
                5 => self.binary(BinOp::Max, d, depth),
                6 => Expr::unary(UnOp::Neg, self.gen_expr(d, depth - 1)),
                7 => {
                    let a = Expr::math(MathFn::Abs, vec![self.gen_expr(d, depth - 1)]);
                    Expr::math(MathFn::Sqrt, vec![a])
                }
                8 => Expr::math(MathFn::Floor, vec![self.gen_expr(d, depth - 1)]),
                9 => Expr::math(MathFn::Ceil, vec![self.gen_expr(d, depth - 1)]),
                10 => Expr::math(MathFn::Abs, vec![self.gen_expr(d, depth - 1)]),
                11 => self.select(d, depth),
                _ => self.other_cast(d, depth),
            },
        }
    }
}
