//! The scheduling primitives' signatures, declared once.
//!
//! The text parser reads a step's arguments by the kinds declared here, the scheduler
//! (`weft-sched`'s `script`) dispatches on the same table, the messages for a wrong number of
//! arguments or an unknown primitive come from it, and `docs/schedules.md` is generated from it
//! ([`reference_markdown`]). A primitive's safety condition is stated in the doc comment of its
//! module in `weft-sched/src/prims/`; [`Primitive::condition`] is its one-line summary.

/// How one argument of a step is written and read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    /// A statement: a loop variable's name (`i`, the first loop over `i`) or a quoted pattern
    /// (`"C +="`, `"for i #1"`, `"alloc t"`).
    Stmt,
    /// An integer literal.
    Int,
    /// A name the step introduces (it must not be in use).
    NewName,
    /// One of the listed words.
    Word(&'static [&'static str]),
    /// A control integer expression over the control arguments and enclosing loop variables.
    IntExpr,
    /// A condition: a boolean control expression.
    Cond,
    /// A data expression (buffer reads, literals, operators) in the scope of the statement.
    DataExpr,
    /// An expression of either kind (data or control) in the scope of the statement: one to find
    /// among the statement's own expressions, or to put in its place.
    Expr,
    /// A value for a config field: a control expression for a control field; for a data field a
    /// literal or, where the primitive allows it, a data expression.
    Value,
    /// A region of a buffer: `A[lo:hi, lo:hi, ...]`.
    Region,
    /// A window of a buffer, as a call passes it: `A[i, lo:hi, ...]` (points and intervals).
    Window,
    /// The name of a memory (`DRAM`, `DRAM_STACK`, `AVX512`, ...).
    Memory,
    /// A data type (`f32`, `i8`, ...).
    DType,
    /// The name of a proc or instruction of the module (or one the schedule created earlier).
    Proc,
    /// The name of a buffer in scope.
    Buffer,
    /// A config field `Cfg.field`.
    ConfigField,
    /// `NAME = integer`.
    Binding,
    /// A func of the pipeline (pipeline directives).
    Func,
    /// A loop variable of the stage a directive applies to (pipeline directives).
    Var,
}

impl ParamKind {
    /// How an argument of this kind is written, for references and messages.
    pub fn form(self) -> String {
        match self {
            ParamKind::Stmt => "a loop variable or a quoted pattern".into(),
            ParamKind::Int => "an integer".into(),
            ParamKind::NewName => "a new name".into(),
            ParamKind::Word(ws) => format!("one of {}", quoted_list(ws)),
            ParamKind::IntExpr => "a control expression".into(),
            ParamKind::Cond => "a condition".into(),
            ParamKind::DataExpr => "a data expression".into(),
            ParamKind::Expr => "an expression".into(),
            ParamKind::Value => "a value".into(),
            ParamKind::Region => "a region `A[lo:hi, ...]`".into(),
            ParamKind::Window => "a window `A[i, lo:hi, ...]`".into(),
            ParamKind::Memory => "a memory".into(),
            ParamKind::DType => "a data type".into(),
            ParamKind::Proc => "a proc name".into(),
            ParamKind::Buffer => "a buffer name".into(),
            ParamKind::ConfigField => "a config field `Cfg.field`".into(),
            ParamKind::Binding => "`NAME = integer`".into(),
            ParamKind::Func => "a func name".into(),
            ParamKind::Var => "a loop variable of the stage".into(),
        }
    }
}

/// One parameter of a primitive.
#[derive(Clone, Copy, Debug)]
pub struct Param {
    pub name: &'static str,
    pub kind: ParamKind,
    /// What the argument is, in a few words ("the first loop").
    pub role: &'static str,
    /// For an optional parameter, what leaving it out means.
    pub default: Option<&'static str>,
}

/// A scheduling primitive's signature and summary.
#[derive(Clone, Copy, Debug)]
pub struct Primitive {
    pub name: &'static str,
    pub params: &'static [Param],
    /// The last parameter may be repeated (one or more times).
    pub repeated: bool,
    /// What the step does.
    pub effect: &'static str,
    /// When it is accepted (the full condition is in the primitive's module documentation).
    pub condition: &'static str,
}

impl Primitive {
    /// The fewest arguments a step may have.
    pub fn min_args(&self) -> usize {
        self.params.iter().filter(|p| p.default.is_none()).count()
    }

    /// The most arguments a step may have (`None`: any number).
    pub fn max_args(&self) -> Option<usize> {
        (!self.repeated).then_some(self.params.len())
    }

