//! Alpha-equivalence: equality up to a consistent renaming of bound symbols, ignoring spans.
//! This is the equality that `parse(print(p))` preserves.

use crate::expr::{Expr, ExprKind, WinCoord};
use crate::proc::{Arg, ArgKind, BufType, Memory, Proc};
use crate::stmt::{Block, StmtKind};
use crate::sym::Sym;
use std::collections::HashMap;

#[derive(Default)]
struct Alpha {
    map: HashMap<Sym, Sym>,
}

fn mem_eq(a: &Memory, b: &Memory) -> bool {
    a.name == b.name
        && a.header == b.header
        && a.alloc == b.alloc
        && a.free == b.free
        && a.access == b.access
        && a.addressable == b.addressable
        && a.last_dim == b.last_dim
        && a.max_bytes == b.max_bytes
        && a.isa == b.isa
}

impl Alpha {
    fn bind(&mut self, a: &Sym, b: &Sym) {
        self.map.insert(a.clone(), b.clone());
    }

    fn sym(&self, a: &Sym, b: &Sym) -> bool {
        match self.map.get(a) {
            Some(m) => m == b,
            None => a == b,
        }
    }

    fn exprs(&self, a: &[Expr], b: &[Expr]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| self.expr(x, y))
    }

    fn expr(&self, a: &Expr, b: &Expr) -> bool {
        if a.ty != b.ty {
            return false;
        }
        use ExprKind as K;
        match (&a.kind, &b.kind) {
            (K::Const(x), K::Const(y)) => match (x, y) {
                // Compare floats bitwise so that -0.0 and NaN behave.
                (crate::Const::Float(p), crate::Const::Float(q)) => p.to_bits() == q.to_bits(),
                _ => x == y,
            },
            (K::Var(x), K::Var(y)) => self.sym(x, y),
            (K::Read { buf: x, idx: i }, K::Read { buf: y, idx: j }) => {
                self.sym(x, y) && self.exprs(i, j)
            }
            (K::Unary(o, x), K::Unary(p, y)) => o == p && self.expr(x, y),
            (K::Binary(o, x1, x2), K::Binary(p, y1, y2)) => {
                o == p && self.expr(x1, y1) && self.expr(x2, y2)
            }
            (K::Select(x1, x2, x3), K::Select(y1, y2, y3)) => {
                self.expr(x1, y1) && self.expr(x2, y2) && self.expr(x3, y3)
            }
            (
                K::DataIndex {
                    value: x1,
                    lo: x2,
                    hi: x3,
                },
                K::DataIndex {
                    value: y1,
                    lo: y2,
                    hi: y3,
                },
            ) => self.expr(x1, y1) && self.expr(x2, y2) && self.expr(x3, y3),
            (K::Cast(t, x), K::Cast(u, y)) => t == u && self.expr(x, y),
            (K::Math(f, x), K::Math(g, y)) => f == g && self.exprs(x, y),
            (K::Window { buf: x, coords: c }, K::Window { buf: y, coords: d }) => {
                self.sym(x, y)
                    && c.len() == d.len()
                    && c.iter().zip(d).all(|p| match p {
                        (WinCoord::Point(u), WinCoord::Point(v)) => self.expr(u, v),
                        (WinCoord::Interval(u1, u2), WinCoord::Interval(v1, v2)) => {
                            self.expr(u1, v1) && self.expr(u2, v2)
                        }
                        _ => false,
                    })
            }
            (K::Stride { buf: x, dim: i }, K::Stride { buf: y, dim: j }) => {
                self.sym(x, y) && i == j
            }
            (
                K::ReadConfig {
                    config: c,
                    field: f,
                },
                K::ReadConfig {
                    config: d,
                    field: g,
                },
            ) => c.name == d.name && f == g,
            _ => false,
        }
    }

    fn buf_type(&self, a: &BufType, b: &BufType) -> bool {
        a.elem == b.elem
            && a.window == b.window
            && mem_eq(&a.mem, &b.mem)
            && self.exprs(&a.shape, &b.shape)
    }

    fn block(&mut self, a: &Block, b: &Block) -> bool {
        if a.len() != b.len() {
            return false;
        }
        for (x, y) in a.iter().zip(b) {
            use StmtKind as S;
            let ok = match (&x.kind, &y.kind) {
                (S::Pass, S::Pass) => true,
                (
                    S::Assign {
                        buf: b1,
                        idx: i1,
                        rhs: r1,
                    },
                    S::Assign {
                        buf: b2,
                        idx: i2,
                        rhs: r2,
                    },
                )
                | (
                    S::Reduce {
                        buf: b1,
                        idx: i1,
                        rhs: r1,
                    },
                    S::Reduce {
                        buf: b2,
                        idx: i2,
                        rhs: r2,
                    },
                ) => {
                    std::mem::discriminant(&x.kind) == std::mem::discriminant(&y.kind)
                        && self.sym(b1, b2)
                        && self.exprs(i1, i2)
                        && self.expr(r1, r2)
                }
                (
                    S::WriteConfig {
                        config: c1,
                        field: f1,
                        rhs: r1,
                    },
                    S::WriteConfig {
                        config: c2,
                        field: f2,
                        rhs: r2,
                    },
                ) => c1.name == c2.name && f1 == f2 && self.expr(r1, r2),
                (
                    S::If {
                        cond: c1,
                        then_body: t1,
                        else_body: e1,
                    },
                    S::If {
                        cond: c2,
                        then_body: t2,
                        else_body: e2,
                    },
                ) => self.expr(c1, c2) && self.block(t1, t2) && self.block(e1, e2),
                (
                    S::For {
                        var: v1,
                        lo: l1,
                        hi: h1,
                        body: b1,
                        parallel: p1,
                    },
                    S::For {
                        var: v2,
                        lo: l2,
                        hi: h2,
                        body: b2,
                        parallel: p2,
                    },
                ) => {
                    if p1 != p2 || !(self.expr(l1, l2) && self.expr(h1, h2)) {
                        return false;
                    }
                    self.bind(v1, v2);
                    self.block(b1, b2)
                }
                (S::Alloc { buf: b1, ty: t1 }, S::Alloc { buf: b2, ty: t2 }) => {
                    if !self.buf_type(t1, t2) {
                        return false;
                    }
                    self.bind(b1, b2);
                    true
                }
                (S::Free { buf: b1 }, S::Free { buf: b2 }) => self.sym(b1, b2),
                (S::Window { name: n1, rhs: r1 }, S::Window { name: n2, rhs: r2 }) => {
                    if !self.expr(r1, r2) {
                        return false;
                    }
                    self.bind(n1, n2);
                    true
                }
                (S::Call { proc: p1, args: a1 }, S::Call { proc: p2, args: a2 }) => {
                    p1.name == p2.name && self.exprs(a1, a2)
                }
                _ => false,
            };
            if !ok {
                return false;
            }
        }
        true
    }

    fn args(&mut self, a: &[Arg], b: &[Arg]) -> bool {
        if a.len() != b.len() {
            return false;
        }
        for (x, y) in a.iter().zip(b) {
            let ok = match (&x.kind, &y.kind) {
                (ArgKind::Ctrl(c), ArgKind::Ctrl(d)) => c == d,
                (ArgKind::Buf(s), ArgKind::Buf(t)) => self.buf_type(s, t),
                _ => false,
            };
            if !ok {
                return false;
            }
            self.bind(&x.sym, &y.sym);
        }
        true
    }
}

