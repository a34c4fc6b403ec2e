//! Finding statements by pattern.
//!
//! A pattern names a kind of statement and, after `#`, which occurrence (0 for the first, in
//! program order, parents before children):
//!
//! | pattern | matches |
//! |---|---|
//! | `for i`, or just `i` | a loop whose variable is named `i` (as written, or as printed: `i_1`) |
//! | `C =` | an assignment to buffer `C` |
//! | `C +=` | a reduction into `C` |
//! | `alloc t` | the allocation of `t` |
//! | `free t` | the free of `t` |
//! | `window w` | the window binding of `w` |
//! | `call f` | a call of proc `f` |
//! | `C.f =` | a write of config field `C.f` |
//! | `if` | an `if` statement |
//! | `pass` | a `pass` |
//!
//! For example `for i #1` is the second loop over `i`.

use crate::path::{Path, Step};
use std::collections::HashMap;
use weft_ir::{Proc, Stmt, StmtKind, Sym};

/// Every statement of a proc with its path, parents before children, in program order.
pub fn all_stmts(p: &Proc) -> Vec<(Path, &Stmt)> {
    stmts_where(p, |_| true)
}

/// The statements of a proc that `keep` accepts, with their paths, in the order of
/// [`all_stmts`]. Only those statements' paths are made: finding a pattern's statement after
/// every step had spent most of its time building a path for each statement of the proc.
pub fn stmts_where(p: &Proc, mut keep: impl FnMut(&Stmt) -> bool) -> Vec<(Path, &Stmt)> {
    fn go<'a>(
        b: &'a [Stmt],
        path: &mut Vec<Step>,
        block: usize,
        keep: &mut impl FnMut(&Stmt) -> bool,
        out: &mut Vec<(Path, &'a Stmt)>,
    ) {
        for (index, s) in b.iter().enumerate() {
            path.push(Step { block, index });
            if keep(s) {
                out.push((Path(path.clone()), s));
            }
            for (k, child) in weft_ir::visit::stmt_blocks(s).into_iter().enumerate() {
                go(child, path, k, keep, out);
            }
            path.pop();
        }
    }
    let mut out = Vec::new();
    go(&p.body, &mut Vec::new(), 0, &mut keep, &mut out);
    out
}

/// Whether a statement matches a pattern (without the `#k` part). A name matches a symbol's own
/// name, or the name the printer gives it (`printed`; after a rewrite put a loop over `i` inside
/// another, `weft sched` shows the inner one as `i_1`).
/// `printed` is computed only when a symbol's own name does not decide (printing costs a walk of
/// the proc, and `find` runs at every step).
pub fn matches(s: &Stmt, pattern: &str, printed: &dyn Fn() -> HashMap<Sym, String>) -> bool {
    matches_with(s, pattern, &mut Printed::Later(printed))
}

/// The printed names of a proc's symbols, computed at first need.
enum Printed<'a> {
    Later(&'a dyn Fn() -> HashMap<Sym, String>),
    Known(HashMap<Sym, String>),
}

impl Printed<'_> {
    fn get(&mut self) -> &HashMap<Sym, String> {
        if let Printed::Later(f) = self {
            *self = Printed::Known(f());
        }
        match self {
            Printed::Known(m) => m,
            Printed::Later(_) => unreachable!("set above"),
        }
    }
}