    /// The parameter an argument at position `k` fills.
    pub fn param(&self, k: usize) -> Option<&'static Param> {
        match self.params.get(k) {
            Some(p) => Some(p),
            None if self.repeated => self.params.last(),
            None => None,
        }
    }

    /// Whether `n` arguments are a valid count.
    pub fn accepts(&self, n: usize) -> bool {
        n >= self.min_args() && self.max_args().is_none_or(|m| n <= m)
    }

    /// `split(loop, factor, outer, inner[, tail])`.
    pub fn usage(&self) -> String {
        let mut out = format!("{}(", self.name);
        for (k, p) in self.params.iter().enumerate() {
            let sep = if k == 0 { "" } else { ", " };
            if p.default.is_some() {
                out.push_str(&format!("[{sep}{}]", p.name));
            } else {
                out.push_str(&format!("{sep}{}", p.name));
            }
            if self.repeated && k + 1 == self.params.len() {
                out.push_str(", ...");
            }
        }
        out.push(')');
        out
    }

    /// The message for a step with the wrong number of arguments:
    /// "`fuse` takes 1 argument: the first loop; got 2".
    pub fn arity_message(&self, got: usize) -> String {
        let (lo, hi) = (self.min_args(), self.max_args());
        let count = match hi {
            Some(h) if h == lo => format!("{lo} argument{}", plural(lo)),
            Some(h) => format!("{lo} to {h} arguments"),
            None => format!("{lo} or more arguments"),
        };
        let roles: Vec<String> = self
            .params
            .iter()
            .map(|p| match p.default {
                Some(_) => format!("{} (optional)", p.role),
                None => p.role.to_string(),
            })
            .collect();
        let roles = if roles.is_empty() {
            String::new()
        } else {
            format!(": {}", roles.join(", "))
        };
        format!("`{}` takes {count}{roles}; got {got}", self.name)
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn quoted_list(ws: &[&str]) -> String {
    let v: Vec<String> = ws.iter().map(|w| format!("`{w}`")).collect();
    v.join(", ")
}

/// Tail strategies of `split`.
pub const TAILS: &[&str] = &["guard", "cut", "cut_and_guard", "perfect"];

/// The modes of `stage_mem`.
pub const STAGINGS: &[&str] = &["copy", "accumulate"];

const fn req(name: &'static str, kind: ParamKind, role: &'static str) -> Param {
    Param {
        name,
        kind,
        role,
        default: None,
    }
}

const fn opt(
    name: &'static str,
    kind: ParamKind,
    role: &'static str,
    default: &'static str,
) -> Param {
    Param {
        name,
        kind,
        role,
        default: Some(default),
    }
}

const LOOP: Param = req("loop", ParamKind::Stmt, "the loop");
const OUTER: Param = req("outer", ParamKind::NewName, "the outer loop's name");
const INNER: Param = req("inner", ParamKind::NewName, "the inner loop's name");
const STMT: Param = req("stmt", ParamKind::Stmt, "the statement");
const ALLOC: Param = req("alloc", ParamKind::Stmt, "the allocation (`\"alloc t\"`)");

const fn prim(
    name: &'static str,
    params: &'static [Param],
    effect: &'static str,
    condition: &'static str,
) -> Primitive {
    Primitive {
        name,
        params,
        repeated: false,
        effect,
        condition,
    }
}

/// Every primitive a text schedule can use, in the order of the reference.
pub const PRIMITIVES: &[Primitive] = &[
    // ----- loops -----
    prim(
        "split",
        &[
            LOOP,
            req("factor", ParamKind::Int, "the factor"),
            OUTER,
            INNER,
            opt(
                "tail",
                ParamKind::Word(TAILS),
                "the tail strategy",
                "`guard`",
            ),
        ],
        "`for i in lo..hi` becomes `for outer { for inner in 0..factor { i = lo + factor * outer + inner } }`; the iterations past `hi` are guarded (`guard`), run by a loop of their own (`cut`), both (`cut_and_guard`), or proved not to exist (`perfect`).",
        "the factor is positive; the new names are unused; the code in the loop writes no config field its bounds read; the new bounds fit the control-arithmetic rules.",
    ),
    prim(
        "reorder_loops",
        &[req("loop", ParamKind::Stmt, "the outer loop")],
        "Swaps the loop with the loop that is its whole body.",
        "the inner loop's bounds do not use the outer variable (and, where they read a config field, the outer loop runs at least once), and every two iterations whose order changes commute.",
    ),
    prim(
        "fuse",
        &[req("loop", ParamKind::Stmt, "the first loop")],
        "Fuses the loop with the loop right after it (same bounds) into one loop.",
        "the bounds are equal, and no iteration of the second loop reads or writes what a later iteration of the first loop writes or reads.",
    ),
    prim(
        "fission",
        &[
            req("stmt", ParamKind::Stmt, "the last statement of the first part"),
            opt("lifts", ParamKind::Int, "how many enclosing loops and `if`s to split", "1"),
        ],
        "Splits the enclosing loop after the statement into two loops with the same bounds, or the enclosing `if` (the statement in its then-branch) into two `if`s with the same condition; with `lifts` = n, n levels up, each splitting around the first part the level below made.",
        "at each loop, the statements after it in every iteration do not conflict with the statements before it in later iterations, and the code writes no config field the bounds read; at each `if`, the first part and the else-branch write no config field the condition reads.",
    ),
    prim(
        "remove_loop",
        &[LOOP],
        "Replaces a loop by one run of its body.",
        "the body does not use the loop variable, the loop runs at least once, and running the body twice is the same as once (no reductions; no write overlaps a read).",
    ),
    prim(
        "unroll",
        &[LOOP],
        "Replaces a loop with constant bounds by copies of its body.",
        "the bounds are integer constants and the loop runs at most 4096 times.",
    ),
    prim(
        "parallelize",
        &[LOOP],
        "Makes the loop a parallel loop (`par`), compiled as an OpenMP worksharing loop.",
        "the iterations are proved race-free: no two write the same cell, or one writes what another reads, or a config field is written.",
    ),
    prim(
        "add_loop",
        &[
            STMT,
            req("name", ParamKind::NewName, "the new loop's name"),
            req("hi", ParamKind::IntExpr, "its upper bound"),
        ],
        "Wraps the statement in `for name in 0..hi`.",
        "`1 <= hi <= 2^31 - 1`, and, unless `hi` is 1, running the statement twice is the same as once (no reductions; no write overlaps a read).",
    ),
    prim(
        "cut",
        &[LOOP, req("point", ParamKind::IntExpr, "the cut point")],
        "`for i in lo..hi` becomes `for i in lo..point` followed by `for i in point..hi`.",
        "`lo <= point <= hi`; the body writes no config field the bounds read.",
    ),
    prim(
        "shift",
        &[LOOP, req("start", ParamKind::IntExpr, "the new lower bound")],
        "Shifts the loop to start at `start`, adjusting the uses of its variable.",
        "the body writes no config field the bounds read; the shifted bounds fit.",
    ),
    prim(
        "lift_if",
        &[req("loop", ParamKind::Stmt, "the loop whose body is an `if`")],
        "Moves an `if` whose condition does not depend on the loop out of it.",
        "the condition does not use the loop variable and reads nothing the loop writes.",
    ),
    // ----- statements -----
    prim(
        "reorder_stmts",
        &[req("stmt", ParamKind::Stmt, "the first of two statements")],
        "Swaps the statement with the one after it.",
        "the two statements commute: neither writes what the other reads or writes.",
    ),
    prim(
        "add_guard",
        &[STMT, req("cond", ParamKind::Cond, "the guard")],
        "Wraps the statement in `if cond`.",
        "the condition is proved to hold wherever the statement runs.",
    ),
    prim(
        "specialize",
        &[STMT, req("cond", ParamKind::Cond, "the condition")],
        "Replaces the statement by `if cond { stmt } else { stmt }`, so each copy can be scheduled for its case.",
        "the statement is not an allocation, window or `free`, and the condition is a control condition over names in scope.",
    ),
    prim(
        "eliminate_dead_code",
        &[req("stmt", ParamKind::Stmt, "the loop or `if`")],
        "Removes a loop that never runs, or an `if` whose condition is always or never true.",
        "the solver proves the condition constant, or the loop's extent at most 0, from the facts at the statement.",
    ),
    prim(
        "insert_pass",
        &[req("stmt", ParamKind::Stmt, "the statement to insert `pass` before")],
        "Inserts a `pass` before a statement (a place for later steps to name).",
        "always (an equivalence).",
    ),
    prim(
        "delete_pass",
        &[req("stmt", ParamKind::Stmt, "the `pass` or block of passes")],
        "Deletes a statement that does nothing.",
        "it is a `pass` or contains only passes.",
    ),
    prim(
        "inline_window",
        &[req("stmt", ParamKind::Stmt, "the window statement (`\"let w\"`)")],
        "Replaces every use of the window's name in the rest of its block by the window it stands for (accesses, windows of it, strides) and removes the window statement.",
        "the window's coordinates read no config field that the statements after it write.",
    ),
    prim(
        "simplify",
        &[],
        "Simplifies the control arithmetic of the whole proc (constant folding, affine normal forms).",
        "always (an equivalence).",
    ),
    prim(
        "inline_assign",
        &[req("assign", ParamKind::Stmt, "the assignment to a scalar (`\"t =\"`)")],
        "Replaces the later reads of the assigned cell (same indices) by the assigned value, and removes the assignment (the inverse of `bind_expr`).",
        "the assignment is to an allocated buffer, the value does not read that cell, and nothing it reads is written before the reads it replaces.",
    ),
    prim(
        "commute_expr",
        &[
            STMT,
            req("expr", ParamKind::Expr, "the operation `a ∘ b` to swap, as written in the statement"),
        ],
        "Swaps the operands of every occurrence of a commutative operation among the statement's own expressions: `a + b` becomes `b + a` (also `*`, `min`, `max`, `and`, `or`, `==`, `!=`).",
        "the operator commutes in its type: always for `+`, `*`, `==`, `!=`, `and`, `or` (IEEE `+` and `*` commute exactly); `min` and `max` on integers only (on floats they differ for NaN and signed zeros). An exact equivalence.",
    ),
    prim(
        "left_reassociate_expr",
        &[
            STMT,
            req("expr", ParamKind::Expr, "the expression `a ∘ (b ∘ c)`, as written in the statement"),
        ],
        "Regroups every occurrence of `a ∘ (b ∘ c)` among the statement's own expressions as `(a ∘ b) ∘ c`, for `+`, `*`, `min`, `max`, `and`, `or`.",
        "the operator is associative in its type: exact on control values (the new intermediate must not overflow) and data integers (wrapping); on floats only `+` and `*`, which changes the rounding: the documented reassociation choice (DESIGN.md §2, as in Exo), refused in an instruction's body.",
    ),
    prim(
        "rewrite_expr",
        &[
            STMT,
            req("expr", ParamKind::Expr, "the control expression to replace, as written in the statement"),
            req("new", ParamKind::Expr, "the expression to put in its place"),
        ],
        "Replaces every occurrence of a control (index, size or condition) expression among the statement's own expressions by another.",
        "both are control expressions of one type with solver terms, and the solver proves them equal from the facts at the statement (preconditions, enclosing loop bounds and conditions); otherwise its counterexample is reported.",
    ),
    prim(
        "fold_into_reduce",
        &[req("assign", ParamKind::Stmt, "the assignment `x[i] = x[i] + e`")],
        "Turns `x[i] = x[i] + e` (or `x[i] = e + x[i]`) into the reduction `x[i] += e`.",
        "the read is of the same buffer name and of the assigned cell (indices written alike or proved equal), of numbers. An exact equivalence.",
    ),
    prim(
        "merge_writes",
        &[req("stmt", ParamKind::Stmt, "the first of two writes of one cell")],
        "Merges an assignment or reduction and the next statement, which writes the same cell, into one: `x = a; x = b` into `x = b[x ↦ a]`, `x = a; x += b` into `x = a + b[x ↦ a]`, `x += a; x += b` into `x += a + b[x ↦ x + a]`.",
        "the two writes are of one buffer name and provably one cell (no index from data), and no read of the second value, other than of the cell written alike, may touch the cell. Exact, except `+=` twice on floats: a reassociation (the documented choice of DESIGN.md §2, as in Exo).",
    ),
    prim(
        "split_write",
        &[req("stmt", ParamKind::Stmt, "the assignment or reduction `x = a + b`")],
        "Splits `x = a + b` into `x = a; x += b`, and `x += a + b` into `x += a; x += b` (the inverse of `merge_writes`).",
        "no index is computed from data and no read of `b` may touch the written cell (proved). Exact for an assignment; for a reduction of floats a reassociation (the documented choice of DESIGN.md §2, as in Exo).",
    ),
    prim(
        "lift_reduce_constant",
        &[req("assign", ParamKind::Stmt, "the assignment `x = 0` before the loop")],
        "Takes a loop-invariant factor out of a sum: `x = 0; for k { x += c * e }` becomes `x = 0; for k { x += e }; x = c * x`.",
        "the loop's body is one reduction into the assigned cell (proved for every iteration), `c` uses no loop variable and neither `c` nor `e` reads the cell; the loop provably runs, unless `c` reads no buffer and the sum is of integers. Exact on integers; on floats a distribution of `*` over the sum (the documented reassociation choice of DESIGN.md §2, as in Exo).",
    ),
    prim(
        "bind_expr",
        &[
            STMT,
            req("expr", ParamKind::DataExpr, "the expression to bind"),
            req("name", ParamKind::NewName, "the new scalar's name"),
            opt("memory", ParamKind::Memory, "its memory", "`DRAM_STACK`"),
            opt(
                "count",
                ParamKind::Int,
                "how many consecutive statements, from the one named, read the scalar",
                "1",
            ),
        ],
        "Computes the expression into a new scalar just before the assignment or reduction (the first of `count`), and reads the scalar where the expression occurred in them.",
        "the statements are assignments or reductions whose right-hand sides contain the expression; over several, those before the last write no location it reads.",
    ),
    // ----- buffers -----
    prim(
        "stage_mem",
        &[
            STMT,
            req("region", ParamKind::Region, "the region to stage"),
            req("name", ParamKind::NewName, "the staging buffer's name"),
            opt(
                "memory",
                ParamKind::Memory,
                "its memory",
                "`DRAM_STACK` when the tile is proved to fit its 64 KiB, `DRAM` otherwise",
            ),
            opt(
                "mode",
                ParamKind::Word(STAGINGS),
                "`copy`, or `accumulate`: the tile starts at zero and is added to the buffer after the statement",
                "`copy`",
            ),
        ],
        "Copies the region into a new buffer before the statement, rewrites the statement's accesses of the region to the buffer, and copies what it writes back after. A region that may leave the buffer (an edge tile) is copied with guards, only the cells inside the buffer (zeros into the others on the way in), in the form masked loads and stores match. In `accumulate` mode (Exo's `accum=True`) the tile starts at zero and is added into the buffer after the statement (`A[..] += T[..]`): for floats a reassociation of the reduction, which naming the mode chooses.",
        "the statement accesses the buffer only inside the region (and, where the copies are guarded, inside the buffer); the region is not empty; the bounds read no config field the statement writes, and the buffer's extents none at all; the tile fits the memory; in `accumulate` mode, the statement only reduces into the buffer (`+=`: no read, no plain write) of numbers.",
    ),
    prim(
        "lift_alloc",
        &[
            ALLOC,
            opt("levels", ParamKind::Int, "how many loops or `if`s to move it out of, one at a time (all or none)", "1"),
        ],
        "Moves an allocation out of the loop or `if` around it (`levels` times).",
        "its shape is the same in every iteration, and no iteration reads a cell an earlier one wrote; out of an `if`, its shape reads no config field, is positive where the branch is not taken, and its memory has a capacity (a stack or registers).",
    ),
    prim(
        "sink_alloc",
        &[ALLOC],
        "Moves an allocation into the loop or `if` right after it, the only statement that uses it.",
        "the buffer is used only there and no iteration reads what an earlier one wrote.",
    ),
    prim(
        "set_memory",
        &[ALLOC, req("memory", ParamKind::Memory, "the memory")],
        "Places the buffer in another memory.",
        "the memory's rules hold for every access (addressability, innermost dimension, size limit).",
    ),
    prim(
        "set_precision",
        &[ALLOC, req("type", ParamKind::DType, "the element type")],
        "Changes the buffer's element type (a precision choice, not an equivalence).",
        "the new type is a data type of the same kind.",
    ),
    prim(
        "expand_dim",
        &[
            ALLOC,
            req("extent", ParamKind::IntExpr, "the new dimension's extent"),
            req("index", ParamKind::IntExpr, "the index every access uses"),
        ],
        "Adds a leading dimension to the buffer, indexed by `index` in every access.",
        "`0 < extent <= 2^31 - 1`, `0 <= index < extent` wherever the buffer is used, and the buffer still fits its memory.",
    ),
    prim(
        "divide_dim",
        &[
            ALLOC,
            req("dim", ParamKind::Int, "the dimension (from 0)"),
            req("factor", ParamKind::Int, "the constant divisor"),
        ],
        "Splits dimension `dim` of the buffer into two of extents `extent / factor` and `factor`.",
        "the extent is proved to be a multiple of the factor.",
    ),
    prim(
        "reuse_buffer",
        &[
            req("alloc", ParamKind::Stmt, "the allocation of the new buffer"),
            req("buffer", ParamKind::Buffer, "the dead buffer to reuse"),
        ],
        "Makes the new buffer use the storage of a buffer that is no longer used.",
        "same shape, type and memory; the old buffer is never read again.",
    ),
    // ----- buffer layouts and loop shapes (Exo's rearrange_dim, resize_dim, unroll_buffer,
    // join_loops, mult_loops, divide_with_recompute, autolift_alloc, autosink_alloc,
    // lift_scope) -----
    Primitive {
        name: "rearrange_dim",
        params: &[
            ALLOC,
            req("perm", ParamKind::Int, "the old dimension that becomes each new dimension, in order"),
        ],
        repeated: true,
        effect: "Permutes the dimensions of a local buffer: new dimension `k` is old dimension `perm[k]`; every access and window is permuted alike.",
        condition: "the numbers are a permutation of the dimensions, and every stride code can see (`stride(t, d)`, a window spanning dimension `d`) keeps its value: the dimensions after `d` stay the same set.",
    },
    prim(
        "resize_dim",
        &[
            ALLOC,
            req("dim", ParamKind::Int, "the dimension (from 0)"),
            req("size", ParamKind::IntExpr, "its new extent"),
            req("offset", ParamKind::IntExpr, "subtracted from every index in it"),
        ],
        "Gives dimension `dim` of a local buffer the extent `size` and shifts every index in it by `-offset`.",
        "size and offset read no config field and `0 < size`; every index `i` of the dimension is proved to satisfy `0 <= i - offset < size` where it is used (counterexample otherwise); no stride of an earlier dimension is seen.",
    ),
    prim(
        "unroll_buffer",
        &[
            ALLOC,
            req("dim", ParamKind::Int, "the dimension (from 0), of constant extent"),
        ],
        "Replaces a local buffer by one buffer per index of a dimension of constant extent `c` (`t_0`, ..., `t_(c-1)`), dropping that dimension.",
        "every access and window indexes the dimension with a constant; no stride of it or an earlier dimension is seen; the new names are unused.",
    ),
    prim(
        "join_loops",
        &[req("loop", ParamKind::Stmt, "the first loop")],
        "Joins the loop with the loop right after it when it runs the same body over the adjacent range (`lo..m` then `m..hi` becomes `lo..hi`).",
        "the bodies are equal up to the loop variable, the first loop's end is proved equal to the second's start and to lie between the start and the end, and the first body writes no config field the second loop's bounds read.",
    ),
    prim(
        "mult_loops",
        &[
            req("loop", ParamKind::Stmt, "the outer loop"),
            req("name", ParamKind::NewName, "the new loop's name"),
        ],
        "Collapses the loop and the loop of constant extent `c` that is its whole body into one loop over `k`, with `i = lo + k / c` and `j = l + k % c`.",
        "the inner bounds are integer constants with `c >= 1`; the outer start reads no config field the body writes.",
    ),
    prim(
        "divide_with_recompute",
        &[
            LOOP,
            req("outer_hi", ParamKind::IntExpr, "the number of tiles `H`"),
            req("stride", ParamKind::Int, "the distance `c` between tiles"),
            OUTER,
            INNER,
        ],
        "`for i in lo..hi` becomes `for outer in 0..H { for inner in 0..c + R { i = lo + c * outer + inner } }` with `R = hi - lo - H * c`: `H` tiles that overlap by `R` iterations, the last ending at `hi`; the shared iterations run twice, out of order.",
        "`c >= 1`; `R >= 0`, `H >= 0` and `hi > lo ⇒ H > 0`; where the tiles overlap (`R > 0` and `H >= 2`), no two different iterations conflict (as for `parallelize`) and an iteration reads nothing it writes (no reductions); the body frees nothing it did not allocate, and writes no config field the bounds or `H` read.",
    ),
    prim(
        "autolift_alloc",
        &[
            ALLOC,
            opt("levels", ParamKind::Int, "how many loops or `if`s to move it out of (all or none)", "1"),
        ],
        "Moves an allocation out of `levels` loops or `if`s; out of a loop `for i in lo..hi` it first gains a leading dimension of extent `hi - lo` indexed by `i - lo` (`expand_dim`), so each iteration keeps a slice of its own.",
        "each `expand_dim` and `lift_alloc` on the way is accepted.",
    ),
    prim(
        "autosink_alloc",
        &[ALLOC],
        "Moves an allocation into the loops and `if`s after it as far as `sink_alloc` goes (at least once).",
        "the first `sink_alloc` is accepted.",
    ),
    prim(
        "lift_scope",
        &[req("stmt", ParamKind::Stmt, "the inner loop or `if`, the whole body of the one around it")],
        "Exchanges a loop or `if` with the loop or `if` directly around it.",
        "loop in loop: `reorder_loops`'s; `if` in loop: `lift_if`'s; `if` in `if`: always; loop in `if`: no `else`, the condition reads no config field the body writes, and the loop's bounds are proved not to run backwards where the condition is false.",
    ),
    // ----- procs -----
    prim(
        "inline_call",
        &[req("call", ParamKind::Stmt, "the call (`\"call f\"`)")],
        "Replaces a call by the callee's body.",
        "always (an equivalence).",
    ),
    prim(
        "extract_proc",
        &[
            STMT,
            req("name", ParamKind::NewName, "the new proc's name"),
            opt("count", ParamKind::Int, "how many statements", "1"),
        ],
        "Makes `count` statements from the statement on a new proc of the module, and calls it there.",
        "the name is unused.",
    ),
    prim(
        "replace",
        &[
            STMT,
            req("callee", ParamKind::Proc, "the proc or instruction"),
        ],
        "Replaces the block of as many statements as the callee's body, starting at the statement, by a call of the callee (instruction selection). The callee's body may itself call procs and bind windows: a call matches a call of the same proc whose arguments unify (windows by their starts and extents), a window statement one whose window unifies.",
        "the block unifies with the callee's body and the callee's preconditions hold.",
    ),
    prim(
        "replace_all",
        &[req("callee", ParamKind::Proc, "the proc or instruction")],
        "`replace` at every statement, in program order, whose block unifies with the callee's body (instruction selection everywhere at once); each replacement is its own step, and where a call would not check the block is left as it is.",
        "each replacement is accepted as `replace` accepts it; at least one block is replaced.",
    ),
    prim(
        "insert_call",
        &[
            STMT,
            req("callee", ParamKind::Proc, "the proc or instruction: one buffer parameter, a body that does nothing"),
            req("window", ParamKind::Window, "its argument"),
        ],
        "Inserts a call of the callee on the window just before the statement: an instruction with no effect on the program's values, such as a cache prefetch (`prefetch_f32` in lib/cache.weft).",
        "the callee's body is `pass` only, and the call checks where it stands: the window lies inside its buffer and the callee's preconditions hold.",
    ),
    prim(
        "call_eqv",
        &[
            req("call", ParamKind::Stmt, "the call (`\"call f\"`)"),
            req("proc", ParamKind::Proc, "the equivalent proc"),
        ],
        "Switches a call to another version of the callee.",
        "both are versions of one proc by the schedule records, and the caller reads no config field the versions may leave different.",
    ),
    prim(
        "set_window",
        &[req("name", ParamKind::Buffer, "the buffer parameter")],
        "Lets a dense buffer parameter take any window (its strides the caller's); the body is unchanged, and on the dense arguments the proc accepted before it computes what it did.",
        "the parameter is a dense buffer, and the proc checks with it a window (no callee's dense parameter gets it whole, no precondition needs its dense strides).",
    ),
    prim(
        "rename",
        &[req("name", ParamKind::NewName, "the new name")],
        "Names the proc as it stands `name` and adds it to the module (a snapshot later steps do not change); the schedule's result keeps the declaration's name.",
        "the name is unused.",
    ),
    Primitive {
        name: "partial_eval",
        params: &[req(
            "binding",
            ParamKind::Binding,
            "a size argument and its value (`N = 64`)",
        )],
        repeated: true,
        effect: "Fixes control arguments to constants and removes them from the signature.",
        condition: "each value is in the range of its argument (sizes in [1, 2^31 - 1], others within ±(2^31 - 1)) and the values are consistent with the preconditions.",
    },
    // ----- configs -----
    prim(
        "bind_config",
        &[
            STMT,
            req("value", ParamKind::Value, "the value (a control expression, literal or read)"),
            req("field", ParamKind::ConfigField, "the config field"),
        ],
        "Writes the value to the config field before the statement and reads the field where the statement used the value (equivalent except for the field).",
        "the value's reads are not written by the statement.",
    ),
    prim(
        "write_config",
        &[
            STMT,
            req("field", ParamKind::ConfigField, "the config field"),
            req("value", ParamKind::Value, "the value (a control expression or literal)"),
        ],
        "Writes the value to the config field after the statement (equivalent except for the field).",
        "the value is in the field's range.",
    ),
    prim(
        "delete_config",
        &[req("stmt", ParamKind::Stmt, "the config write (`\"Cfg.f =\"`)")],
        "Deletes a redundant config write: one that stores the value the field already holds (an equivalence), or whose value is never read (equivalent except for the field).",
        "an earlier write in the block stores the same expression and nothing in between writes the field or what the expression reads; or no later read of the field (before a direct overwrite, at later iterations of enclosing loops included) can see the value.",
    ),
];

/// Tail strategies of pipeline `split` (Halide's names).
pub const PIPE_TAILS: &[&str] = &["GuardWithIf", "ShiftInwards", "RoundUp"];

const VAR: Param = req("var", ParamKind::Var, "the loop");

/// The directives of pipeline schedules (`f.split(x, xo, xi, 8).parallel(xo);`), each applied to
/// a func (its pure stage, or the update stage `f.update(k)` selects), in the order of the
/// reference. Their legality rules are stated in `weft-pipe`'s `schedule` module.
pub const DIRECTIVES: &[Primitive] = &[
    prim(
        "update",
        &[req("k", ParamKind::Int, "the update stage (from 0)")],
        "Selects update stage `k` of the func for the directives after it.",
        "the func has that many update stages.",
    ),
    prim(
        "split",
        &[
            VAR,
            OUTER,
            INNER,
            req("factor", ParamKind::Int, "the factor"),
            opt(
                "tail",
                ParamKind::Word(PIPE_TAILS),
                "what the last tile does",
                "`ShiftInwards` on a pure stage, `GuardWithIf` on an update",
            ),
        ],
        "Splits the loop into an outer loop over tiles and an inner loop of `factor` iterations; the last tile is guarded (`GuardWithIf`), shifted inwards to end at the last point (`ShiftInwards`, recomputing points), or rounded up (`RoundUp`, computing points past the end).",
        "the factor is positive, the names are new, and `ShiftInwards` and `RoundUp` are used on pure stages only.",
    ),
    prim(
        "fuse",
        &[
            req("inner", ParamKind::Var, "the inner loop"),
            req("outer", ParamKind::Var, "the loop just outside it"),
            req("fused", ParamKind::NewName, "the fused loop's name"),
        ],
        "Fuses two adjacent loops into one.",
        "`outer` is just outside `inner`, both are pure or both are reduction loops, and (checked by lowering) the inner loop's extent is a constant.",
    ),
    Primitive {
        name: "reorder",
        params: &[req("vars", ParamKind::Var, "the loops, innermost first")],
        repeated: true,
        effect: "Puts the named loops in this order (innermost first), in the positions they held.",
        condition: "it keeps the order of the reduction loops.",
    },
    prim(
        "tile",
        &[
            req("x", ParamKind::Var, "the inner loop to split"),
            req("y", ParamKind::Var, "the outer loop to split"),
            req("xo", ParamKind::NewName, "the outer loop over x tiles"),
            req("yo", ParamKind::NewName, "the outer loop over y tiles"),
            req("xi", ParamKind::NewName, "the loop inside an x tile"),
            req("yi", ParamKind::NewName, "the loop inside a y tile"),
            req("fx", ParamKind::Int, "the tile width"),
            req("fy", ParamKind::Int, "the tile height"),
            opt(
                "tail",
                ParamKind::Word(PIPE_TAILS),
                "what the last tiles do",
                "as `split`",
            ),
        ],
        "Splits both loops and orders them `xi, yi, xo, yo` (innermost first).",
        "as `split` for each.",
    ),
    prim(
        "parallel",
        &[VAR],
        "Runs the loop's iterations on threads.",
        "the loop is pure (a reduction loop's iterations may write, or read through a predicate, what another writes).",
    ),
    prim(
        "vectorize",
        &[
            VAR,
            opt(
                "width",
                ParamKind::Int,
                "split by this first (inner loop `var_v`)",
                "the loop as it is",
            ),
        ],
        "Marks the loop (of constant extent) to run as vector instructions.",
        "lowering finds a constant extent.",
    ),
    prim(
        "unroll",
        &[
            VAR,
            opt(
                "factor",
                ParamKind::Int,
                "split by this first (inner loop `var_u`)",
                "the loop as it is",
            ),
        ],
        "Unrolls the loop (of constant extent).",
        "lowering finds a constant extent.",
    ),
    prim(
        "compute_root",
        &[],
        "Computes the func once, before its consumers, over everything they need.",
        "always.",
    ),
    prim(
        "compute_at",
        &[
            req("consumer", ParamKind::Func, "the func whose loop it goes in"),
            req("var", ParamKind::Var, "the loop of the consumer's last stage"),
        ],
        "Computes the func at the start of each iteration of the loop, over what that iteration needs.",
        "the loop encloses every read of the func (rejections list the loops that would be legal); the func is not an output.",
    ),
    prim(
        "compute_inline",
        &[],
        "Substitutes the func's definition into its consumers (the default).",
        "the func has no update stages and is not an output.",
    ),
    prim(
        "clone_in",
        &[req("consumer", ParamKind::Func, "a func whose definition calls this one")],
        "The consumer reads a copy of the func, inlined into its definition; the other consumers read the func where it is computed (Halide's `clone_in`, the copy left at its default schedule).",
        "the consumer calls the func; the func has no update stages.",
    ),
    Primitive {
        name: "reorder_storage",
        params: &[req("vars", ParamKind::Var, "pure variables, innermost first")],
        repeated: true,
        effect: "Lays out the func's buffer with the named dimensions in this order (innermost first), in the positions they held; the loops do not change.",
        condition: "the func is not an output (an output's layout is the caller's buffer's).",
    },
    prim(
        "store_root",
        &[],
        "Allocates the func's buffer once, at the root.",
        "always (for a func that is not inlined).",
    ),
    prim(
        "store_at",
        &[
            req("consumer", ParamKind::Func, "the func whose loop it goes in"),
            req("var", ParamKind::Var, "the loop of the consumer's last stage"),
        ],
        "Allocates the func's buffer at the loop: it holds what the iterations inside compute; a serial loop between storage and computation slides (each iteration computes only what earlier ones did not).",
        "the loop encloses the compute level.",
    ),
    prim(
        "bound",
        &[
            req("var", ParamKind::Var, "the pure variable"),
            req("min", ParamKind::Int, "the min"),
            req("extent", ParamKind::Int, "the extent"),
        ],
        "Fixes the func's region in that dimension.",
        "the func is computed at the root; a run-time assertion checks that the region covers what is needed.",
    ),
    prim(
        "bound_extent",
        &[
            req("var", ParamKind::Var, "the pure variable"),
            req("extent", ParamKind::Int, "the extent"),
        ],
        "Fixes the extent of the func's region in that dimension.",
        "as `bound`.",
    ),
    prim(
        "align_bounds",
        &[
            req("var", ParamKind::Var, "the pure variable"),
            req("modulus", ParamKind::Int, "the alignment"),
            opt("remainder", ParamKind::Int, "the min's remainder", "0"),
        ],
        "Widens the func's computed region in that dimension so that its min is `remainder` plus a multiple of `modulus` and its extent a multiple of `modulus` (the points added are computed too).",
        "`modulus >= 1`, `0 <= remainder < modulus`; the func is not an output (its region is the caller's window).",
    ),
    prim(
        "specialize",
        &[req(
            "cond",
            ParamKind::Cond,
            "a condition over i32 parameters, input bounds (`in.extent(0)`) and output windows (`out.extent(0)`)",
        )],
        "Makes a version of the stage used when `cond` holds: the directives after it in the chain schedule that version, starting from the stage's loops as they stand (Halide's `specialize`). Versions are tried in order; the stage's own loops run when no condition holds.",
        "`cond` is a startup condition; the chain after it has loop directives only (where the func is computed and stored is one for all versions), and a version is not specialized again.",
    ),
];

/// The directive named `name`.
pub fn directive(name: &str) -> Option<&'static Primitive> {
    DIRECTIVES.iter().find(|p| p.name == name)
}

