//! The reference interpreter of pipelines: the big-step semantics of the Halide formalisation
//! (`../shared/reference/halide-formal-semantics.md` §1, its Fig. 6), lazy and pointwise. It is
//! the oracle that lowered and scheduled pipelines are tested against.
//!
//! - A func's value at a point is its pure definition there, rewritten by each update stage in
//!   order; an update stage runs its reduction domain's points in order (first variable
//!   innermost), and at each point replaces the value when the left-hand side is the point and
//!   every predicate holds: `select(lhs == x and where, value, previous)`, with `select` strict,
//!   so the value is evaluated (and its errors count) at every point of the domain.
//! - Values carry errors: `RDom` (a reduction domain with a negative extent makes every point of
//!   the func this error) and `Mem` (a read of an input outside its buffer, the counterpart of an
//!   uninitialised cell); an operation with error operands gives the larger error.
//! - Arithmetic is weft's (wrapping integers, `x / 0 == 0`, floor division; `weft_interp`'s).
//!
//! Results are memoised per point, and the evaluation runs on a thread with a large stack (chains
//! of self-reads such as a prefix sum recurse once per point).

use crate::ast::{Callee, Expr, Func, Pipeline, COORD};
use std::collections::HashMap;
use std::rc::Rc;
use weft_interp::Scalar;

/// An error value; the order is the formalisation's (`RDom < Mem`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ErrorValue {
    /// A reduction domain with a negative extent.
    RDom,
    /// A read outside an input buffer.
    Mem,
}

/// A value or an error value.
pub type Value = Result<Scalar, ErrorValue>;

/// An input buffer's contents: the region it covers (`min`, `extent` per dimension) and its
/// values, dense, the first dimension innermost.
#[derive(Clone, Debug, PartialEq)]
pub struct InputBuffer {
    pub region: Vec<(i64, i64)>,
    pub data: Vec<Scalar>,
}

impl InputBuffer {
    fn get(&self, idx: &[i64]) -> Option<Scalar> {
        if idx.len() != self.region.len() {
            return None;
        }
        let mut offset = 0i64;
        let mut stride = 1i64;
        for (&i, &(min, extent)) in idx.iter().zip(&self.region) {
            let k = i.checked_sub(min)?;
            if k < 0 || k >= extent {
                return None;
            }
            offset += k * stride;
            stride *= extent;
        }
        self.data.get(usize::try_from(offset).ok()?).copied()
    }
}

/// The arguments of a realization.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Args {
    pub params: Vec<Scalar>,
    pub inputs: Vec<InputBuffer>,
}

/// The values of output `func` on `window` (`min`, `extent` per dimension), dense, the first
/// dimension innermost. Errors: arguments that do not fit the pipeline, or an ill-typed pipeline.
pub fn realize(
    p: &Pipeline,
    args: &Args,
    func: usize,
    window: &[(i64, i64)],
) -> Result<Vec<Value>, String> {
    let f = p.funcs.get(func).ok_or("no such func")?;
    if window.len() != f.vars.len() {
        return Err(format!(
            "`{}` has {} dimensions, the window {}",
            f.name,
            f.vars.len(),
            window.len()
        ));
    }
    if args.params.len() != p.params.len() || args.inputs.len() != p.inputs.len() {
        return Err("the arguments do not match the pipeline's parameters and inputs".into());
    }
    for (x, q) in args.params.iter().zip(&p.params) {
        if x.dtype() != q.ty {
            return Err(format!(
                "parameter `{}` is {}, given {}",
                q.name,
                q.ty,
                x.dtype()
            ));
        }
    }
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .stack_size(1 << 30)
            .spawn_scoped(s, || {
                let mut ev = Evaluator {
                    p,
                    args,
                    memo: HashMap::new(),
                    domains: HashMap::new(),
                    runs: HashMap::new(),
                };
                let mut out = Vec::new();
                let mut point = vec![0i64; window.len()];
                let total: i64 = window.iter().map(|&(_, e)| e.max(0)).product();
                for mut k in 0..total {
                    for (d, &(min, extent)) in window.iter().enumerate() {
                        point[d] = min + k % extent;
                        k /= extent;
                    }
                    out.push(ev.value(func, &point)?);
                }
                Ok(out)
            })
            .map_err(|e| e.to_string())?
            .join()
            .map_err(|_| "the interpreter panicked".to_string())?
    })
}

/// Where an expression is evaluated: the func it defines, the point, the stage and how many of
/// the stage's domain points ran before (for reads of the func itself).
struct Site<'a> {
    func: usize,
    vars: &'a [i64],
    rvars: &'a [i64],
    stage: usize,
    before: usize,
}

