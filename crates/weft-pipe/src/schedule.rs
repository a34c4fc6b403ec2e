//! Schedules of pipelines: Halide's directives, recorded per func and per stage, each checked
//! for its legality rule when it is given (`../shared/reference/halide-formal-semantics.md` §5).
//! Rules that need the whole loop structure (where `compute_at` may go) are checked by lowering.
//!
//! A stage's loops start as its pure variables that appear plainly on the left-hand side (the
//! first innermost) with its reduction variables inside them (the first innermost), as in Fig. 9.
//! `split` replaces a loop by an outer and an inner loop, `fuse` two adjacent loops by one,
//! `reorder` permutes loops; `parallel`, `vectorize` and `unroll` say how a loop runs.
//!
//! Legality (the paper's and Halide 21's):
//! - `split` with `ShiftInwards` or `RoundUp` only on pure stages (they recompute or overcompute
//!   points, which an update stage's reduction would count twice); factors are positive.
//! - `fuse` only of two pure or two reduction loops, the outer immediately outside the inner.
//! - `reorder` never changes the order of two reduction loops.
//! - `parallel` only on pure loops (separation makes their iterations write disjoint points; a
//!   reduction loop, even one whose predicate reads the func, would race: the paper's flaw 5).
//! - outputs are computed at the root; funcs with update stages cannot be inlined.

use crate::ast::{Expr, Pipeline};
use std::fmt;

/// What a split does with the last, partial tile (Halide's `TailStrategy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tail {
    /// Guard every point with `if x < min + extent`.
    GuardWithIf,
    /// Shift the last tile inwards so it ends at the last point (recomputes points).
    ShiftInwards,
    /// Round the extent up to a multiple of the factor (computes points beyond the region).
    RoundUp,
}

/// How a loop runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoopKind {
    Serial,
    Parallel,
    Vectorized,
    Unrolled,
}

/// A loop of a stage.
#[derive(Clone, Debug, PartialEq)]
pub struct Dim {
    pub name: String,
    pub kind: LoopKind,
    /// A pure loop (a pure variable, or made from pure loops only): Def. 8.3.
    pub pure: bool,
}

/// How one variable of a stage became others.
#[derive(Clone, Debug, PartialEq)]
pub enum SplitOp {
    Split {
        old: String,
        outer: String,
        inner: String,
        factor: i64,
        tail: Tail,
    },
    Fuse {
        inner: String,
        outer: String,
        fused: String,
    },
}

/// The loop structure of one stage.
#[derive(Clone, Debug, PartialEq)]
pub struct StageSchedule {
    pub splits: Vec<SplitOp>,
    /// The loops, innermost first.
    pub dims: Vec<Dim>,
    /// `specialize`: other loop structures of the stage, each used when its condition holds
    /// (the first that holds; this one when none does).
    pub specializations: Vec<Specialization>,
}

/// A `specialize(cond)` of a stage: when `cond` holds, the stage runs with `stage`'s loops.
/// `cond` is a startup condition (i32 parameters, the bounds of inputs, the windows of
/// outputs), so every point is computed by exactly one of the versions, all of which compute
/// the same values: the choice changes speed, never the result.
#[derive(Clone, Debug, PartialEq)]
pub struct Specialization {
    pub cond: Expr,
    pub stage: StageSchedule,
}

/// Where a func is computed or stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Level {
    /// Substituted into its consumers (Halide's default for pure funcs).
    Inline,
    Root,
    /// At the start of the body of loop `var` of stage `stage` of func `func`.
    At {
        func: usize,
        stage: usize,
        var: String,
    },
}

/// A `bound` directive: the func's region in this dimension is exactly `min .. min + extent`
/// (`min` left free by `bound_extent`); lowering asserts that it covers what is needed.
#[derive(Clone, Debug, PartialEq)]
pub struct Bound {
    pub dim: usize,
    pub min: Option<Expr>,
    pub extent: Expr,
}

/// The schedule of one func.
#[derive(Clone, Debug, PartialEq)]
pub struct FuncSchedule {
    pub compute: Level,
    /// `None`: stored where it is computed.
    pub store: Option<Level>,
    pub stages: Vec<StageSchedule>,
    pub bounds: Vec<Bound>,
    /// The buffer's dimensions as pure-variable positions, innermost first (`reorder_storage`).
    pub storage: Vec<usize>,
    /// `align_bounds`: per pure dimension, the modulus and remainder its region is widened to.
    pub aligns: Vec<Align>,
    /// `clone_in`: the funcs whose definitions read a copy of this func inlined, wherever this
    /// func itself is computed.
    pub inline_in: Vec<usize>,
}

/// `align_bounds(var, modulus, remainder)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Align {
    pub dim: usize,
    pub modulus: i64,
    pub remainder: i64,
}