/// The primitive named `name`.
pub fn primitive(name: &str) -> Option<&'static Primitive> {
    PRIMITIVES.iter().find(|p| p.name == name)
}

/// The primitives whose names are close to `name` (a typo, a prefix, a part), closest first.
pub fn close_to(name: &str) -> Vec<&'static str> {
    let mut scored: Vec<(usize, &'static str)> = PRIMITIVES
        .iter()
        .filter_map(|p| {
            let d = edit_distance(name, p.name);
            let related = !name.is_empty() && (p.name.contains(name) || name.contains(p.name));
            (d <= 2.max(name.len() / 4) || related).then_some((d, p.name))
        })
        .collect();
    scored.sort();
    scored.into_iter().map(|(_, n)| n).collect()
}

/// The message for an unknown primitive, with the close ones (or all of them).
pub fn unknown_message(name: &str) -> String {
    let close = close_to(name);
    if close.is_empty() {
        let all: Vec<&str> = PRIMITIVES.iter().map(|p| p.name).collect();
        format!(
            "unknown scheduling primitive `{name}` (the primitives: {})",
            all.join(", ")
        )
    } else {
        let v: Vec<String> = close.iter().map(|n| format!("`{n}`")).collect();
        format!(
            "unknown scheduling primitive `{name}`; did you mean {}?",
            v.join(" or ")
        )
    }
}

