//! The one statement a step changed, for checks that need only look there.
//!
//! After every step the [`crate::Schedule`] proves the control rules (overflow, ranges, loop
//! extents) of the result. An expression the step did not change, in a context it did not
//! change, computes what it computed before (the step proved the program equivalent), so its
//! rules hold as they did; only the changed statement needs proving, in the context the rest of
//! the proc makes. This finds that statement: the deepest one whose subtree holds every
//! difference between the two bodies.

use weft_ir::{Block, Proc, Stmt, StmtKind};

/// The statement of `new` that holds every difference from `old`, or `None` when the change is
/// not confined to one statement (or changes the signature, or a declaration whose meaning
/// reaches past its statement: an allocation's strides, a window's view or a config value, also
/// one a call writes, may be read by unchanged code after it). A change inside a loop or `if`
/// may write a config field: the full walk forgets after a loop or `if` the values it may write,
/// so the code after it knew nothing of them either.
pub fn changed_stmt<'a>(old: &Proc, new: &'a Proc) -> Option<&'a Stmt> {
    if old.args != new.args || old.preds != new.preds {
        return None;
    }
    match in_block(&old.body, &new.body) {
        Diff::One(s) => Some(s),
        Diff::Same | Diff::Many => None,
    }
}

enum Diff<'a> {
    Same,
    One(&'a Stmt),
    Many,
}

fn in_block<'a>(old: &Block, new: &'a Block) -> Diff<'a> {
    if old.len() != new.len() {
        return Diff::Many;
    }
    let mut differing = old.iter().zip(new).filter(|(o, n)| !o.same(n) && o != n);
    let Some((o, n)) = differing.next() else {
        return Diff::Same;
    };
    if differing.next().is_some() {
        return Diff::Many;
    }
    // A call whose callee writes config fields is a config write too.
    let declares = |s: &Stmt| match &s.kind {
        StmtKind::Alloc { .. }
        | StmtKind::Free { .. }
        | StmtKind::Window { .. }
        | StmtKind::WriteConfig { .. } => true,
        StmtKind::Call { proc, .. } => weft_check::writes_configs(proc),
        _ => false,
    };
    if declares(o) || declares(n) {
        return Diff::Many;
    }
    if o.span != n.span {
        return Diff::One(n);
    }
    let inner = match (&o.kind, &n.kind) {
        (
            StmtKind::For {
                var: v0,
                lo: l0,
                hi: h0,
                body: b0,
                parallel: p0,
            },
            StmtKind::For {
                var: v1,
                lo: l1,
                hi: h1,
                body: b1,
                parallel: p1,
            },
        ) if v0 == v1 && l0 == l1 && h0 == h1 && p0 == p1 => in_block(b0, b1),
        (
            StmtKind::If {
                cond: c0,
                then_body: t0,
                else_body: e0,
            },
            StmtKind::If {
                cond: c1,
                then_body: t1,
                else_body: e1,
            },
        ) if c0 == c1 => match (in_block(t0, t1), in_block(e0, e1)) {
            (d, Diff::Same) | (Diff::Same, d) => d,
            _ => Diff::Many,
        },
        _ => Diff::Many,
    };
    match inner {
        Diff::One(s) => Diff::One(s),
        Diff::Same | Diff::Many => Diff::One(n),
    }
}

#[cfg(test)]
mod tests {
    use super::changed_stmt;
    use crate::path::{replace_stmt, Path, Step};
    use std::sync::Arc;
    use weft_ir::{Proc, Stmt, StmtKind};

    fn proc_of(text: &str) -> Arc<Proc> {
        let mut sources = weft_syntax::SourceMap::new();
        let m = weft_syntax::parse_module(&mut sources, "t.weft", text).expect("parses");
        m.procs[0].clone()
    }

    fn text(s: &Stmt) -> String {
        weft_ir::print::stmt_to_string(s)
    }

    /// `p` with the statement at `steps` (block, index pairs from the body) made a `pass`.
    fn passed(p: &Proc, steps: &[(usize, usize)]) -> Arc<Proc> {
        let path = Path(
            steps
                .iter()
                .map(|&(block, index)| Step { block, index })
                .collect(),
        );
        replace_stmt(
            p,
            &path,
            vec![Stmt::new(StmtKind::Pass, weft_ir::Span::DUMMY)],
        )
    }

    const BASE: &str = "proc p(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM) {
    alloc t: f32[4] @ DRAM;
    for i in 0..n {
        x[i] = 1.0;
        if i > 2 {
            y[i] = 2.0;
        }
    }
    y[0] = 3.0;
    free t;
}";

    #[test]
    fn the_deepest_statement_that_holds_the_change() {
        let old = proc_of(BASE);
        assert!(
            changed_stmt(&old, &old).is_none(),
            "no change, no statement"
        );
        // `y[i] = 2.0` (then-branch of the `if`, in the loop) made a `pass`: that statement.
        let new = passed(&old, &[(0, 1), (0, 1), (0, 0)]);
        assert_eq!(text(changed_stmt(&old, &new).expect("one")).trim(), "pass;");
        // Then also `x[i] = 1.0`: two statements of the loop body, so the loop.
        let both = passed(&new, &[(0, 1), (0, 0)]);
        assert!(text(changed_stmt(&old, &both).expect("the loop")).starts_with("for i"));
    }

    #[test]
    fn no_statement_where_the_change_is_spread_or_reaches_past_its_statement() {
        let old = proc_of(BASE);
        // Two top-level statements changed.
        let new = passed(&passed(&old, &[(0, 2)]), &[(0, 1), (0, 0)]);
        assert!(changed_stmt(&old, &new).is_none());
        // A statement added.
        let path = Path::top(2);
        let added = replace_stmt(&old, &path, vec![old.body[2].clone(), old.body[2].clone()]);
        assert!(changed_stmt(&old, &added).is_none());
        // An allocation changed: what it declares is used after it.
        assert!(changed_stmt(&old, &passed(&old, &[(0, 0)])).is_none());
        // A top-level write changed: that statement.
        let new = passed(&old, &[(0, 2)]);
        assert_eq!(text(changed_stmt(&old, &new).expect("one")).trim(), "pass;");
    }

    /// Review hole: a call of a callee that writes config fields is a config write, whose value
    /// code after it may read; a call of one that writes none is one statement like any other.
    #[test]
    fn a_call_that_writes_config_fields_reaches_past_its_statement() {
        let mut sources = weft_syntax::SourceMap::new();
        let text = "config C { k: index }
proc setk() {
    C.k = 1;
}
proc nop() {
    pass;
}
proc p(x: f32[4] @ DRAM) {
    nop();
    x[0] = 1.0;
}";
        let m = weft_syntax::parse_module(&mut sources, "t.weft", text).expect("parses");
        let (setk, nop, old) = (m.procs[0].clone(), m.procs[1].clone(), m.procs[2].clone());
        let call = |proc: Arc<Proc>| {
            let kind = StmtKind::Call { proc, args: vec![] };
            Stmt::new(kind, weft_ir::Span::DUMMY)
        };
        let to_setk = replace_stmt(&old, &Path::top(0), vec![call(setk)]);
        assert!(changed_stmt(&old, &to_setk).is_none());
        let to_nop = replace_stmt(&old, &Path::top(0), vec![call(nop)]);
        assert!(changed_stmt(&old, &to_nop).is_some());
    }
}
