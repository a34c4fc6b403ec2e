//! The rules of memories: addressability, the fixed innermost extent of `last_dim` memories (of
//! buffers and of every window of them), and capacities (`max_bytes`) per buffer and per frame.

use super::*;

/// An allocation in a memory with a capacity, kept for the frame rule ([`Walk::check_frames`]).
pub(super) struct FrameSlot {
    buf: Sym,
    mem: Arc<Memory>,
    /// Its size in bytes, and what holds where it is allocated beyond the proc's own facts, with
    /// the variables of its place (enclosing loops, unknowns made in the body) renamed apart.
    bytes: Term,
    ctx: Vec<Term>,
    span: Span,
}

impl Walk<'_> {
    pub(super) fn check_addressable(&mut self, b: &BufInfo, span: Span) {
        if !b.mem.addressable && !self.in_instr {
            self.err(
                "memory",
                span,
                format!(
                    "`{}` lives in memory {}, which is not addressable: only instructions may access it",
                    b.sym, b.mem.name
                ),
            );
        }
    }

    /// A memory that names the element types it holds (`dtypes`) holds no other: its template
    /// lays out vectors of those (an `__m512` is 16 f32), so another type would be laid out and
    /// counted wrong.
    pub(super) fn check_dtype(
        &mut self,
        sym: &Sym,
        mem: &Memory,
        elem: weft_ir::DType,
        span: Span,
    ) {
        if !mem.dtypes.is_empty() && !mem.dtypes.contains(&elem) {
            let names: Vec<&str> = mem.dtypes.iter().map(|t| t.name()).collect();
            self.err(
                "memory",
                span,
                format!(
                    "memory {} holds only {}, and `{sym}` has elements of type {elem}",
                    mem.name,
                    names.join(", ")
                ),
            );
        }
    }

    pub(super) fn check_last_dim(&mut self, sym: &Sym, mem: &Memory, shape: &[Expr], span: Span) {
        if let Some(want) = mem.last_dim {
            let last = shape.last().and_then(|e| e.as_int_const());
            if last != Some(want) {
                self.err(
                    "memory",
                    span,
                    format!(
                        "memory {} requires the innermost dimension of `{sym}` to be the constant {want}",
                        mem.name
                    ),
                );
            }
        }
    }

    /// A memory with a capacity (`max_bytes`, a stack frame or a scratchpad) holds only
    /// allocations proved to fit, for every size the preconditions allow.
    pub(super) fn check_max_bytes(
        &mut self,
        sym: &Sym,
        ty: &weft_ir::BufType,
        shape: &[Option<Term>],
        span: Span,
    ) {
        let Some(max) = ty.mem.max_bytes else {
            return;
        };
        let mut bytes = Term::Int(ty.elem.bytes() as i64);
        for t in shape {
            let Some(t) = t else {
                return; // reported as a size that is not a control expression
            };
            bytes = Term::mul(bytes, t.clone());
        }
        let msg = format!(
            "`{sym}` may not fit memory {}, which holds at most {max} bytes per buffer (use a \
             memory without a limit, such as DRAM, or bound the sizes with a precondition)",
            ty.mem.name
        );
        self.require(
            Term::le(bytes.clone(), Term::Int(max)),
            "memory",
            span,
            msg,
            &[("bytes", &bytes)],
        );
        self.record_frame_slot(sym, &ty.mem, bytes, span);
    }

    /// Keep allocation `buf` (of `bytes`, here) for the frame rule when its memory has a
    /// capacity. The variables of its place are renamed apart from every other slot's, so that
    /// the frame rule takes, for each allocation, its largest size over all its places.
    pub(super) fn record_frame_slot(
        &mut self,
        buf: &Sym,
        mem: &Arc<Memory>,
        bytes: Term,
        span: Span,
    ) {
        if mem.max_bytes.is_none() || !matches!(self.mode, Mode::Full | Mode::NoInit) {
            return;
        }
        let loop_vars: HashSet<u64> = self.bound[self.body.bound..]
            .iter()
            .filter(|s| matches!(self.scope.get(*s), Some(Info::Ctrl(_))))
            .map(|s| s.id())
            .collect();
        let ctx = self.facts[self.body.facts..].to_vec();
        let mut vars = Vec::new();
        for t in ctx.iter().chain([&bytes]) {
            t.var_terms(&mut vars);
        }
        let mut apart = HashMap::new();
        for t in vars {
            let (Term::IntVar(v) | Term::BoolVar(v)) = &t else {
                continue;
            };
            if loop_vars.contains(&v.id) || v.id >= self.body.unknowns {
                let fresh =
                    init::fresh_var(&mut self.ck.next_unknown, &format!("{} ({buf})", v.name));
                let fresh = match t {
                    Term::BoolVar(_) => Term::BoolVar(fresh),
                    _ => Term::IntVar(fresh),
                };
                apart.insert(v.id, fresh);
            }
        }
        self.frame.push(FrameSlot {
            buf: buf.clone(),
            mem: mem.clone(),
            bytes: bytes.subst_all(&apart),
            ctx: ctx.iter().map(|t| t.subst_all(&apart)).collect(),
            span,
        });
    }

    /// The frame rule: a memory's capacity bounds the sum of all of a proc's allocations in it,
    /// since C keeps them in one stack frame. Conservatively every allocation counts, whatever
    /// its scope and whether it was freed, each with its largest size over its places (one slot
    /// per allocation: a loop body's array is released at the end of each iteration); one whose
    /// size is not a constant (a C variable-length array) counts only where it is allocated. A
    /// single allocation is the per-buffer rule's ([`Walk::check_max_bytes`]). Callees have
    /// frames of their own.
    pub(super) fn check_frames(&mut self) {
        let slots = std::mem::take(&mut self.frame);
        let mut mems: Vec<&Arc<Memory>> = Vec::new();
        for s in &slots {
            if !mems.iter().any(|m| m.name == s.mem.name) {
                mems.push(&s.mem);
            }
        }
        for mem in mems {
            let (Some(max), in_mem) = (
                mem.max_bytes,
                slots
                    .iter()
                    .filter(|s| s.mem.name == mem.name)
                    .collect::<Vec<_>>(),
            ) else {
                continue;
            };
            let Some(last) = in_mem.last().filter(|_| in_mem.len() > 1) else {
                continue;
            };
            let total = in_mem
                .iter()
                .map(|s| match terms::const_value(&s.bytes) {
                    Some(_) => s.bytes.clone(),
                    None => Term::ite(Term::And(s.ctx.clone()), s.bytes.clone(), Term::Int(0)),
                })
                .reduce(Term::add)
                .unwrap_or(Term::Int(0));
            let mut names: Vec<String> = in_mem
                .iter()
                .take(6)
                .map(|s| format!("`{}`", s.buf))
                .collect();
            if in_mem.len() > names.len() {
                names.push(format!("and {} more", in_mem.len() - names.len()));
            }
            let msg = format!(
                "the allocations in memory {} may not fit together: {} share one stack frame, \
                 which holds at most {max} bytes (move some to a memory without a limit, such as \
                 DRAM, or into a proc of their own)",
                mem.name,
                names.join(", ")
            );
            self.require(
                Term::le(total.clone(), Term::Int(max)),
                "memory",
                last.span,
                msg,
                &[("bytes", &total)],
            );
        }
    }

    /// A window of a buffer in a memory with a fixed innermost extent `d` (`last_dim`) keeps
    /// that dimension whole (`0:d`): the memory's access template addresses whole vectors of `d`
    /// elements from the window's first cell, so a column or a part of a vector would name
    /// another one in C than in the interpreter. `last` is the window's last coordinate, with its
    /// bounds for an interval.
    pub(super) fn check_window_last_dim(
        &mut self,
        e: &Expr,
        src: &BufInfo,
        last: Option<(Term, Term)>,
    ) {
        let Some(d) = src.mem.last_dim else {
            return;
        };
        let (window, sym, mem) = (e.clone(), src.sym.clone(), src.mem.name.clone());
        let msg = Msg::lazy(move || {
            format!(
                "window `{}` of `{sym}` must keep the innermost dimension whole (`0:{d}`): memory \
                 {mem} holds vectors of {d} elements and addresses only whole ones",
                expr_to_string(&window)
            )
        });
        match last {
            None => self.err("memory", e.span, msg.render()),
            Some((l, h)) => {
                let goal = Term::And(vec![
                    Term::eq(l.clone(), Term::Int(0)),
                    Term::eq(h.clone(), Term::Int(d)),
                ]);
                self.require(goal, "memory", e.span, msg, &[("low", &l), ("high", &h)]);
            }
        }
    }
}
