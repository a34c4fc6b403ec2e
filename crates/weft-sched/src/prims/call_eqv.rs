//! `call_eqv`: call an equivalent proc instead.
//!
//! ```text
//! f(args)  ⇝  g(args)
//! ```
//!
//! Equivalence is not proved here, it is *recorded*: every proc a schedule produces notes the
//! proc it was derived from ([`weft_ir::Origin`]), which a scheduling step proved it equivalent
//! to, modulo the config fields that step may pollute. Following these records from `f` and from
//! `g` gives two provenance chains; `f` and `g` are related when the chains meet — `g` was
//! scheduled from `f`, `f` from `g`, or both from a common ancestor (a proc is recognised by
//! identity or by alpha-equivalence, name included, with the callees of its calls recognised the
//! same way in turn — not by name, which two different procs may share). Then `f ≅_L g`, where `L` is the union of the
//! config fields polluted along both chains down to where they meet.
//!
//! Conditions: the statement is a call of `f`; `g` has `f`'s signature (argument kinds and types
//! and preconditions, up to renaming), so the call is as well formed with `g`; `f` and `g` are
//! related; and when `L` is not empty, no field of `L` is read by the rest of the proc (every
//! statement but the call's callee, the call's own arguments included, through nested calls), nor
//! by both `f` and `g`. The new proc is then equivalent to the old one modulo `L`, and the
//! [`crate::Schedule`] records `L` in its provenance.
//!
//! Safety: with `L` empty, `g` transforms every valid store exactly as `f` does (equivalence is
//! transitive along the chains), so the call can change. Otherwise write `σ ~ σ'` for stores
//! that agree outside `L`: a statement that reads no field of `L` maps related stores to related
//! stores; if `f` reads no field of `L`, `f(σ) ~ f(σ') ~ g(σ')` (the last by `f ≅_L g`), and
//! symmetrically if `g` reads none. By induction over the run, the old and the new proc end in
//! stores that agree outside `L`.

use super::{describe, stmt_at, Rewrite};
use crate::effects::Analysis;
use crate::error::SchedError;
use crate::path::{self, Forward, Path, Step};
use std::sync::Arc;
use weft_ir::{Config, ExprKind, Proc, Stmt, StmtKind};

const PRIM: &str = "call_eqv";

/// A config field: the config and the field's index.
pub type Field = (Arc<Config>, usize);

fn same_field(a: &Field, b: &Field) -> bool {
    a.0.name == b.0.name && a.1 == b.1
}

fn add_fields(into: &mut Vec<Field>, from: &[Field]) {
    for f in from {
        if !into.iter().any(|g| same_field(f, g)) {
            into.push(f.clone());
        }
    }
}

fn field_name(f: &Field) -> String {
    let field = f.0.fields.get(f.1).map_or("?", |x| x.name.as_str());
    format!("{}.{field}", f.0.name)
}

/// A proc's provenance chain: itself, then each proc it was derived from, each with the config
/// fields polluted between it and the proc.
pub fn provenance(p: &Arc<Proc>) -> Vec<(Arc<Proc>, Vec<Field>)> {
    let mut out = vec![(p.clone(), Vec::new())];
    let mut acc = Vec::new();
    let mut cur = p.clone();
    while let Some(o) = cur.origin.clone() {
        add_fields(&mut acc, &o.polluted);
        out.push((o.parent.clone(), acc.clone()));
        cur = o.parent;
    }
    out
}

/// Whether `f` and `g` are related by their provenance, and the config fields they are
/// equivalent modulo if so.
pub fn relation(f: &Arc<Proc>, g: &Arc<Proc>) -> Option<Vec<Field>> {
    let (cf, cg) = (provenance(f), provenance(g));
    let meet = |same: &dyn Fn(&Arc<Proc>, &Arc<Proc>) -> bool| {
        cf.iter().find_map(|(a, la)| {
            cg.iter().find(|(b, _)| same(a, b)).map(|(_, lb)| {
                let mut l = la.clone();
                add_fields(&mut l, lb);
                l
            })
        })
    };
    meet(&|a, b| Arc::ptr_eq(a, b)).or_else(|| meet(&|a, b| same_proc(a, b, &mut Vec::new())))
}

/// Whether two procs are the same: the same `Arc`, or alpha-equivalent (name included) with their
/// callees, call by call, the same procs in turn. [`weft_ir::alpha::alpha_eq_proc`] alone compares
/// callees by name, and two different procs can have one name (a schedule's new procs, procs of
/// different modules). `seen`: pairs already being compared (call graphs are acyclic, this only
/// saves repeated work).
fn same_proc(a: &Arc<Proc>, b: &Arc<Proc>, seen: &mut Vec<(*const Proc, *const Proc)>) -> bool {
    if Arc::ptr_eq(a, b) {
        return true;
    }
    let key = (Arc::as_ptr(a), Arc::as_ptr(b));
    if seen.contains(&key) {
        return true;
    }
    if !weft_ir::alpha::alpha_eq_proc(a, b) {
        return false;
    }
    seen.push(key);
    // Alpha-equivalent bodies have the same statements in the same order, so their calls pair up
    // in walk order.
    let (ca, cb) = (callees(&a.body), callees(&b.body));
    ca.len() == cb.len() && ca.iter().zip(&cb).all(|(x, y)| same_proc(x, y, seen))
}