/// Edit distance over bytes (names are ASCII) counting a swap of neighbours as one edit, the
/// commonest typo (`spilt`).
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j - 1] + cost)
                .min(d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[a.len()][b.len()]
}

/// The schedule reference, `docs/schedules.md`.
pub fn reference_markdown() -> String {
    let mut out = String::from(
        "# Scheduling primitives\n\n\
         <!-- Generated from `crates/weft-ir/src/primitives.rs` by `weft primitives`; do not edit. -->\n\n\
         A schedule is `schedule NAME = BASE { step; step; ... }`: each step is a primitive applied to \
         the proc as the steps before it left it. weft proves each step's condition (with a \
         counterexample when it fails) and the control-arithmetic rules for its result, so an \
         accepted step never changes what the proc computes (except `set_precision`, and the config \
         fields `bind_config` and `write_config` name).\n\n\
         Arguments are read with the language's own grammar:\n\n",
    );
    let kinds = [
        ParamKind::Stmt,
        ParamKind::IntExpr,
        ParamKind::Cond,
        ParamKind::DataExpr,
        ParamKind::Region,
        ParamKind::Window,
        ParamKind::ConfigField,
        ParamKind::Binding,
    ];
    for k in kinds {
        out.push_str(&format!("- **{}**: {}\n", k.form(), kind_explanation(k)));
    }
    out.push_str(
        "\nA statement pattern names a kind of statement and, after `#`, which occurrence (from 0, \
         in program order, parents before children): `for i` (or just `i`), `C =`, `C +=`, \
         `alloc t`, `free t`, `window w`, `call f`, `Cfg.f =`, `if`, `pass`. A pattern that \
         matches nothing is reported with the patterns that do match.\n\n",
    );
    out.push_str("| primitive | effect |\n|---|---|\n");
    table_and_sections(&mut out, PRIMITIVES);
    out.push_str(
        "\n# Pipeline directives\n\n\
         A schedule of a pipeline (`docs/pipelines.md`) applies these to funcs, \
         `f.split(x, xo, xi, 8).parallel(xo);`, each to the func's pure stage or to the update \
         stage `update(k)` selected; a statement that is not a func's chain is one of the steps \
         above, applied to the lowered proc.\n\n| directive | effect |\n|---|---|\n",
    );
    table_and_sections(&mut out, DIRECTIVES);
    out
}

