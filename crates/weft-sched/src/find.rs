//! Finding statements by pattern.
//!
//! A pattern names a kind of statement and, after `#`, which occurrence (0 for the first, in
//! program order, parents before children):
//!
//! | pattern | matches |
//! |---|---|
//! | `for i`, or just `i` | a loop whose variable is named `i` |
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

use crate::path::Path;
use weft_ir::{Proc, Stmt, StmtKind};

/// Every statement of a proc with its path, parents before children, in program order.
pub fn all_stmts(p: &Proc) -> Vec<(Path, &Stmt)> {
    fn go<'a>(
        b: &'a [Stmt],
        prefix: &Path,
        root: bool,
        out: &mut Vec<(Path, &'a Stmt)>,
        blk: usize,
    ) {
        for (i, s) in b.iter().enumerate() {
            let path = if root {
                Path::top(i)
            } else {
                prefix.child(blk, i)
            };
            out.push((path.clone(), s));
            for (k, child) in weft_ir::visit::stmt_blocks(s).into_iter().enumerate() {
                go(child, &path, false, out, k);
            }
        }
    }
    let mut out = Vec::new();
    go(&p.body, &Path(vec![]), true, &mut out, 0);
    out
}

/// Whether a statement matches a pattern (without the `#k` part).
pub fn matches(s: &Stmt, pattern: &str) -> bool {
    let words: Vec<&str> = pattern.split_whitespace().collect();
    match (&s.kind, words.as_slice()) {
        (StmtKind::For { var, .. }, ["for", v]) | (StmtKind::For { var, .. }, [v]) => {
            var.name() == *v
        }
        (StmtKind::Assign { buf, .. }, [b, "="]) => buf.name() == *b,
        (StmtKind::Reduce { buf, .. }, [b, "+="]) => buf.name() == *b,
        (StmtKind::Alloc { buf, .. }, ["alloc", b]) => buf.name() == *b,
        (StmtKind::Free { buf }, ["free", b]) => buf.name() == *b,
        (StmtKind::Window { name, .. }, ["window", b]) => name.name() == *b,
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
    let hits: Vec<Path> = all_stmts(p)
        .into_iter()
        .filter(|(_, s)| matches(s, pat))
        .map(|(path, _)| path)
        .collect();
    hits.get(k).cloned().ok_or_else(|| {
        format!(
            "no statement matches '{pattern}' in proc '{}' ({} statements match '{pat}')",
            p.name,
            hits.len()
        )
    })
}
