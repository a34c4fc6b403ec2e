//! Calls of scheduled procs from procs of the same file.
//!
//! A schedule's proc exists only once the schedule has been applied, after parsing and checking.
//! So the parser resolves a call of a schedule to a stand-in: the base proc under the schedule's
//! name, recording the base as its origin. The body is the base's, so the call is checked against
//! the base's signature and preconditions, and the stand-in computes what the scheduled proc
//! computes (every step was proved to preserve the meaning). Once the schedules are applied,
//! [`link`] swaps every stand-in for the scheduled proc, which must keep the base's signature.

use std::collections::HashMap;
use std::sync::Arc;
use weft_ir::{Diagnostic, Proc, Stmt, StmtKind};

/// Replace, in every proc of `procs` and everything they call, each call of a stand-in named
/// after a key of `scheduled` by a call of that scheduled proc. Procs that change are rebuilt;
/// the others keep their identity.
pub fn link(
    procs: &mut [Arc<Proc>],
    scheduled: &HashMap<String, Arc<Proc>>,
) -> Result<(), Diagnostic> {
    let mut linker = Linker {
        scheduled,
        done: HashMap::new(),
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
}

impl Linker<'_> {
    fn proc(&mut self, p: &Arc<Proc>) -> Result<Arc<Proc>, Diagnostic> {
        let key = Arc::as_ptr(p) as usize;
        if let Some(q) = self.done.get(&key) {
            return Ok(q.clone());
        }
        let out = match self.scheduled.get(&p.name) {
            // A stand-in (or the scheduled proc itself, which links its own callees).
            Some(real) if !Arc::ptr_eq(real, p) => {
                if !weft_ir::alpha::same_signature(p, real) {
                    return Err(Diagnostic::new(
                        "schedule",
                        p.span,
                        format!(
                            "`{}` is called by a proc of this file, but its schedule changes \
                             the signature of its base (for example with partial_eval)",
                            p.name
                        ),
                    ));
                }
                self.proc(real)?
            }
            _ => {
                let body = self.block(&p.body)?;
                match body {
                    Some(body) => Arc::new(Proc {
                        body,
                        ..(**p).clone()
                    }),
                    None => p.clone(),
                }
            }
        };
        self.done.insert(key, out.clone());
        Ok(out)
    }

    /// The block with its calls linked, or `None` when nothing changed.
    fn block(&mut self, b: &[Stmt]) -> Result<Option<Vec<Stmt>>, Diagnostic> {
        let mut out: Option<Vec<Stmt>> = None;
        for (k, s) in b.iter().enumerate() {
            if let Some(new) = self.stmt(s)? {
                out.get_or_insert_with(|| b.to_vec())[k] = new;
            }
        }
        Ok(out)
    }

    fn stmt(&mut self, s: &Stmt) -> Result<Option<Stmt>, Diagnostic> {
        if let StmtKind::Call { proc, args } = &s.kind {
            let linked = self.proc(proc)?;
            if Arc::ptr_eq(&linked, proc) {
                return Ok(None);
            }
            return Ok(Some(Stmt::new(
                StmtKind::Call {
                    proc: linked,
                    args: args.clone(),
                },
                s.span,
            )));
        }
        let mut out: Option<Stmt> = None;
        for (k, child) in weft_ir::visit::stmt_blocks(s).into_iter().enumerate() {
            if let Some(new) = self.block(child)? {
                let cur = out.as_ref().unwrap_or(s);
                out = Some(weft_sched::path::with_child_block(cur, k, new));
            }
        }
        Ok(out)
    }
}