struct Evaluator<'a> {
    p: &'a Pipeline,
    args: &'a Args,
    /// (func, stage, points of the stage that ran, point) -> value.
    memo: HashMap<(usize, usize, usize, Vec<i64>), Value>,
    /// (func, stage) -> the points of the stage's reduction domain (startup expressions: one
    /// value per realization).
    domains: HashMap<(usize, usize), Domain>,
    /// Scattering stages run as a whole, by (func, stage, slice).
    runs: HashMap<RunKey, Run>,
}

/// A stage whose left-hand side is not its pure variables (a histogram, a scan) writes points
/// that only running it tells: it runs once per slice (the values of the pure variables it
/// keeps, `None` for the other dimensions), points in order, as the semantics' sequence of
/// selects does for every point at once.
type RunKey = (usize, usize, Vec<Option<i64>>);

/// The points of a reduction domain in order, or the error of a negative extent.
type Domain = Result<Rc<Vec<Vec<i64>>>, ErrorValue>;

#[derive(Default)]
struct Run {
    /// The points written so far, with their values.
    written: HashMap<Vec<i64>, Value>,
    /// The largest error of a left-hand side, predicate or value so far: select is strict, so
    /// it reaches every point of the slice.
    poison: Option<ErrorValue>,
}

type Eval<T> = Result<T, String>;

