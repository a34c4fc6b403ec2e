//! Definedness of reads on the walk (the chunks themselves are `crate::init`): writes
//! recorded, reads proved, loops walked ahead for earlier iterations, what calls write, and
//! what a proc leaves written in its parameters for its callers.

use super::*;

/// Cell coordinates larger than this (in nodes) are named for the definedness analysis.
const NAMED_CELL: usize = 8;

impl Walk<'_> {
    /// The root coordinates of cell `idx` of view `b`.
    pub(super) fn root_cell(b: &BufInfo, idx: &[Term]) -> Vec<Term> {
        b.root_map
            .iter()
            .map(|rc| match rc {
                RootCoord::Fixed(t) => t.clone(),
                RootCoord::Dim(k, off) => match idx.get(*k) {
                    Some(i) => terms::add_simplified(off, i),
                    None => off.clone(),
                },
            })
            .collect()
    }

    /// The cell with its large coordinates named by fresh variables, and their definitions.
    /// The definedness analysis copies the cell into every case it splits (hundreds, behind a
    /// folded, slid buffer), so a large index is paid for hundreds of times in building,
    /// hashing and translating the goal; a name is paid for once. A folded coordinate
    /// (`e % k`) keeps its `% k`, which the analysis of folded storage matches.
    fn name_cell(&mut self, cell: &[Term]) -> (Vec<Term>, Vec<Term>) {
        let mut defs = Vec::new();
        // One name per coordinate term: reads of one cell (`Ix(x, y) * Ix(x, y)`) then ask
        // the same goal, which the flush asks once. Sound across goals: each carries the name's
        // definition, the same for every goal that uses it.
        let mut name = |t: &Term, defs: &mut Vec<Term>| {
            if t.size_at_most(NAMED_CELL + 1) <= NAMED_CELL {
                return t.clone();
            }
            let counter = &mut self.ck.next_unknown;
            let v = self
                .cell_names
                .entry(t.clone())
                .or_insert_with(|| Term::IntVar(init::fresh_var(counter, "cell")))
                .clone();
            defs.push(Term::eq(v.clone(), t.clone()));
            v
        };
        let named = cell
            .iter()
            .map(|t| match t {
                Term::Mod(inner, k) => Term::Mod(Box::new(name(inner, &mut defs)), k.clone()),
                _ => name(t, &mut defs),
            })
            .collect();
        (named, defs)
    }

    /// Whether `b` views a buffer allocated in this proc (whose reads must be defined).
    pub(super) fn is_local(&self, b: &BufInfo) -> bool {
        matches!(self.scope.get(&b.root), Some(Info::Buf(r)) if r.alloc_depth.is_some())
    }

    /// Cell `idx` of `b` is written for sure from here on.
    pub(super) fn record_write(&mut self, b: &BufInfo, idx: &[Term]) {
        self.defined.chunks.push(Chunk {
            root: b.root.clone(),
            idx: Self::root_cell(b, idx),
            cond: self.path.clone(),
            bound: Vec::new(),
        });
    }

    /// Whether this walk asks what is defined of `b` at all (see [`Self::defined_needed`]):
    /// the goals are costly to build (every write of the buffer is a case), so they are built
    /// only when asked. Of a local buffer, a full walk asks, in its focus (`Walk::add`); of a
    /// parameter whose reads a caller wants, a summary, until it is known to be read before it
    /// is written.
    fn defined_wanted(&self, b: &BufInfo) -> bool {
        match self.mode {
            Mode::Full => self.in_focus && self.is_local(b),
            Mode::Summary => {
                !self.is_local(b)
                    && self.reads_wanted.contains(&b.root)
                    && !self.needs_input.contains(&b.root)
            }
            Mode::Control | Mode::NoInit | Mode::Prewalk => false,
        }
    }

    /// Whether `goal` (about cells of `b`) must be proved: for a local buffer, in a full
    /// check; for a parameter, it is asked right away in a summary, and when it fails the
    /// parameter is noted as read before it is written: the cell read (root coordinates), where
    /// the read is of one cell, or else the whole parameter.
    pub(super) fn defined_needed(
        &mut self,
        b: &BufInfo,
        goal: &Term,
        cell: Option<&[Term]>,
    ) -> bool {
        if self.is_local(b) {
            return self.mode == Mode::Full;
        }
        if self.mode == Mode::Summary
            && !self.needs_input.contains(&b.root)
            && self.ck.solver.check_valid(&self.facts, goal) != Validity::Valid
        {
            match cell {
                Some(cell) => self.reads.chunks.push(Chunk {
                    root: b.root.clone(),
                    idx: cell.to_vec(),
                    cond: self.path.clone(),
                    bound: Vec::new(),
                }),
                None => {
                    self.needs_input.insert(b.root.clone());
                }
            }
        }
        false
    }

    /// At the end of the loop over `var` with bounds `bounds`: the cells read since chunk
    /// `mark` were read in some iteration. A read whose cell or condition names an unknown made
    /// in the loop, or a loop whose bounds are unknown, makes its whole parameter read.
    pub(super) fn bind_reads(
        &mut self,
        mark: usize,
        made_since: u64,
        var: &Sym,
        bounds: Option<(&Term, &Term)>,
    ) {
        if self.reads.chunks.len() == mark {
            return;
        }
        let Some((lo, hi)) = bounds else {
            for c in self.reads.chunks.split_off(mark) {
                self.needs_input.insert(c.root);
            }
            return;
        };
        for c in self.reads.chunks.iter_mut().skip(mark) {
            c.expand_shared(made_since, &self.shared_defs);
        }
        let mut k = mark;
        while k < self.reads.chunks.len() {
            if self.reads.chunks[k].mentions_unknowns_above(made_since) {
                let c = self.reads.chunks.remove(k);
                self.needs_input.insert(c.root);
            } else {
                k += 1;
            }
        }
        let counter = &mut self.ck.next_unknown;
        let name = var.name().to_string();
        let mut fresh = || init::fresh_var(counter, &name);
        self.reads.bind_loop(
            (mark, made_since),
            &sym_var(var),
            lo,
            hi,
            &self.shared_defs,
            &mut fresh,
        );
    }

    /// A read of cell `idx` of `b` (shown as `text`) must read a cell written before, where `b`
    /// views a local buffer (rule `init`).
    pub(super) fn require_defined(&mut self, b: &BufInfo, idx: &[Term], span: Span, text: &str) {
        if !self.defined_wanted(b) {
            return;
        }
        let cell = Self::root_cell(b, idx);
        let (named, defs) = self.name_cell(&cell);
        let goal = self.defined.holds(&b.root, &named);
        let gave_up = crate::init::gave_up();
        // `defs` imply the goal: the names are fresh, so this holds exactly when the goal of
        // the cell itself does.
        let goal = if defs.is_empty() {
            goal
        } else {
            Term::Or(defs.into_iter().map(Term::not).chain([goal]).collect())
        };
        if !self.defined_needed(b, &goal, Some(&cell)) {
            return;
        }
        let mut msg = format!(
            "`{text}` may read a cell of `{}` that was never written (reads of local buffers must read cells written before)",
            b.root
        );
        if gave_up {
            msg += "; the analysis of what was written could not decide it within its limits (cases nested in cases)";
        }
        let show: Vec<(String, &Term)> = cell
            .iter()
            .enumerate()
            .map(|(d, t)| (format!("cell {d}"), t))
            .collect();
        let show: Vec<(&str, &Term)> = show.iter().map(|(l, t)| (l.as_str(), *t)).collect();
        self.require(goal, "init", span, msg, &show);
    }

    /// In the body of the loop over `var` from `lo`, the iterations before the current one have
    /// written what one iteration writes (the paper's S-SEQLOOP): when the body reads a local
    /// buffer, it is walked ahead, without proving anything, for the chunks one iteration adds,
    /// which then hold for `lo <= var' < var`. A walk ahead does not walk ahead again in its
    /// inner loops, so each body is walked at most twice per enclosing level.
    pub(super) fn earlier_iterations(&mut self, var: &Sym, lo: &Term, body: &Block) {
        if matches!(self.mode, Mode::Prewalk | Mode::Control | Mode::NoInit)
            || !self.reads_local_in(body)
        {
            return;
        }
        let made_since = self.ck.next_unknown;
        let mode = std::mem::replace(&mut self.mode, Mode::Prewalk);
        let known = self.config_known.clone();
        let diags = self.diags.len();
        let start = self.defined.chunks.len();
        // The walk ahead must not count as the visit of a focus inside the body (focused walks
        // do not come here today: they check no definedness).
        let (in_focus, focus_done) = (self.in_focus, self.focus_done);
        self.block(body);
        (self.in_focus, self.focus_done) = (in_focus, focus_done);
        self.diags.truncate(diags);
        self.config_known = known;
        let one = Defined {
            chunks: self.defined.chunks.split_off(start),
        };
        self.mode = mode;
        let mut earlier = one;
        let counter = &mut self.ck.next_unknown;
        let name = var.name().to_string();
        let mut fresh = || init::fresh_var(counter, &name);
        let now = Term::IntVar(sym_var(var));
        earlier.bind_loop(
            (0, made_since),
            &sym_var(var),
            lo,
            &now,
            &self.shared_defs,
            &mut fresh,
        );
        self.defined.chunks.extend(earlier.chunks);
    }

    /// Config field values `b` may change are no longer known (all of them, when it calls).
    pub(super) fn forget_configs_written_in(&mut self, b: &[Stmt]) {
        let mut calls = Vec::new();
        let mut written = Vec::new();
        weft_ir::visit::walk_block(b, &mut |s| match &s.kind {
            StmtKind::Call { proc, .. } => calls.push(proc.clone()),
            StmtKind::WriteConfig { config, field, .. } => {
                written.push((config.name.clone(), *field))
            }
            _ => {}
        });
        for callee in calls {
            self.forget_configs_of(&callee);
        }
        for k in written {
            self.config_known.remove(&k);
        }
    }

    /// Forget the values of the config fields `callee` may write (itself or through its calls).
    pub(super) fn forget_configs_of(&mut self, callee: &Arc<Proc>) {
        match &self.ck.param_uses(callee).configs_written {
            Some(written) => {
                for k in written {
                    self.config_known.remove(k);
                }
            }
            None => self.config_known.clear(),
        }
    }

    /// Whether `body` touches a buffer in scope that views a local allocation.
    pub(super) fn reads_local_in(&self, body: &Block) -> bool {
        let mut found = false;
        let mut note = |buf: &Sym| {
            if let Some(Info::Buf(b)) = self.scope.get(buf) {
                found |= self.is_local(b);
            }
        };
        weft_ir::visit::walk_block(body, &mut |s| {
            if let StmtKind::Reduce { buf, .. } = &s.kind {
                note(buf);
            }
            for e in weft_ir::visit::stmt_exprs(s) {
                weft_ir::visit::walk_expr(e, &mut |x| match &x.kind {
                    ExprKind::Read { buf, .. } | ExprKind::Window { buf, .. } => note(buf),
                    _ => {}
                });
            }
        });
        found
    }

    /// Fresh variables for every cell of view `b` (with their ranges, as conditions).
    pub(super) fn cells_of(&mut self, b: &BufInfo) -> Option<(Vec<Term>, Vec<Term>)> {
        let mut cell = Vec::new();
        let mut ranges = Vec::new();
        for (d, n) in b.shape.iter().enumerate() {
            let v = Term::IntVar(init::fresh_var(
                &mut self.ck.next_unknown,
                &format!("{}#{d}", b.sym),
            ));
            ranges.push(in_range(v.clone(), n.clone()?));
            cell.push(v);
        }
        Some((cell, ranges))
    }

    /// What a call of `callee` does to the cells of its buffer argument `b` (parameter `k`):
    /// where it may read them, all must be written before (rule `init`); where it writes all
    /// of them, they are written from here on.
    pub(super) fn call_cells(
        &mut self,
        callee: &Arc<Proc>,
        (k, b): (usize, &BufInfo),
        arg: &Expr,
        span: Span,
        sub: &HashMap<u64, Term>,
    ) {
        // The control rules never ask what is defined; the cells' goals are costly to build
        // (every write of the buffer is a case), and a scheduled proc of many instruction calls
        // is checked for control after every step.
        if matches!(self.mode, Mode::Control | Mode::NoInit) {
            return;
        }
        if !self.defined_wanted(b) {
            return self.call_writes(callee, k, b, sub);
        }
        let summary = self.ck.summary_of(callee, Some(k));
        // The cells the callee may read: every cell, or the chunks its summary gives (in
        // `b`'s root coordinates), which must all name only what the call fixes.
        let read = if summary.needs_input.contains(&k) {
            Some(None)
        } else {
            match summary.params.get(&k) {
                Some(param) if summary.reads.chunks.iter().any(|c| c.root == *param) => {
                    let (chunks, all) = self.chunks_at_call(&summary.reads.chunks, param, b, sub);
                    Some(if all { Some(chunks) } else { None })
                }
                _ => None,
            }
        };
        if let Some(read) = read {
            if let Some((cell, ranges)) = self.cells_of(b) {
                let root_cell = Self::root_cell(b, &cell);
                let inside = self.defined.holds(&b.root, &root_cell);
                let mut goal = vec![Term::not(Term::And(ranges))];
                if let Some(chunks) = read {
                    let read = Defined { chunks }.holds(&b.root, &root_cell);
                    // Past its limits `holds` leaves cells out: then every cell counts as read.
                    if !crate::init::gave_up() {
                        goal.push(Term::not(read));
                    }
                }
                goal.push(inside);
                let goal = Term::Or(goal);
                if !self.defined_needed(b, &goal, None) {
                    return self.call_writes(callee, k, b, sub);
                }
                let msg = format!(
                    "`{}` may read cells of `{}` that were never written: every cell of the argument `{}` that it reads must be written before the call",
                    callee.name,
                    b.root,
                    expr_to_string(arg)
                );
                let show: Vec<(String, Term)> = root_cell
                    .iter()
                    .enumerate()
                    .map(|(d, t)| (format!("cell {d}"), t.clone()))
                    .collect();
                let show: Vec<(&str, &Term)> = show.iter().map(|(l, t)| (l.as_str(), t)).collect();
                self.require(goal, "init", span, msg, &show);
            }
        }
        self.call_writes(callee, k, b, sub);
    }

    /// The chunks of a callee's parameter `param` at a call whose argument for it is `b`: the
    /// callee's variables replaced by what the call puts for them (`sub`), the coordinates
    /// mapped to `b`'s root, the branch conditions of the call added. Chunks naming another
    /// free variable of the callee (an unknown config read, say) are left out, which the
    /// second value then says.
    fn chunks_at_call(
        &self,
        chunks: &[Chunk],
        param: &Sym,
        b: &BufInfo,
        sub: &HashMap<u64, Term>,
    ) -> (Vec<Chunk>, bool) {
        let mut all = true;
        let mut out = Vec::new();
        let subst = |t: &Term| t.subst_all(sub);
        for c in chunks.iter().filter(|c| c.root == *param) {
            if !c.free_vars_all(|id| sub.contains_key(&id)) {
                all = false;
                continue;
            }
            let idx: Vec<Term> = c.idx.iter().map(subst).collect();
            let mut cond: Vec<Term> = c.cond.iter().map(subst).collect();
            cond.extend(self.path.iter().cloned());
            out.push(Chunk {
                root: b.root.clone(),
                idx: Self::root_cell(b, &idx),
                cond,
                bound: c
                    .bound
                    .iter()
                    .map(|(v, lo, hi)| (v.clone(), subst(lo), subst(hi)))
                    .collect(),
            });
        }
        (out, all)
    }

    /// What `callee` writes for sure in its parameter `k` is written in the argument `b`: its
    /// chunks, with the callee's variables replaced by what the call puts for them (`sub`, by
    /// variable id: the control arguments and the arguments' strides) and its parameter's
    /// coordinates mapped to `b`'s root.
    pub(super) fn call_writes(
        &mut self,
        callee: &Arc<Proc>,
        k: usize,
        b: &BufInfo,
        sub: &HashMap<u64, Term>,
    ) {
        let summary = self.ck.summary_of(callee, None);
        let Some(param) = summary.params.get(&k) else {
            return;
        };
        // Chunks naming an unknown of the callee are left out: the same variable at two calls
        // would make their writes look related.
        let (chunks, _) = self.chunks_at_call(&summary.defined.chunks, param, b, sub);
        self.defined.chunks.extend(chunks);
    }

    /// What this proc, walked to its end, leaves written in its buffer parameters.
    pub(super) fn summary(&mut self, p: &Proc) -> Summary {
        let mut params = HashMap::new();
        for (k, a) in p.args.iter().enumerate() {
            if let ArgKind::Buf(_) = a.kind {
                params.insert(k, a.sym.clone());
            }
        }
        let defined = Defined {
            chunks: self
                .defined
                .chunks
                .iter()
                .filter(|c| p.args.iter().any(|a| a.sym == c.root))
                .cloned()
                .collect(),
        };
        let mut needs_input: HashSet<usize> = p
            .args
            .iter()
            .enumerate()
            .filter(|(_, a)| self.needs_input.contains(&a.sym))
            .map(|(k, _)| k)
            .collect();
        // A parameter with a read that the chunks cannot describe exactly is read whole.
        for c in &self.reads.chunks {
            if !c.is_exact() {
                if let Some(k) = p.args.iter().position(|a| a.sym == c.root) {
                    needs_input.insert(k);
                }
            }
        }
        let reads = Defined {
            chunks: self
                .reads
                .chunks
                .iter()
                .filter(|c| {
                    p.args
                        .iter()
                        .position(|a| a.sym == c.root)
                        .is_some_and(|k| !needs_input.contains(&k))
                })
                .cloned()
                .collect(),
        };
        Summary {
            defined,
            params,
            needs_input,
            reads,
            reads_known: HashSet::new(),
        }
    }
}