/// The callees of a block's calls, nested statements included, in walk order.
fn callees(block: &weft_ir::Block) -> Vec<Arc<Proc>> {
    let mut out = Vec::new();
    weft_ir::visit::walk_block(block, &mut |s| {
        if let StmtKind::Call { proc, .. } = &s.kind {
            out.push(proc.clone());
        }
    });
    out
}

/// Config fields read by a block, through calls too (`skip`: a path whose callee is not
/// entered, relative to this block).
fn reads(block: &[Stmt], prefix: &mut Vec<Step>, skip: &Path, out: &mut Vec<Field>) {
    for (i, s) in block.iter().enumerate() {
        prefix.last_mut().expect("non-empty").index = i;
        for e in weft_ir::visit::stmt_exprs(s) {
            weft_ir::visit::walk_expr(e, &mut |x| {
                if let ExprKind::ReadConfig { config, field } = &x.kind {
                    add_fields(out, &[(config.clone(), *field)]);
                }
            });
        }
        if let StmtKind::Call { proc, .. } = &s.kind {
            if prefix.as_slice() != skip.0.as_slice() {
                proc_reads(proc, out);
            }
        }
        for (k, b) in weft_ir::visit::stmt_blocks(s).into_iter().enumerate() {
            prefix.push(Step { block: k, index: 0 });
            reads(b, prefix, skip, out);
            prefix.pop();
        }
    }
}

/// Config fields a proc reads, through calls too.
pub fn proc_reads(p: &Proc, out: &mut Vec<Field>) {
    let mut prefix = vec![Step { block: 0, index: 0 }];
    reads(&p.body, &mut prefix, &Path(vec![]), out);
}

/// Replace the call at `at` by a call of `g`. Returns the rewrite and the config fields the new
/// proc may pollute relative to the old one.
pub fn call_eqv(
    _a: &mut Analysis,
    p: &Proc,
    at: &Path,
    g: &Arc<Proc>,
) -> Result<(Rewrite, Vec<Field>), SchedError> {
    let s = stmt_at(PRIM, p, at)?;
    let what = describe(s);
    let StmtKind::Call { proc: f, args } = &s.kind else {
        return Err(SchedError::new(PRIM, "expected a call").at(s.span, what));
    };
    if !weft_ir::alpha::same_signature(f, g) {
        return Err(SchedError::new(
            PRIM,
            format!(
                "'{}' does not have the signature of '{}' (the same argument types and preconditions)",
                g.name, f.name
            ),
        )
        .at(s.span, what));
    }
    let Some(polluted) = relation(f, g) else {
        return Err(SchedError::new(
            PRIM,
            format!(
                "'{}' and '{}' are not known to be equivalent: neither was scheduled from the other, and they have no common ancestor",
                f.name, g.name
            ),
        )
        .at(s.span, what));
    };
    if !polluted.is_empty() {
        let names: Vec<String> = polluted.iter().map(field_name).collect();
        let hits = |r: &[Field]| -> Vec<String> {
            polluted
                .iter()
                .filter(|x| r.iter().any(|y| same_field(x, y)))
                .map(field_name)
                .collect()
        };
        let (mut rf, mut rg) = (Vec::new(), Vec::new());
        proc_reads(f, &mut rf);
        proc_reads(g, &mut rg);
        let (hf, hg) = (hits(&rf), hits(&rg));
        if !hf.is_empty() && !hg.is_empty() {
            return Err(SchedError::new(
                PRIM,
                format!(
                    "'{}' and '{}' are equivalent only modulo {}, and both read {}",
                    f.name,
                    g.name,
                    names.join(", "),
                    hf.join(", ")
                ),
            )
            .at(s.span, what));
        }
        let mut rp = Vec::new();
        let mut prefix = vec![Step { block: 0, index: 0 }];
        reads(&p.body, &mut prefix, at, &mut rp);
        let hp = hits(&rp);
        if !hp.is_empty() {
            return Err(SchedError::new(
                PRIM,
                format!(
                    "'{}' and '{}' are equivalent only modulo {}, and '{}' reads {}",
                    f.name,
                    g.name,
                    names.join(", "),
                    p.name,
                    hp.join(", ")
                ),
            )
            .at(s.span, what));
        }
    }
    let new = Stmt::new(
        StmtKind::Call {
            proc: g.clone(),
            args: args.clone(),
        },
        s.span,
    );
    Ok((
        Rewrite {
            proc: path::replace_stmt(p, at, vec![new]),
            forward: Forward::identity(),
        },
        polluted,
    ))
}
