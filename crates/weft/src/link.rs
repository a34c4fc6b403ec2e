//! Calls of scheduled procs from procs of the same file.
//!
//! A schedule's proc exists only once the schedule has been applied, after parsing and checking.
//! So the parser resolves a call of a schedule to a stand-in: the base proc under the schedule's
//! name, recording the base as its origin. The body is the base's, so the call is checked against
//! the base's signature and preconditions. Once the schedules are applied, [`link`] swaps every
//! stand-in for the scheduled proc, which must keep the base's signature.
//!
//! Swapping a callee is the `call_eqv` step, and is accepted on its terms: the scheduled proc must
//! be related to the stand-in by provenance (every step of the schedule an equivalence, so not
//! `set_precision` or `partial_eval`), and when the schedule is an equivalence only modulo some
//! config fields (`write_config`, `bind_config`), the caller must not read them and the two
//! callees must not both read them. A caller that changed is itself an equivalent of the caller as
//! written modulo the fields its new callees pollute; its callers are linked by the same rule in
//! turn. Parallel loops were proved race-free against the stand-ins; a scheduled callee may touch
//! more (a staged region written back whole), so every linked proc's parallel loops are proved
//! again.
//!
//! `call_eqv` relates the values a callee computes, not what it reads: a scheduled callee may read
//! more of its arguments than the stand-in did (a staged region is copied in whole), and what its
//! summary says it writes for sure may differ. The caller was checked against the stand-in, so
//! every proc whose calls changed is checked again in full (all rules, with the scheduled callees'
//! summaries); a failure is reported with the rule that failed, naming the switched calls and
//! their schedules. Procs whose calls did not change keep their identity and are not checked
//! again.

use std::collections::HashMap;
use std::sync::Arc;
use weft_check::Checker;
use weft_ir::{Diagnostic, Origin, Proc, Span, StmtKind};
use weft_sched::effects::Analysis;
use weft_sched::find::all_stmts;
use weft_sched::path::{self, Path};
use weft_sched::prims::{call_eqv, parallelize};

/// Replace, in every proc of `procs` and everything they call, each call of a stand-in named
/// after a key of `scheduled` by a call of that scheduled proc. Procs that change are rebuilt and
/// checked again; the others keep their identity.
pub fn link(
    procs: &mut [Arc<Proc>],
    scheduled: &HashMap<String, Arc<Proc>>,
) -> Result<(), Vec<Diagnostic>> {
    let mut linker = Linker {
        scheduled,
        done: HashMap::new(),
        analysis: Analysis::new(),
        checker: Checker::new(),
    };
    for p in procs.iter_mut() {
        *p = linker.proc(p)?;
    }
    Ok(())
}

struct Linker<'a> {
    scheduled: &'a HashMap<String, Arc<Proc>>,
    /// Procs already linked, by address.
    done: HashMap<usize, Arc<Proc>>,
    analysis: Analysis,
    /// Checks the linked procs, sharing its solver cache and callee summaries among them.
    checker: Checker,
}

impl Linker<'_> {
    fn proc(&mut self, p: &Arc<Proc>) -> Result<Arc<Proc>, Vec<Diagnostic>> {
        let key = Arc::as_ptr(p) as usize;
        if let Some(q) = self.done.get(&key) {
            return Ok(q.clone());
        }
        let out = match self.scheduled.get(&p.name) {
            // A stand-in (or the scheduled proc itself, which links its own callees).
            Some(real) if !Arc::ptr_eq(real, p) => {
                if !weft_ir::alpha::same_signature(p, real) {
                    return Err(vec![Diagnostic::new(
                        "schedule",
                        p.span,
                        format!(
                            "`{}` is called by a proc of this file, but its schedule changes \
                             the signature of its base (for example with partial_eval)",
                            p.name
                        ),
                    )]);
                }
                self.proc(real)?
            }
            _ => self.calls(p)?,
        };
        self.done.insert(key, out.clone());
        Ok(out)
    }

    /// `p` with every call of a proc that links to another proc switched to it (`call_eqv`'s
    /// rule), recording `p` as its origin, and checked again; `p` itself when nothing changed.
    fn calls(&mut self, p: &Arc<Proc>) -> Result<Arc<Proc>, Vec<Diagnostic>> {
        let sites: Vec<Path> = all_stmts(p)
            .into_iter()
            .filter(|(_, s)| matches!(s.kind, StmtKind::Call { .. }))
            .map(|(at, _)| at)
            .collect();
        let mut cur = p.clone();
        let mut polluted: Vec<call_eqv::Field> = Vec::new();
        let mut switched: Vec<(Span, String)> = Vec::new();
        for at in sites {
            let Some(s) = path::get(&cur, &at) else {
                continue;
            };
            let StmtKind::Call { proc: callee, .. } = &s.kind else {
                continue;
            };
            let (span, callee) = (s.span, callee.clone());
            let linked = self.proc(&callee)?;
            if Arc::ptr_eq(&linked, &callee) {
                continue;
            }
            switched.push((span, self.switched_to(&callee)));
            let (r, fields) = call_eqv::call_eqv(&mut self.analysis, &cur, &at, &linked)
                .map_err(|e| {
                    link_error(
                        &format!(
                            "cannot switch the call of `{}` to its scheduled version",
                            callee.name
                        ),
                        &e,
                    )
                })
                .map_err(|d| vec![d])?;
            for f in fields {
                if !polluted.iter().any(|g| g.0.name == f.0.name && g.1 == f.1) {
                    polluted.push(f);
                }
            }
            cur = r.proc;
        }
        if Arc::ptr_eq(&cur, p) {
            return Ok(cur);
        }
        let linked = Arc::new(Proc {
            origin: Some(Origin {
                parent: p.clone(),
                polluted,
            }),
            ..(*cur).clone()
        });
        parallelize::check_parallel_loops(&mut self.analysis, &linked, "link").map_err(|e| {
            vec![link_error(
                &format!("`{}` calls scheduled procs, and then", p.name),
                &e,
            )]
        })?;
        let diags = self.checker.check_proc(&linked);
        if !diags.is_empty() {
            return Err(diags
                .into_iter()
                .map(|d| recheck_error(d, &p.name, &switched))
                .collect());
        }
        Ok(linked)
    }

    /// What a switched call of `callee` runs from now on, in words.
    fn switched_to(&self, callee: &Proc) -> String {
        match (&callee.origin, self.scheduled.contains_key(&callee.name)) {
            (Some(o), true) => format!(
                "this call now runs schedule `{}` of `{}`",
                callee.name, o.parent.name
            ),
            _ => format!(
                "this call now runs `{}` linked to the scheduled procs it calls",
                callee.name
            ),
        }
    }
}

/// A failure of the check of linked proc `caller`: its rule, led by what changed, with a label at
/// each switched call.
fn recheck_error(mut d: Diagnostic, caller: &str, switched: &[(Span, String)]) -> Diagnostic {
    d.message = format!(
        "`{caller}` was checked against the procs its calls named, but with the calls switched to \
         their scheduled versions it fails rule `{}`: {}",
        d.rule, d.message
    );
    for (span, what) in switched {
        d = d.with_label(*span, what.clone());
    }
    d
}

/// A rejected link as a diagnostic of rule `schedule` (`race` for a parallel loop), the message
/// led by `what` failed.
fn link_error(what: &str, e: &weft_sched::SchedError) -> Diagnostic {
    let mut d = e.to_diagnostic();
    if e.primitive == "link" {
        d.rule = "race";
    }
    d.message = format!("{what}: {}", d.message);
    d
}