/// The rows of a reference table (after its header), then a section per entry.
fn table_and_sections(out: &mut String, entries: &[Primitive]) {
    for p in entries {
        out.push_str(&format!(
            "| [`{}`](#{}) | {} |\n",
            p.usage(),
            p.name,
            first_sentence(p.effect)
        ));
    }
    for p in entries {
        out.push('\n');
        out.push_str(&reference_of(p));
    }
}

/// The reference section of one primitive.
pub fn reference_of(p: &Primitive) -> String {
    let mut out = format!("## {}\n\n`{}`\n\n", p.name, p.usage());
    for (k, q) in p.params.iter().enumerate() {
        let default = q
            .default
            .map_or(String::new(), |d| format!("; default {d}"));
        let many = if p.repeated && k + 1 == p.params.len() {
            " (one or more)"
        } else {
            ""
        };
        out.push_str(&format!(
            "- `{}`: {}, {}{default}{many}\n",
            q.name,
            q.kind.form(),
            q.role
        ));
    }
    if !p.params.is_empty() {
        out.push('\n');
    }
    out.push_str(&format!("{}\n\nAccepted when {}\n", p.effect, p.condition));
    out
}

fn kind_explanation(k: ParamKind) -> &'static str {
    match k {
        ParamKind::Stmt => "`i` is the first loop over `i`; a quoted pattern such as `\"C +=\"` or `\"for i #1\"` names any statement (see below).",
        ParamKind::IntExpr => "an integer expression over the proc's control arguments, the enclosing loops' variables, `stride(A, d)` and config fields (`4 * io + 1`, `C.n - 1`).",
        ParamKind::Cond => "a boolean control expression (`n > 8 and i < n`).",
        ParamKind::DataExpr => "an expression over the buffers in scope of the statement (`A[i, k] * 2.0`).",
        ParamKind::Region => "one interval per dimension, its bounds control expressions in scope of the statement (`C[4 * io:4 * io + 4, 0:n]`).",
        ParamKind::Window => "a point or an interval per dimension, as in a call's argument, control expressions in scope of the statement (`A[c, y + 1, 16 * x:16 * x + 16]`).",
        ParamKind::ConfigField => "a field of a config of the module or its imports.",
        ParamKind::Binding => "a control argument and its value (`N = 64`).",
        _ => "",
    }
}