/// A whole pipeline's schedule, one entry per func.
#[derive(Clone, Debug, PartialEq)]
pub struct Schedule {
    pub funcs: Vec<FuncSchedule>,
}

/// A rejected directive: which, the rule it breaks, and what would be legal instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirectiveError {
    pub directive: String,
    pub rule: &'static str,
    pub message: String,
    pub alternatives: Vec<String>,
}

impl fmt::Display for DirectiveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} (rule `{}`)",
            self.directive, self.message, self.rule
        )?;
        if !self.alternatives.is_empty() {
            write!(f, "; legal: {}", self.alternatives.join(", "))?;
        }
        Ok(())
    }
}

impl std::error::Error for DirectiveError {}

type R = Result<(), DirectiveError>;

fn err(directive: String, rule: &'static str, message: String) -> DirectiveError {
    DirectiveError {
        directive,
        rule,
        message,
        alternatives: Vec::new(),
    }
}

/// Whether two iterations of loop `var` (as named after the first `upto` splits) may cover the
/// same points: it comes from a `ShiftInwards` split, whose last tile is shifted onto the one
/// before (the outer loop's iterations overlap; so do the inner loop's, when the outer loop runs
/// inside it), or is made from such a loop by splitting or fusing.
fn overlaps(splits: &[SplitOp], upto: usize, var: &str) -> bool {
    for k in (0..upto).rev() {
        match &splits[k] {
            SplitOp::Split {
                old,
                outer,
                inner,
                factor,
                tail,
            } if outer == var || inner == var => {
                // An inner loop that leaves [0, factor) (rounded up or shifted by a later split)
                // makes the outer loop's tiles overlap too.
                return *tail == Tail::ShiftInwards
                    || (outer == var && !exact_after(splits, k + 1, inner, Some(*factor)))
                    || overlaps(splits, k, old);
            }
            SplitOp::Fuse {
                inner,
                outer,
                fused,
            } if fused == var => return overlaps(splits, k, inner) || overlaps(splits, k, outer),
            _ => {}
        }
    }
    false
}

/// Whether variable `var` (of constant extent `extent` when known), as split by the splits from
/// `from` on, takes only values in `[0, extent)`: every split below it guards its tail, or rounds
/// up or shifts inwards by a factor that its extent makes harmless.
fn exact_after(splits: &[SplitOp], from: usize, var: &str, extent: Option<i64>) -> bool {
    for (j, op) in splits.iter().enumerate().skip(from) {
        match op {
            SplitOp::Split {
                old,
                outer,
                inner,
                factor,
                tail,
            } if old == var => {
                let own = match tail {
                    Tail::GuardWithIf => true,
                    Tail::RoundUp => extent.is_some_and(|e| e % factor == 0),
                    Tail::ShiftInwards => extent.is_some_and(|e| e >= *factor),
                };
                let outer_extent = extent.map(|e| (e + factor - 1) / factor);
                return own
                    && exact_after(splits, j + 1, outer, outer_extent)
                    && exact_after(splits, j + 1, inner, Some(*factor));
            }
            SplitOp::Fuse {
                inner,
                outer,
                fused,
            } if inner == var || outer == var => return exact_after(splits, j + 1, fused, None),
            _ => {}
        }
    }
    true
}

/// The items of `v` at the positions `at` (distinct), put in that order into the positions they
/// held (`reorder` of loops, `reorder_storage` of dimensions); the others stay.
fn place_in_order<T: Clone>(v: &mut [T], at: &[usize]) {
    let old = v.to_vec();
    let mut slots = at.to_vec();
    slots.sort_unstable();
    for (slot, &from) in slots.iter().zip(at) {
        v[*slot] = old[from].clone();
    }
}

/// Whether `e` is a condition the proc's control flow can test: comparisons of quasi-affine
/// operands (sums, products and quotients by constants, `min`, `max`, `select`), joined by
/// `and`, `or`, `not` (or a boolean literal).
fn is_condition(e: &Expr) -> bool {
    use weft_ir::{BinOp, UnOp};
    match e {
        Expr::Lit(v) => v.dtype() == weft_ir::DType::Bool,
        Expr::Unary(UnOp::Not, a) => is_condition(a),
        Expr::Binary(BinOp::And | BinOp::Or, a, b) => is_condition(a) && is_condition(b),
        Expr::Binary(op, a, b) => op.is_comparison() && quasi_affine(a) && quasi_affine(b),
        _ => false,
    }
}