/// Whether two procs are equal up to renaming of their bound symbols (spans ignored). Callees,
/// memories and configs are compared by name (memories also by their templates).
pub fn alpha_eq_proc(a: &Proc, b: &Proc) -> bool {
    let mut al = Alpha::default();
    a.name == b.name
        && a.instr == b.instr
        && al.args(&a.args, &b.args)
        && al.exprs(&a.preds, &b.preds)
        && al.block(&a.body, &b.body)
}

/// Whether two expressions are the same expression (same symbols; spans ignored; float
/// constants compared bit for bit).
pub fn same_expr(a: &Expr, b: &Expr) -> bool {
    Alpha::default().expr(a, b)
}

/// Whether two blocks are the same code up to renaming of the symbols they bind (loop variables,
/// allocations, window names; spans ignored). Free symbols must be the same.
pub fn same_block(a: &Block, b: &Block) -> bool {
    Alpha::default().block(a, b)
}

/// Whether two procs have the same signature: argument kinds and types, then preconditions, equal
/// up to renaming of the arguments (names, bodies, instruction templates and spans ignored). A
/// call to one is then a well-formed call to the other.
pub fn same_signature(a: &Proc, b: &Proc) -> bool {
    let mut al = Alpha::default();
    al.args(&a.args, &b.args) && al.exprs(&a.preds, &b.preds)
}