fn first_sentence(s: &str) -> &str {
    match s.find(". ") {
        Some(k) => &s[..=k],
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique() {
        for (k, p) in PRIMITIVES.iter().enumerate() {
            assert!(
                PRIMITIVES[k + 1..].iter().all(|q| q.name != p.name),
                "{} twice",
                p.name
            );
            // Optional parameters only at the end, so positions stay unambiguous.
            let first_opt = p.params.iter().position(|q| q.default.is_some());
            if let Some(f) = first_opt {
                assert!(
                    p.params[f..].iter().all(|q| q.default.is_some()),
                    "{}",
                    p.name
                );
            }
        }
    }

    #[test]
    fn arity_messages_name_the_roles() {
        let fuse = primitive("fuse").unwrap();
        assert_eq!(
            fuse.arity_message(2),
            "`fuse` takes 1 argument: the first loop; got 2"
        );
        let split = primitive("split").unwrap();
        assert!(split.accepts(4) && split.accepts(5) && !split.accepts(3) && !split.accepts(6));
        assert!(split
            .arity_message(3)
            .starts_with("`split` takes 4 to 5 arguments"));
        let pe = primitive("partial_eval").unwrap();
        assert!(pe.accepts(3) && !pe.accepts(0));
        assert_eq!(split.usage(), "split(loop, factor, outer, inner[, tail])");
    }

    #[test]
    fn unknown_names_suggest_close_ones() {
        assert!(unknown_message("spilt").contains("`split`"));
        assert!(unknown_message("stage").contains("`stage_mem`"));
        assert!(unknown_message("reorder").contains("`reorder_loops`"));
        assert!(unknown_message("zzzzzzzzzzzzzz").contains("the primitives: split"));
    }
}