/// A startup expression the control arithmetic can hold (see [`is_condition`]).
fn quasi_affine(e: &Expr) -> bool {
    use weft_ir::{BinOp, UnOp};
    let constant = |e: &Expr| {
        let mut yes = true;
        e.walk(&mut |x| {
            if matches!(
                x,
                Expr::Param(_) | Expr::InputDim { .. } | Expr::OutputDim { .. }
            ) {
                yes = false;
            }
        });
        yes
    };
    match e {
        Expr::Lit(v) => v.dtype() == crate::ast::COORD,
        Expr::Param(_) | Expr::InputDim { .. } | Expr::OutputDim { .. } => true,
        Expr::Unary(UnOp::Neg, a) | Expr::Cast(crate::ast::COORD, a) => quasi_affine(a),
        Expr::Binary(BinOp::Add | BinOp::Sub | BinOp::Min | BinOp::Max, a, b) => {
            quasi_affine(a) && quasi_affine(b)
        }
        Expr::Binary(BinOp::Mul, a, b) => {
            quasi_affine(a) && quasi_affine(b) && (constant(a) || constant(b))
        }
        Expr::Binary(BinOp::Div | BinOp::Mod, a, b) => quasi_affine(a) && constant(b),
        Expr::Select(c, a, b) => is_condition(c) && quasi_affine(a) && quasi_affine(b),
        _ => false,
    }
}

/// The pure variables that appear plainly at their own position on a stage's left-hand side.
pub fn stage_pure_vars(p: &Pipeline, func: usize, stage: usize) -> Vec<usize> {
    let f = &p.funcs[func];
    if stage == 0 {
        return (0..f.vars.len()).collect();
    }
    f.updates[stage - 1]
        .lhs
        .iter()
        .enumerate()
        .filter(|(k, e)| matches!(e, Expr::Var(v) if v == k))
        .map(|(k, _)| k)
        .collect()
}

impl Schedule {
    /// The default schedule: every func inlined (Halide's default) except outputs and funcs with
    /// update stages, which are computed at the root; loops in the order of Fig. 9.
    pub fn new(p: &Pipeline) -> Schedule {
        let funcs = p
            .funcs
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let compute = if p.outputs.contains(&i) || !f.updates.is_empty() {
                    Level::Root
                } else {
                    Level::Inline
                };
                let stages = (0..=f.updates.len())
                    .map(|s| {
                        let mut dims = Vec::new();
                        if s > 0 {
                            for r in &f.updates[s - 1].rdom {
                                dims.push(Dim {
                                    name: r.name.clone(),
                                    kind: LoopKind::Serial,
                                    pure: false,
                                });
                            }
                        }
                        for k in stage_pure_vars(p, i, s) {
                            dims.push(Dim {
                                name: f.vars[k].clone(),
                                kind: LoopKind::Serial,
                                pure: true,
                            });
                        }
                        StageSchedule {
                            splits: Vec::new(),
                            dims,
                            specializations: Vec::new(),
                        }
                    })
                    .collect();
                FuncSchedule {
                    compute,
                    store: None,
                    stages,
                    bounds: Vec::new(),
                    storage: (0..f.vars.len()).collect(),
                    aligns: Vec::new(),
                    inline_in: Vec::new(),
                }
            })
            .collect();
        Schedule { funcs }
    }
}

/// Directives on one func of a schedule, by name (the handle `Schedule::func` gives).
pub struct FuncHandle<'a> {
    pub(crate) p: &'a Pipeline,
    pub(crate) s: &'a mut Schedule,
    pub(crate) func: usize,
    pub(crate) stage: usize,
    /// The specialization of the stage the directives go to (`None`: the stage itself).
    pub(crate) spec: Option<usize>,
}

impl Schedule {
    /// Directives on func `name`'s pure stage (`.update(k)` for update stage `k`).
    pub fn func<'a>(
        &'a mut self,
        p: &'a Pipeline,
        name: &str,
    ) -> Result<FuncHandle<'a>, DirectiveError> {
        let func = p.funcs.iter().position(|f| f.name == name).ok_or_else(|| {
            err(
                format!("func `{name}`"),
                "name",
                format!("no func `{name}` in pipeline `{}`", p.name),
            )
        })?;
        Ok(FuncHandle {
            p,
            s: self,
            func,
            stage: 0,
            spec: None,
        })
    }
}