impl Evaluator<'_> {
    /// The value of func `f` at `x`, after all its stages.
    fn value(&mut self, f: usize, x: &[i64]) -> Eval<Value> {
        let last = self.p.funcs[f].updates.len();
        self.after_stage(f, last, x)
    }

    /// The value of `f` at `x` after stage `j` (0 the pure definition) has run completely.
    fn after_stage(&mut self, f: usize, j: usize, x: &[i64]) -> Eval<Value> {
        if j == 0 {
            let key = (f, 0, 0, x.to_vec());
            if let Some(v) = self.memo.get(&key) {
                return Ok(*v);
            }
            let func: &Func = &self.p.funcs[f];
            let site = Site {
                func: f,
                vars: x,
                rvars: &[],
                stage: 0,
                before: 0,
            };
            let v = self.eval(&func.pure, &site)?.map(|s| s.cast(func.ty));
            self.memo.insert(key, v);
            return Ok(v);
        }
        let points = match self.domain(f, j)? {
            Err(e) => return Ok(Err(e)),
            Ok(points) => points,
        };
        match self.slice(f, j, x) {
            Some(key) => {
                if !self.runs.contains_key(&key) {
                    self.run_stage(&key, x, &points)?;
                }
                self.in_run(&key, x)
            }
            None => self.after_points(f, j, points.len(), x, &points),
        }
    }

    /// The slice of `x` in stage `j` of `f` when the stage scatters (see [`Run`]).
    fn slice(&self, f: usize, j: usize, x: &[i64]) -> Option<RunKey> {
        let lhs = &self.p.funcs[f].updates[j - 1].lhs;
        let pure = |d: usize| lhs[d] == Expr::Var(d);
        if (0..lhs.len()).all(pure) {
            return None;
        }
        let slice = (0..lhs.len()).map(|d| pure(d).then(|| x[d])).collect();
        Some((f, j, slice))
    }

    /// The value at `x` of the stage run (or running) as `key`: what it wrote, or the value
    /// before the stage, with the errors so far.
    fn in_run(&mut self, key: &RunKey, x: &[i64]) -> Eval<Value> {
        let (written, poison) = match self.runs.get(key) {
            Some(r) => (r.written.get(x).copied(), r.poison),
            None => return Err("a stage run is missing".into()),
        };
        // Select is strict in the previous value too: an error there stays.
        let v = match (self.after_stage(key.0, key.1 - 1, x)?, written) {
            (Err(old), _) => Err(old),
            (Ok(_), Some(v)) => v,
            (before, None) => before,
        };
        Ok(match (poison, v) {
            (None, v) => v,
            (Some(e), Ok(_)) => Err(e),
            (Some(e), Err(old)) => Err(e.max(old)),
        })
    }

    /// Run the scattering stage `key` (of which `x` is a point) over all its domain's points.
    fn run_stage(&mut self, key: &RunKey, x: &[i64], points: &[Vec<i64>]) -> Eval<()> {
        let (f, j) = (key.0, key.1);
        self.runs.insert(key.clone(), Run::default());
        let ty = self.p.funcs[f].ty;
        for (n, r) in points.iter().enumerate() {
            let u = &self.p.funcs[f].updates[j - 1];
            let site = Site {
                func: f,
                vars: x,
                rvars: r,
                stage: j,
                before: n,
            };
            let mut err: Option<ErrorValue> = None;
            let mut at = Vec::with_capacity(u.lhs.len());
            for e in &u.lhs {
                match self.eval(e, &site)? {
                    Ok(c) => at.push(int_of(c)?),
                    Err(e) => err = err.max(Some(e)),
                }
            }
            let mut hit = true;
            for w in &u.wheres {
                match self.eval(w, &site)? {
                    Ok(c) => hit &= truth(c),
                    Err(e) => err = err.max(Some(e)),
                }
            }
            let value = self.eval(&u.value, &site)?.map(|s| s.cast(ty));
            if let Err(e) = value {
                err = err.max(Some(e));
            }
            let run = self.runs.get_mut(key).ok_or("a stage run is missing")?;
            if err.is_some() {
                run.poison = run.poison.max(err);
            } else if hit {
                run.written.insert(at, value);
            }
        }
        Ok(())
    }

    /// The points of stage `j`'s reduction domain in order, or the error of a negative extent.
    fn domain(&mut self, f: usize, j: usize) -> Eval<Domain> {
        if let Some(d) = self.domains.get(&(f, j)) {
            return Ok(d.clone());
        }
        let d = self.compute_domain(f, j)?.map(Rc::new);
        self.domains.insert((f, j), d.clone());
        Ok(d)
    }

    fn compute_domain(&mut self, f: usize, j: usize) -> Eval<Result<Vec<Vec<i64>>, ErrorValue>> {
        let u = &self.p.funcs[f].updates[j - 1];
        let mut dims = Vec::new();
        for r in &u.rdom {
            let site = Site {
                func: f,
                vars: &[],
                rvars: &[],
                stage: j,
                before: 0,
            };
            let (min, extent) = (self.eval(&r.min, &site)?, self.eval(&r.extent, &site)?);
            let (min, extent) = match (min, extent) {
                (Ok(m), Ok(e)) => (int_of(m)?, int_of(e)?),
                (Err(a), Ok(_)) | (Ok(_), Err(a)) => return Ok(Err(a)),
                (Err(a), Err(b)) => return Ok(Err(a.max(b))),
            };
            if extent < 0 {
                return Ok(Err(ErrorValue::RDom));
            }
            dims.push((min, extent));
        }
        let total: i64 = dims.iter().map(|&(_, e)| e).product();
        let mut points = Vec::new();
        for mut k in 0..total {
            let mut p = Vec::with_capacity(dims.len());
            for &(min, extent) in &dims {
                p.push(min + k % extent);
                k /= extent;
            }
            points.push(p);
        }
        Ok(Ok(points))
    }

    /// The value of `f` at `x` after the first `k` points of stage `j` (`j >= 1`).
    fn after_points(
        &mut self,
        f: usize,
        j: usize,
        k: usize,
        x: &[i64],
        points: &[Vec<i64>],
    ) -> Eval<Value> {
        let key = (f, j, k, x.to_vec());
        if let Some(v) = self.memo.get(&key) {
            return Ok(*v);
        }
        // Walk up from the nearest known state of this point's chain, without recursion.
        let mut start = k;
        while start > 0 && !self.memo.contains_key(&(f, j, start, x.to_vec())) {
            start -= 1;
        }
        let mut v = match self.memo.get(&(f, j, start, x.to_vec())) {
            Some(v) => *v,
            None => self.after_stage(f, j - 1, x)?,
        };
        let ty = self.p.funcs[f].ty;
        for (n, r) in points.iter().enumerate().take(k).skip(start) {
            let u = &self.p.funcs[f].updates[j - 1];
            let site = Site {
                func: f,
                vars: x,
                rvars: r,
                stage: j,
                before: n,
            };
            let mut hit: Result<bool, ErrorValue> = Ok(true);
            for (d, e) in u.lhs.iter().enumerate() {
                hit = match (hit, self.eval(e, &site)?) {
                    (Ok(h), Ok(c)) => Ok(h && int_of(c)? == x[d]),
                    (Err(a), Err(b)) => Err(a.max(b)),
                    (Err(a), _) | (_, Err(a)) => Err(a),
                };
            }
            for w in &u.wheres {
                hit = match (hit, self.eval(w, &site)?) {
                    (Ok(h), Ok(c)) => Ok(h && truth(c)),
                    (Err(a), Err(b)) => Err(a.max(b)),
                    (Err(a), _) | (_, Err(a)) => Err(a),
                };
            }
            let value = self.eval(&u.value, &site)?.map(|s| s.cast(ty));
            // Strict select: an error anywhere is the result.
            v = match (hit, value, v) {
                (Ok(true), Ok(b), Ok(_)) => Ok(b),
                (Ok(false), Ok(_), Ok(old)) => Ok(old),
                (h, b, old) => Err([h.err(), b.err(), old.err()]
                    .into_iter()
                    .flatten()
                    .max()
                    .unwrap_or(ErrorValue::Mem)),
            };
            self.memo.insert((f, j, n + 1, x.to_vec()), v);
        }
        Ok(v)
    }

    fn eval(&mut self, e: &Expr, site: &Site) -> Eval<Value> {
        Ok(match e {
            Expr::Lit(v) => Ok(*v),
            Expr::Var(k) => Ok(coord(
                *site.vars.get(*k).ok_or("pure variable out of range")?,
            )),
            Expr::RVar(k) => Ok(coord(
                *site
                    .rvars
                    .get(*k)
                    .ok_or("reduction variable out of range")?,
            )),
            Expr::Param(k) => Ok(*self.args.params.get(*k).ok_or("no such parameter")?),
            Expr::InputDim { input, dim, extent } => {
                let r = self
                    .args
                    .inputs
                    .get(*input)
                    .and_then(|b| b.region.get(*dim))
                    .ok_or("no such input dimension")?;
                Ok(coord(if *extent { r.1 } else { r.0 }))
            }
            Expr::OutputDim { .. } => Err("an output's window is not a value of the algorithm")?,
            Expr::Call(callee, args) => {
                let mut idx = Vec::with_capacity(args.len());
                let mut err = None;
                for a in args {
                    match self.eval(a, site)? {
                        Ok(v) => idx.push(int_of(v)?),
                        Err(x) => err = err.max(Some(x)),
                    }
                }
                if let Some(x) = err {
                    return Ok(Err(x));
                }
                match callee {
                    Callee::Input(k) => {
                        let b = self.args.inputs.get(*k).ok_or("no such input")?;
                        b.get(&idx).ok_or(ErrorValue::Mem)
                    }
                    // A stage reads the func itself as the points before it left it.
                    Callee::Func(g) if *g == site.func && site.stage > 0 => {
                        if site.before == 0 {
                            self.after_stage(*g, site.stage - 1, &idx)?
                        } else if let Some(key) = self.slice(*g, site.stage, &idx) {
                            // The slice is the one running (syntactic separation).
                            self.in_run(&key, &idx)?
                        } else {
                            let points = match self.domain(*g, site.stage)? {
                                Ok(p) => p,
                                Err(x) => return Ok(Err(x)),
                            };
                            self.after_points(*g, site.stage, site.before, &idx, &points)?
                        }
                    }
                    Callee::Func(g) => self.value(*g, &idx)?,
                }
            }
            Expr::Unary(op, a) => match self.eval(a, site)? {
                Ok(v) => Ok(weft_interp::unary(*op, v)?),
                Err(x) => Err(x),
            },
            Expr::Binary(op, a, b) => {
                let (x, y) = (self.eval(a, site)?, self.eval(b, site)?);
                match (x, y) {
                    (Ok(x), Ok(y)) => Ok(weft_interp::binary(*op, x, y)?),
                    (Err(a), Err(b)) => Err(a.max(b)),
                    (Err(a), _) | (_, Err(a)) => Err(a),
                }
            }
            Expr::Select(c, a, b) => {
                let (c, a, b) = (
                    self.eval(c, site)?,
                    self.eval(a, site)?,
                    self.eval(b, site)?,
                );
                match (c, a, b) {
                    (Ok(c), Ok(a), Ok(b)) => Ok(if truth(c) { a } else { b }),
                    (c, a, b) => Err([c.err(), a.err(), b.err()]
                        .into_iter()
                        .flatten()
                        .max()
                        .unwrap_or(ErrorValue::Mem)),
                }
            }
            Expr::Cast(to, a) => self.eval(a, site)?.map(|v| v.cast(*to)),
            Expr::Math(f, args) => {
                let mut vals = Vec::with_capacity(args.len());
                let mut err = None;
                for a in args {
                    match self.eval(a, site)? {
                        Ok(v) => vals.push(v),
                        Err(x) => err = err.max(Some(x)),
                    }
                }
                match err {
                    Some(x) => Err(x),
                    None => Ok(weft_interp::math(*f, &vals)?),
                }
            }
        })
    }
}

fn coord(v: i64) -> Scalar {
    Scalar::from_int_wrapping(i128::from(v), COORD)
}

fn int_of(v: Scalar) -> Eval<i64> {
    v.as_i128()
        .and_then(|x| i64::try_from(x).ok())
        .ok_or_else(|| format!("a coordinate must be an integer, found {v}"))
}

/// Whether a condition value is true (a bool, or a non-zero integer).
fn truth(v: Scalar) -> bool {
    match v {
        Scalar::Bool(b) => b,
        other => other.as_i128().is_some_and(|x| x != 0),
    }
}