fn matches_with(s: &Stmt, pattern: &str, printed: &mut Printed) -> bool {
    let words: Vec<&str> = pattern.split_whitespace().collect();
    // A printed name is the symbol's own name, or it with a suffix `_k` (or cleaned of
    // characters a name cannot have): only then can the printer's name decide.
    let mut is = |x: &Sym, name: &str| {
        x.name() == name
            || ((name.starts_with(x.name()) || !weft_ir::print::usable_name(x.name()))
                && printed.get().get(x).is_some_and(|p| p == name))
    };
    match (&s.kind, words.as_slice()) {
        (StmtKind::For { var, .. }, ["for", v]) | (StmtKind::For { var, .. }, [v]) => is(var, v),
        (StmtKind::Assign { buf, .. }, [b, "="]) => is(buf, b),
        (StmtKind::Reduce { buf, .. }, [b, "+="]) => is(buf, b),
        (StmtKind::Alloc { buf, .. }, ["alloc", b]) => is(buf, b),
        (StmtKind::Free { buf }, ["free", b]) => is(buf, b),
        (StmtKind::Window { name, .. }, ["window", b]) => is(name, b),
        (StmtKind::Call { proc, .. }, ["call", f]) => proc.name == *f,
        (StmtKind::WriteConfig { config, field, .. }, [cf, "="]) => config
            .fields
            .get(*field)
            .is_some_and(|f| format!("{}.{}", config.name, f.name) == *cf),
        (StmtKind::If { .. }, ["if"]) => true,
        (StmtKind::Pass, ["pass"]) => true,
        _ => false,
    }
}

/// Split `pattern #k` into the pattern and the occurrence.
pub fn parse_occurrence(pattern: &str) -> Result<(&str, usize), String> {
    match pattern.rsplit_once('#') {
        Some((pat, k)) => k
            .trim()
            .parse::<usize>()
            .map(|k| (pat.trim(), k))
            .map_err(|_| format!("bad occurrence '#{k}' in pattern '{pattern}'")),
        None => Ok((pattern.trim(), 0)),
    }
}

/// The path of the statement a pattern designates.
pub fn find(p: &Proc, pattern: &str) -> Result<Path, String> {
    let (pat, k) = parse_occurrence(pattern)?;
    let names = || weft_ir::print::printed_names(p);
    let mut printed = Printed::Later(&names);
    let hits: Vec<Path> = stmts_where(p, |s| matches_with(s, pat, &mut printed))
        .into_iter()
        .map(|(path, _)| path)
        .collect();
    if let Some(hit) = hits.get(k) {
        return Ok(hit.clone());
    }
    if !hits.is_empty() {
        return Err(format!(
            "`{pattern}`: only {} statement{} of proc `{}` match `{pat}` (#0 to #{})",
            hits.len(),
            if hits.len() == 1 { "" } else { "s" },
            p.name,
            hits.len() - 1
        ));
    }
    // What the user could have meant: every pattern that matches something here.
    let mut existing: Vec<String> = Vec::new();
    for (_, s) in all_stmts(p) {
        if let Some(q) = pattern_of(s) {
            if !existing.contains(&q) {
                existing.push(q);
            }
        }
    }
    let listed: Vec<String> = existing.iter().map(|q| format!("`{q}`")).collect();
    Err(format!(
        "no statement of proc `{}` matches `{pattern}`; the patterns that match here: {}",
        p.name,
        if listed.is_empty() {
            "none (the proc is empty)".to_string()
        } else {
            listed.join(", ")
        }
    ))
}

/// The pattern (without `#k`) that designates statements like `s`, if any.
pub fn pattern_of(s: &Stmt) -> Option<String> {
    Some(match &s.kind {
        StmtKind::For { var, .. } => format!("for {}", var.name()),
        StmtKind::Assign { buf, .. } => format!("{} =", buf.name()),
        StmtKind::Reduce { buf, .. } => format!("{} +=", buf.name()),
        StmtKind::Alloc { buf, .. } => format!("alloc {}", buf.name()),
        StmtKind::Free { buf } => format!("free {}", buf.name()),
        StmtKind::Window { name, .. } => format!("window {}", name.name()),
        StmtKind::Call { proc, .. } => format!("call {}", proc.name),
        StmtKind::WriteConfig { config, field, .. } => {
            format!("{}.{} =", config.name, config.fields.get(*field)?.name)
        }
        StmtKind::If { .. } => "if".to_string(),
        StmtKind::Pass => "pass".to_string(),
    })
}