impl FuncHandle<'_> {
    fn fname(&self) -> &str {
        &self.p.funcs[self.func].name
    }

    fn stage_name(&self) -> String {
        let mut name = if self.stage == 0 {
            self.fname().to_string()
        } else {
            format!("{}.update({})", self.fname(), self.stage - 1)
        };
        if let Some(k) = self.spec {
            name += &format!(".specialize#{k}");
        }
        name
    }

    /// The loop structure the directives change: the stage's, or its specialization's.
    fn stage_ref(&self) -> &StageSchedule {
        let st = &self.s.funcs[self.func].stages[self.stage];
        match self.spec {
            Some(k) => &st.specializations[k].stage,
            None => st,
        }
    }

    fn stage_mut(&mut self) -> &mut StageSchedule {
        let st = &mut self.s.funcs[self.func].stages[self.stage];
        match self.spec {
            Some(k) => &mut st.specializations[k].stage,
            None => st,
        }
    }

    /// Directives on the whole func (where it is computed and stored, its bounds and layout)
    /// are not per version of a stage, as in Halide, whose `Stage` has none of them.
    fn func_level(&self, d: &str) -> R {
        match self.spec {
            None => Ok(()),
            Some(_) => Err(err(
                d.to_string(),
                "specialize-stage",
                format!(
                    "`{}` is a specialization, which has its own loops only; give func-level directives on `{}` before `specialize`",
                    self.stage_name(),
                    self.fname()
                ),
            )),
        }
    }

    /// `specialize(cond)`: the directives that follow schedule a copy of the stage's loop
    /// structure as it stands, used when `cond` holds (Halide's `Func::specialize`). Several
    /// specializations of a stage are tried in order; the stage's own loops run when none
    /// holds.
    pub fn specialize(mut self, cond: Expr) -> Result<Self, DirectiveError> {
        let d = format!("{}.specialize(..)", self.stage_name());
        if self.spec.is_some() {
            return Err(err(
                d,
                "specialize-nested",
                "a specialization cannot be specialized again; join the conditions with `and` in one specialization".into(),
            ));
        }
        self.startup(&d, &cond, true)?;
        if !is_condition(&cond) {
            return Err(err(
                d,
                "specialize",
                "the condition must be comparisons of quasi-affine operands (sums, products and quotients by constants, min, max, select), joined by `and`, `or`, `not`".into(),
            ));
        }
        let st = &mut self.s.funcs[self.func].stages[self.stage];
        let copy = StageSchedule {
            splits: st.splits.clone(),
            dims: st.dims.clone(),
            specializations: Vec::new(),
        };
        st.specializations
            .push(Specialization { cond, stage: copy });
        self.spec = Some(st.specializations.len() - 1);
        Ok(self)
    }

    fn dim_index(&self, directive: &str, name: &str) -> Result<usize, DirectiveError> {
        let dims = &self.stage_ref().dims;
        dims.iter()
            .position(|d| d.name == name)
            .ok_or_else(|| DirectiveError {
                directive: directive.to_string(),
                rule: "name",
                message: format!("`{}` has no loop `{name}`", self.stage_name()),
                alternatives: dims.iter().rev().map(|d| d.name.clone()).collect(),
            })
    }

    /// A name for a new loop must not be any variable the stage has or had.
    fn fresh(&self, directive: &str, name: &str) -> R {
        let f = &self.p.funcs[self.func];
        let st = &self.stage_ref();
        let taken = f.vars.iter().any(|v| v == name)
            || (self.stage > 0
                && f.updates[self.stage - 1]
                    .rdom
                    .iter()
                    .any(|r| r.name == name))
            || st.dims.iter().any(|d| d.name == name)
            || st.splits.iter().any(|s| match s {
                SplitOp::Split {
                    old, outer, inner, ..
                } => old == name || outer == name || inner == name,
                SplitOp::Fuse {
                    inner,
                    outer,
                    fused,
                } => inner == name || outer == name || fused == name,
            });
        if taken || name.is_empty() {
            return Err(err(
                directive.to_string(),
                "fresh",
                format!("`{name}` is already a variable of `{}`", self.stage_name()),
            ));
        }
        Ok(())
    }

    /// The stage's loops as they stand, innermost first.
    pub fn dims(&self) -> &[Dim] {
        &self.stage_ref().dims
    }

    /// The whole schedule.
    pub fn schedule(&self) -> &Schedule {
        self.s
    }

    /// Switch to update stage `k` (0-based) of this func.
    pub fn update(mut self, k: usize) -> Result<Self, DirectiveError> {
        self.func_level(&format!("{}.update({k})", self.stage_name()))?;
        let n = self.p.funcs[self.func].updates.len();
        if k >= n {
            return Err(err(
                format!("{}.update({k})", self.fname()),
                "name",
                format!("`{}` has {n} update stages", self.fname()),
            ));
        }
        self.stage = k + 1;
        Ok(self)
    }

    /// `split(old, outer, inner, factor, tail)`.
    pub fn split(
        &mut self,
        old: &str,
        outer: &str,
        inner: &str,
        factor: i64,
        tail: Tail,
    ) -> Result<&mut Self, DirectiveError> {
        let d = format!(
            "{}.split({old}, {outer}, {inner}, {factor}, {tail:?})",
            self.stage_name()
        );
        let at = self.dim_index(&d, old)?;
        if factor <= 0 || factor > i32::MAX as i64 {
            return Err(err(
                d,
                "split",
                format!("the factor {factor} must be positive"),
            ));
        }
        if tail != Tail::GuardWithIf && self.stage > 0 {
            return Err(DirectiveError {
                directive: d,
                rule: "split-tail",
                message: format!(
                    "{tail:?} recomputes or overcomputes points, which is legal on pure stages only and `{}` is an update stage",
                    self.stage_name()
                ),
                alternatives: vec!["GuardWithIf".into()],
            });
        }
        if outer == inner {
            return Err(err(
                d,
                "fresh",
                format!("the two new loops are both `{outer}`"),
            ));
        }
        for n in [outer, inner] {
            if n != old {
                self.fresh(&d, n)?;
            }
        }
        let before = self.stage_ref().clone();
        let st = self.stage_mut();
        let old_dim = st.dims[at].clone();
        st.splits.push(SplitOp::Split {
            old: old.into(),
            outer: outer.into(),
            inner: inner.into(),
            factor,
            tail,
        });
        st.dims[at] = Dim {
            name: inner.into(),
            kind: LoopKind::Serial,
            pure: old_dim.pure,
        };
        st.dims.insert(
            at + 1,
            Dim {
                name: outer.into(),
                kind: old_dim.kind,
                pure: old_dim.pure,
            },
        );
        self.keep_parallel_disjoint(&d, before)?;
        Ok(self)
    }

    /// After a split: every parallel loop of the stage must still have disjoint iterations (a
    /// split of a parallel loop, or of the loop inside it, can make its tiles overlap); if not,
    /// the stage is put back as it was `before` and the directive rejected.
    fn keep_parallel_disjoint(&mut self, d: &str, before: StageSchedule) -> R {
        let st = &self.stage_ref();
        let bad = st
            .dims
            .iter()
            .find(|x| {
                x.kind == LoopKind::Parallel && overlaps(&st.splits, st.splits.len(), &x.name)
            })
            .map(|x| x.name.clone());
        if let Some(v) = bad {
            *self.stage_mut() = before;
            return Err(DirectiveError {
                directive: d.to_string(),
                rule: "parallel-overlap",
                message: format!(
                    "it makes the tiles of the parallel loop `{v}` overlap, so two iterations would write the same points at once, a data race"
                ),
                alternatives: vec!["split with GuardWithIf".into()],
            });
        }
        Ok(())
    }

    /// `fuse(inner, outer, fused)`: `outer` must be the loop immediately outside `inner`.
    pub fn fuse(
        &mut self,
        inner: &str,
        outer: &str,
        fused: &str,
    ) -> Result<&mut Self, DirectiveError> {
        let d = format!("{}.fuse({inner}, {outer}, {fused})", self.stage_name());
        let i = self.dim_index(&d, inner)?;
        let o = self.dim_index(&d, outer)?;
        let dims = &self.stage_ref().dims;
        if o != i + 1 {
            let mut alt = Vec::new();
            if let Some(n) = dims.get(i + 1) {
                alt.push(format!("fuse({inner}, {}, {fused})", n.name));
            }
            return Err(DirectiveError {
                directive: d,
                rule: "fuse-adjacent",
                message: format!("`{outer}` is not the loop immediately outside `{inner}`"),
                alternatives: alt,
            });
        }
        if dims[i].pure != dims[o].pure {
            return Err(err(
                d,
                "fuse-purity",
                "one loop is pure and the other a reduction loop; only two pure or two reduction loops fuse".into(),
            ));
        }
        self.fresh(&d, fused)?;
        let pure = dims[i].pure;
        let st = self.stage_mut();
        st.splits.push(SplitOp::Fuse {
            inner: inner.into(),
            outer: outer.into(),
            fused: fused.into(),
        });
        st.dims.remove(o);
        st.dims[i] = Dim {
            name: fused.into(),
            kind: LoopKind::Serial,
            pure,
        };
        Ok(self)
    }

    /// `reorder(v1, v2, ...)`, innermost first: these loops take the positions they held, in
    /// this order.
    pub fn reorder(&mut self, vars: &[&str]) -> Result<&mut Self, DirectiveError> {
        let d = format!("{}.reorder({})", self.stage_name(), vars.join(", "));
        let mut at = Vec::new();
        for v in vars {
            let k = self.dim_index(&d, v)?;
            if at.contains(&k) {
                return Err(err(d, "name", format!("`{v}` is named twice")));
            }
            at.push(k);
        }
        let dims = self.stage_ref().dims.clone();
        let mut new = dims.clone();
        place_in_order(&mut new, &at);
        let order = |ds: &[Dim]| -> Vec<String> {
            ds.iter()
                .filter(|x| !x.pure)
                .map(|x| x.name.clone())
                .collect()
        };
        if order(&new) != order(&dims) {
            let keep = order(&dims);
            return Err(DirectiveError {
                directive: d,
                rule: "reorder-reduction",
                message: "it changes the order of reduction loops, which changes the order the reduction visits its domain".into(),
                alternatives: vec![format!(
                    "any order that keeps the reduction loops {} innermost to outermost",
                    keep.join(", ")
                )],
            });
        }
        self.stage_mut().dims = new;
        Ok(self)
    }

    /// `reorder_storage(vars...)`: the named dimensions of the func's buffer in this order
    /// (innermost first), in the positions they held; the others stay where they are.
    pub fn reorder_storage(&mut self, vars: &[&str]) -> Result<&mut Self, DirectiveError> {
        let d = format!("{}.reorder_storage({})", self.fname(), vars.join(", "));
        self.func_level(&d)?;
        if self.p.outputs.contains(&self.func) {
            return Err(err(
                d,
                "reorder-storage",
                format!(
                    "`{}` is an output: its layout is the caller's buffer's",
                    self.fname()
                ),
            ));
        }
        let mut at = Vec::new();
        for v in vars {
            let k = self.pure_dim(&d, v)?;
            if at.contains(&k) {
                return Err(err(d, "name", format!("`{v}` is named twice")));
            }
            at.push(k);
        }
        let storage = &mut self.s.funcs[self.func].storage;
        let at: Vec<usize> = at
            .iter()
            .filter_map(|k| storage.iter().position(|x| x == k))
            .collect();
        place_in_order(storage, &at);
        Ok(self)
    }

    fn set_kind(&mut self, directive: String, var: &str, kind: LoopKind) -> R {
        let k = self.dim_index(&directive, var)?;
        if kind == LoopKind::Parallel && !self.stage_ref().dims[k].pure {
            let alts = self
                .stage_ref()
                .dims
                .iter()
                .filter(|x| x.pure)
                .map(|x| x.name.clone())
                .collect();
            return Err(DirectiveError {
                directive,
                rule: "parallel-pure",
                message: format!(
                    "`{var}` is a reduction loop: its iterations may write the same point (or read what another wrote through a `where` predicate), so they race"
                ),
                alternatives: alts,
            });
        }
        if kind == LoopKind::Parallel {
            let splits = &self.stage_ref().splits;
            if overlaps(splits, splits.len(), var) {
                return Err(DirectiveError {
                    directive,
                    rule: "parallel-overlap",
                    message: format!(
                        "the tiles of `{var}` overlap (its split shifts the last tile inwards), so two iterations would write the same points at once, a data race"
                    ),
                    alternatives: vec![
                        "split with GuardWithIf or RoundUp".into(),
                        "a loop whose iterations write disjoint points".into(),
                    ],
                });
            }
        }
        self.stage_mut().dims[k].kind = kind;
        Ok(())
    }

    /// `parallel(var)`.
    pub fn parallel(&mut self, var: &str) -> Result<&mut Self, DirectiveError> {
        let d = format!("{}.parallel({var})", self.stage_name());
        self.set_kind(d, var, LoopKind::Parallel)?;
        Ok(self)
    }

    /// The tail a split by `vectorize`/`unroll` with a factor uses: Halide's `Auto`
    /// (`ShiftInwards` on pure stages, `GuardWithIf` on update stages).
    pub(crate) fn auto_tail(&self) -> Tail {
        if self.stage == 0 {
            Tail::ShiftInwards
        } else {
            Tail::GuardWithIf
        }
    }

    /// `vectorize(var)`: the loop must have a constant extent (checked by lowering).
    pub fn vectorize(&mut self, var: &str) -> Result<&mut Self, DirectiveError> {
        let d = format!("{}.vectorize({var})", self.stage_name());
        self.set_kind(d, var, LoopKind::Vectorized)?;
        Ok(self)
    }

    /// `vectorize(var, width)`: split by `width` (inner loop `var_v`) and vectorize the inner.
    pub fn vectorize_by(&mut self, var: &str, width: i64) -> Result<&mut Self, DirectiveError> {
        let inner = self.split_off(var, "v", width)?;
        self.vectorize(&inner)
    }

    /// Split `var` by `factor` with the default tail, the inner loop named `var_suffix`.
    fn split_off(
        &mut self,
        var: &str,
        suffix: &str,
        factor: i64,
    ) -> Result<String, DirectiveError> {
        let inner = format!("{var}_{suffix}");
        let tail = self.auto_tail();
        self.split(var, var, &inner, factor, tail)?;
        Ok(inner)
    }

    /// `unroll(var)`: the loop must have a constant extent (checked by lowering).
    pub fn unroll(&mut self, var: &str) -> Result<&mut Self, DirectiveError> {
        let d = format!("{}.unroll({var})", self.stage_name());
        self.set_kind(d, var, LoopKind::Unrolled)?;
        Ok(self)
    }

    /// `unroll(var, factor)`: split by `factor` (inner loop `var_u`) and unroll the inner.
    pub fn unroll_by(&mut self, var: &str, factor: i64) -> Result<&mut Self, DirectiveError> {
        let inner = self.split_off(var, "u", factor)?;
        self.unroll(&inner)
    }

    /// `tile(x, y, xo, yo, xi, yi, fx, fy, tail)`: split both and order `xi, yi, xo, yo`.
    #[allow(clippy::too_many_arguments)]
    pub fn tile(
        &mut self,
        x: &str,
        y: &str,
        xo: &str,
        yo: &str,
        xi: &str,
        yi: &str,
        fx: i64,
        fy: i64,
        tail: Tail,
    ) -> Result<&mut Self, DirectiveError> {
        self.split(x, xo, xi, fx, tail)?;
        self.split(y, yo, yi, fy, tail)?;
        self.reorder(&[xi, yi, xo, yo])
    }

    fn level_of(
        &self,
        directive: &str,
        func: &str,
        var: Option<&str>,
    ) -> Result<Level, DirectiveError> {
        let c = self
            .p
            .funcs
            .iter()
            .position(|f| f.name == func)
            .ok_or_else(|| err(directive.to_string(), "name", format!("no func `{func}`")))?;
        let Some(var) = var else {
            return Ok(Level::Root);
        };
        // Halide's `LoopLevel(f, var)` names a loop of f's last stage.
        let stage = self.p.funcs[c].updates.len();
        Ok(Level::At {
            func: c,
            stage,
            var: var.to_string(),
        })
    }

    fn check_computable(&self, d: &str) -> R {
        if self.p.outputs.contains(&self.func) {
            return Err(err(
                d.to_string(),
                "output-root",
                format!(
                    "`{}` is an output, which is computed at the root",
                    self.fname()
                ),
            ));
        }
        Ok(())
    }

    /// `compute_root()`.
    pub fn compute_root(&mut self) -> Result<&mut Self, DirectiveError> {
        self.func_level(&format!("{}.compute_root()", self.fname()))?;
        self.s.funcs[self.func].compute = Level::Root;
        Ok(self)
    }

    /// `compute_at(consumer, var)`: where is checked by lowering, which knows every access.
    pub fn compute_at(&mut self, consumer: &str, var: &str) -> Result<&mut Self, DirectiveError> {
        let d = format!("{}.compute_at({consumer}, {var})", self.fname());
        self.func_level(&d)?;
        self.check_computable(&d)?;
        let level = self.level_of(&d, consumer, Some(var))?;
        self.s.funcs[self.func].compute = level;
        Ok(self)
    }

    /// `compute_inline()`: substitute the definition into every consumer.
    pub fn compute_inline(&mut self) -> Result<&mut Self, DirectiveError> {
        let d = format!("{}.compute_inline()", self.fname());
        self.func_level(&d)?;
        self.check_computable(&d)?;
        if !self.p.funcs[self.func].updates.is_empty() {
            return Err(DirectiveError {
                directive: d,
                rule: "inline-pure",
                message: format!(
                    "`{}` has update stages, so it has no single expression to substitute",
                    self.fname()
                ),
                alternatives: vec!["compute_root()".into(), "compute_at(..)".into()],
            });
        }
        self.s.funcs[self.func].compute = Level::Inline;
        Ok(self)
    }

    /// `clone_in(consumer)`: the consumer's definitions read a copy of the func, inlined into
    /// them (Halide's `clone_in`, whose copy keeps its default schedule, inline), while its
    /// other consumers read the func where it is computed. A pipeline that materializes a
    /// cheap func for one consumer and recomputes it in another, without a buffer between.
    pub fn clone_in(&mut self, consumer: &str) -> Result<&mut Self, DirectiveError> {
        let d = format!("{}.clone_in({consumer})", self.fname());
        self.func_level(&d)?;
        let f = self.func;
        let callers: Vec<String> = (self.p.funcs.iter())
            .enumerate()
            .filter(|(g, x)| *g != f && x.calls(f))
            .map(|(_, x)| format!("clone_in({})", x.name))
            .collect();
        let c = self.p.funcs.iter().position(|x| x.name == consumer);
        let Some(c) = c.filter(|&c| c != f && self.p.funcs[c].calls(f)) else {
            return Err(DirectiveError {
                directive: d,
                rule: "clone-in-caller",
                message: format!(
                    "`{consumer}` is not a func whose definitions call `{}`",
                    self.fname()
                ),
                alternatives: callers,
            });
        };
        if !self.p.funcs[f].updates.is_empty() {
            return Err(DirectiveError {
                directive: d,
                rule: "inline-pure",
                message: format!(
                    "`{}` has update stages, so its copy has no single expression to substitute",
                    self.fname()
                ),
                alternatives: Vec::new(),
            });
        }
        let into = &mut self.s.funcs[f].inline_in;
        if !into.contains(&c) {
            into.push(c);
        }
        Ok(self)
    }

    /// `store_root()`.
    pub fn store_root(&mut self) -> Result<&mut Self, DirectiveError> {
        self.func_level(&format!("{}.store_root()", self.fname()))?;
        self.s.funcs[self.func].store = Some(Level::Root);
        Ok(self)
    }

    /// `store_at(consumer, var)`.
    pub fn store_at(&mut self, consumer: &str, var: &str) -> Result<&mut Self, DirectiveError> {
        let d = format!("{}.store_at({consumer}, {var})", self.fname());
        self.func_level(&d)?;
        self.check_computable(&d)?;
        let level = self.level_of(&d, consumer, Some(var))?;
        self.s.funcs[self.func].store = Some(level);
        Ok(self)
    }

    /// `bound(var, min, extent)`.
    pub fn bound(
        &mut self,
        var: &str,
        min: Expr,
        extent: Expr,
    ) -> Result<&mut Self, DirectiveError> {
        let d = format!("{}.bound({var}, ..)", self.fname());
        self.func_level(&d)?;
        let dim = self.pure_dim(&d, var)?;
        self.startup(&d, &min, false)?;
        self.startup(&d, &extent, false)?;
        self.s.funcs[self.func].bounds.push(Bound {
            dim,
            min: Some(min),
            extent,
        });
        Ok(self)
    }

    /// A directive's expression must be a startup expression: i32 literals and parameters and
    /// the bounds of inputs (and, with `outputs`, the windows of outputs and booleans), with
    /// arithmetic.
    fn startup(&self, d: &str, e: &Expr, outputs: bool) -> R {
        let mut bad = None;
        e.walk(&mut |x| {
            let ok = match x {
                Expr::Lit(v) => {
                    v.dtype() == crate::ast::COORD || (outputs && v.dtype() == weft_ir::DType::Bool)
                }
                Expr::OutputDim { output, dim, .. } => {
                    outputs
                        && self
                            .p
                            .outputs
                            .get(*output)
                            .is_some_and(|&f| *dim < self.p.funcs[f].vars.len())
                }
                Expr::Param(k) => self
                    .p
                    .params
                    .get(*k)
                    .is_some_and(|q| q.ty == crate::ast::COORD),
                Expr::InputDim { input, dim, .. } => {
                    self.p.inputs.get(*input).is_some_and(|i| *dim < i.rank)
                }
                Expr::Unary(..) | Expr::Binary(..) | Expr::Select(..) => true,
                _ => false,
            };
            if !ok && bad.is_none() {
                bad = Some(format!("{x:?}"));
            }
        });
        match bad {
            None => Ok(()),
            Some(x) => Err(err(
                d.to_string(),
                "startup",
                format!("`{x}` is not a startup expression (i32 literals, i32 parameters of the pipeline, bounds of its inputs{})", if outputs { ", windows of its outputs" } else { "" }),
            )),
        }
    }

    /// `bound_extent(var, extent)`.
    pub fn bound_extent(&mut self, var: &str, extent: Expr) -> Result<&mut Self, DirectiveError> {
        let d = format!("{}.bound_extent({var}, ..)", self.fname());
        self.func_level(&d)?;
        let dim = self.pure_dim(&d, var)?;
        self.startup(&d, &extent, false)?;
        self.s.funcs[self.func].bounds.push(Bound {
            dim,
            min: None,
            extent,
        });
        Ok(self)
    }

    /// `align_bounds(var, modulus, remainder)`: the region computed in `var` widened to start at
    /// `remainder` plus a multiple of `modulus` and to span a multiple of `modulus`.
    pub fn align_bounds(
        &mut self,
        var: &str,
        modulus: i64,
        remainder: i64,
    ) -> Result<&mut Self, DirectiveError> {
        let d = format!(
            "{}.align_bounds({var}, {modulus}, {remainder})",
            self.fname()
        );
        self.func_level(&d)?;
        let dim = self.pure_dim(&d, var)?;
        if self.p.outputs.contains(&self.func) {
            return Err(err(
                d,
                "align-bounds",
                format!(
                    "`{}` is an output: its region is the caller's window",
                    self.fname()
                ),
            ));
        }
        if modulus < 1 || !(0..modulus).contains(&remainder) {
            return Err(err(
                d,
                "align-bounds",
                "the modulus must be at least 1 and the remainder in 0..modulus".into(),
            ));
        }
        self.s.funcs[self.func].aligns.push(Align {
            dim,
            modulus,
            remainder,
        });
        Ok(self)
    }

    fn pure_dim(&self, d: &str, var: &str) -> Result<usize, DirectiveError> {
        let f = &self.p.funcs[self.func];
        f.vars
            .iter()
            .position(|v| v == var)
            .ok_or_else(|| DirectiveError {
                directive: d.to_string(),
                rule: "name",
                message: format!("`{var}` is not a pure variable of `{}`", f.name),
                alternatives: f.vars.clone(),
            })
    }
}
