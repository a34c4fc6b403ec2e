//! Reads at half the lane of a short vector loop (an upsampled level: `a[(v + A) / 2]`), loaded
//! before the loop as two dense rows and interleaved. GCC turns each such read into gathers (two
//! per 16 lanes), where the loop needs only `N / 2 + 1` consecutive elements: lane `2j` reads
//! element `j + A / 2` and lane `2j + 1` element `j + (A + 1) / 2` (floor division: `(2j + A) / 2
//! = j + A / 2` for every integer `A`). The prologue
//!
//! ```c
//! float t[N];
//! for (int64_t j = 0; j < N / 2; j++) { t[2 * j] = a[.. j + A / 2]; t[2 * j + 1] = a[.. j + (A + 1) / 2]; }
//! ```
//!
//! is two dense loads and a permutation to GCC's vectorizer, and the loop reads `t[v]`.
//!
//! Sound where the loop runs `v = 0 .. N` in full (constant bounds from 0), every iteration makes
//! the read (it is not under an `if`; `select` evaluates both sides), and the body writes no
//! buffer with the read's C base: the prologue then reads exactly the cells the loop reads (lane
//! `l` the loop's cell at `v = l`), before stores that cannot change them. Its index arithmetic
//! is the loop's: the quotient's node is replaced by `j + N(p) / 2`, where `N(p)` is the
//! numerator's own tree with the lane variable's node replaced by `p` (its partial sums are the
//! numerator's at `v = p`), and every sum above it keeps its tree and equals the loop's at
//! `v = 2j + p`, so each value is one the checker proved the loop's arithmetic computes (a
//! regrouped sum need not be: review).

use crate::emit::{data_indexed, unconditional_accesses, Binding, ProcCx};
use crate::vector_loops::{flatten, mentions};
use std::collections::HashSet;
use weft_ir::{BinOp, Diagnostic, Expr, ExprKind, Stmt, StmtKind, Sym, Ty};

/// Longest vector loop whose halved reads are staged (elements per staged row).
const MAX_LANES: i64 = 64;

impl ProcCx<'_> {
    /// Emit the prologue of each halved read of the vector loop `for v in lo..bound: body`
    /// (see the module docs) and let the body read the staged element instead.
    pub(crate) fn stage_halved_reads(
        &mut self,
        var: &Sym,
        v: &str,
        lo: &str,
        bound: &str,
        body: &[Stmt],
    ) -> Result<(), Diagnostic> {
        let lanes = match bound.parse::<i64>() {
            Ok(n) if lo == "0" && n >= 2 && n % 2 == 0 && n <= MAX_LANES => n,
            _ => return Ok(()),
        };
        // A vector loop's body is assignments only (`vector_shaped`); anything else is left.
        let mut written = HashSet::new();
        for s in body {
            let StmtKind::Assign { buf, .. } = &s.kind else {
                return Ok(());
            };
            let Some(Binding::Buf(view)) = self.env.get(buf) else {
                return Ok(());
            };
            written.insert(view.base.clone());
        }
        let unconditional = unconditional_accesses(body);
        let mut staged = HashSet::new();
        for (buf, idx, span) in crate::emit::accesses(body) {
            if !unconditional.contains(&(idx.as_ptr() as usize)) || data_indexed(idx) {
                continue;
            }
            let Some(Binding::Buf(view)) = self.env.get(&buf) else {
                continue;
            };
            if written.contains(&view.base) || !view.mem.addressable {
                continue;
            }
            let elem = view.elem;
            let Some((last, init)) = idx.split_last() else {
                continue;
            };
            if init.iter().any(|i| mentions(i, var)) {
                continue;
            }
            let Some((quotient, numerator, lane_var)) = halved(last, var) else {
                continue;
            };
            let text = self.element(&buf, idx, span)?;
            if !staged.insert(text.clone()) {
                continue;
            }
            let (row, j) = (self.tmp("halved"), self.tmp("j"));
            let j_sym = Sym::new(&j);
            self.env.insert(j_sym.clone(), Binding::Ctrl(j.clone()));
            // The quotient at `v = 2j + p` is `j + N(p) / 2`, `N(p)` the numerator's own tree at
            // `v = p`; put in place of the quotient's node, the index keeps its tree.
            let lane = |parity: i64| {
                let half = Expr::binary(
                    BinOp::Div,
                    replace_addend(&numerator, &lane_var, &Expr::int(parity)),
                    Expr::int(2),
                );
                let by = Expr::binary(BinOp::Add, Expr::var(&j_sym, Ty::Int), half);
                let mut at = init.to_vec();
                at.push(replace_addend(last, &quotient, &by));
                at
            };
            let (even, odd) = (lane(0), lane(1));
            let even = self.element(&buf, &even, span);
            let odd = self.element(&buf, &odd, span);
            self.env.remove(&j_sym);
            let (even, odd) = (even?, odd?);
            self.line(&format!("{} {row}[{lanes}];", crate::helpers::c_type(elem)));
            // Kept a loop, as the vector loop is (GCC would unroll it first, then not
            // vectorize it).
            self.line("#pragma GCC unroll 1");
            self.line(&format!(
                "for (int64_t {j} = 0; {j} < {}; {j}++) {{",
                lanes / 2
            ));
            self.line(&format!("    {row}[2 * {j}] = {even};"));
            self.line(&format!("    {row}[2 * {j} + 1] = {odd};"));
            self.line("}");
            self.read_locals.insert(text, format!("{row}[{v}]"));
        }
        Ok(())
    }
}

/// `e` with the addend `target` (a node of its sum, by identity) replaced by `by`: the tree's
/// other nodes, and so the order of its additions, stay as they are.
fn replace_addend(e: &Expr, target: &Expr, by: &Expr) -> Expr {
    if Expr::ptr_eq(e, target) {
        return by.clone();
    }
    match &e.kind {
        // The nodes `flatten` descends, so that the addend it found is reached.
        ExprKind::Binary(op @ (BinOp::Add | BinOp::Sub), a, b) => Expr::binary(
            *op,
            replace_addend(a, target, by),
            replace_addend(b, target, by),
        ),
        _ => e.clone(),
    }
}

/// The one addend of the sum `e` that mentions `var`, with its sign (`None`: none or several).
fn only_addend_with<'e>(e: &'e Expr, var: &Sym) -> Option<(i64, &'e Expr)> {
    let (mut terms, mut k) = (Vec::new(), 0);
    flatten(e, 1, &mut terms, &mut k)?;
    let mut with = terms.into_iter().filter(|(_, t)| mentions(t, var));
    match (with.next(), with.next()) {
        (Some(t), None) => Some(t),
        _ => None,
    }
}

/// An index `R + (var + A) / 2` (one addend mentions `var`: the quotient by 2 of a sum in which
/// `var` is one added term and nothing else mentions it): the quotient's node, its numerator,
/// and the numerator's node of `var`.
fn halved(last: &Expr, var: &Sym) -> Option<(Expr, Expr, Expr)> {
    let (sign, quotient) = only_addend_with(last, var)?;
    let ExprKind::Binary(BinOp::Div, numerator, two) = &quotient.kind else {
        return None;
    };
    if sign < 0 || two.as_int_const() != Some(2) || quotient.ty != Ty::Int {
        return None;
    }
    let (sign, lane) = only_addend_with(numerator, var)?;
    if sign < 0 || !matches!(&lane.kind, ExprKind::Var(s) if s == var) {
        return None;
    }
    Some((quotient.clone(), numerator.clone(), lane.clone()))
}
