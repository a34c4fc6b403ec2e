//! The Rust builder API: construct procs from Rust code.
//!
//! ```
//! use std::sync::Arc;
//! use weft_ir::build::ProcBuilder;
//! use weft_ir::{DType, Memory, Span};
//!
//! // Memories are normally parsed from weft source (`weft::std_memories()`); a literal one here.
//! let dram = Arc::new(Memory {
//!     name: "DRAM".into(),
//!     header: "#include <stdlib.h>".into(),
//!     alloc: "{type} *{name} = ({type} *) malloc(({size}) * sizeof({type}));".into(),
//!     free: "free({name});".into(),
//!     access: "{name}[{offset}]".into(),
//!     addressable: true,
//!     last_dim: None,
//!     max_bytes: None,
//!     isa: Vec::new(),
//!     dtypes: Vec::new(),
//!     span: Span::DUMMY,
//! });
//! let mut p = ProcBuilder::new("axpy", &dram);
//! let n = p.size("n");
//! let a = p.scalar("a", DType::F32);
//! let x = p.tensor("x", DType::F32, vec![n.clone()]);
//! let y = p.tensor("y", DType::F32, vec![n.clone()]);
//! p.body().for_("i", 0, &n, |b, i| {
//!     b.reduce(&y, vec![i.clone()], a.get() * x.at(vec![i.clone()]));
//! });
//! let proc = p.finish();
//! assert!(proc.to_string().contains("y[i] += a * x[i];"));
//! ```

use crate::diag::Span;
use crate::expr::{Expr, WinCoord};
use crate::proc::{Arg, ArgKind, BufType, Config, Instr, Memory, Proc};
use crate::stmt::{Block, Stmt, StmtKind};
use crate::sym::Sym;
use crate::types::{CtrlType, DType, Ty};
use std::sync::Arc;

/// A handle to a buffer (argument, allocation or window) for building accesses.
#[derive(Clone, Debug)]
pub struct Buf {
    pub sym: Sym,
    pub elem: DType,
    pub rank: usize,
}

impl Buf {
    /// A read `buf[idx]`.
    pub fn at(&self, idx: Vec<Expr>) -> Expr {
        Expr::read(&self.sym, self.elem, idx)
    }

    /// A read of a rank-0 buffer (a scalar).
    pub fn get(&self) -> Expr {
        Expr::read(&self.sym, self.elem, vec![])
    }

    /// A window `buf[coords]`.
    pub fn win(&self, coords: Vec<WinCoord>) -> Expr {
        Expr::window(&self.sym, self.elem, coords)
    }

    /// The whole buffer as a call argument.
    pub fn all(&self) -> Expr {
        Expr::window(&self.sym, self.elem, vec![])
    }

    pub fn stride(&self, dim: usize) -> Expr {
        Expr::stride(&self.sym, dim)
    }
}

/// Builds a statement block.
#[derive(Default)]
pub struct BlockBuilder {
    pub stmts: Block,
}

impl BlockBuilder {
    pub fn push(&mut self, kind: StmtKind) -> &mut Self {
        self.stmts.push(Stmt::new(kind, Span::DUMMY));
        self
    }

    pub fn pass(&mut self) -> &mut Self {
        self.push(StmtKind::Pass)
    }

    pub fn assign(&mut self, buf: &Buf, idx: Vec<Expr>, rhs: Expr) -> &mut Self {
        let idx = idx.into_iter().map(|e| e.coerce(Ty::Int)).collect();
        self.push(StmtKind::Assign {
            buf: buf.sym.clone(),
            idx,
            rhs: rhs.coerce(Ty::Data(buf.elem)),
        })
    }

    pub fn reduce(&mut self, buf: &Buf, idx: Vec<Expr>, rhs: Expr) -> &mut Self {
        let idx = idx.into_iter().map(|e| e.coerce(Ty::Int)).collect();
        self.push(StmtKind::Reduce {
            buf: buf.sym.clone(),
            idx,
            rhs: rhs.coerce(Ty::Data(buf.elem)),
        })
    }

    pub fn write_config(&mut self, config: &Arc<Config>, field: usize, rhs: Expr) -> &mut Self {
        let ty = config
            .fields
            .get(field)
            .map(|f| f.ty.ty())
            .unwrap_or(Ty::Int);
        self.push(StmtKind::WriteConfig {
            config: config.clone(),
            field,
            rhs: rhs.coerce(ty),
        })
    }

    /// `for name in lo..hi { body }`; the closure gets the loop variable.
    pub fn for_(
        &mut self,
        name: &str,
        lo: impl Into<Expr>,
        hi: impl Into<Expr>,
        body: impl FnOnce(&mut BlockBuilder, &Expr),
    ) -> &mut Self {
        let var = Sym::new(name);
        let v = Expr::var(&var, Ty::Int);
        let mut inner = BlockBuilder::default();
        body(&mut inner, &v);
        self.push(StmtKind::For {
            var,
            lo: lo.into().coerce(Ty::Int),
            hi: hi.into().coerce(Ty::Int),
            body: inner.stmts,
            parallel: false,
        })
    }

    pub fn if_(&mut self, cond: Expr, then: impl FnOnce(&mut BlockBuilder)) -> &mut Self {
        self.if_else(cond, then, |_| {})
    }

    pub fn if_else(
        &mut self,
        cond: Expr,
        then: impl FnOnce(&mut BlockBuilder),
        otherwise: impl FnOnce(&mut BlockBuilder),
    ) -> &mut Self {
        let mut t = BlockBuilder::default();
        then(&mut t);
        let mut e = BlockBuilder::default();
        otherwise(&mut e);
        self.push(StmtKind::If {
            cond: cond.coerce(Ty::Bool),
            then_body: t.stmts,
            else_body: e.stmts,
        })
    }

    /// `alloc name: elem[shape] @ mem`.
    pub fn alloc(&mut self, name: &str, elem: DType, shape: Vec<Expr>, mem: &Arc<Memory>) -> Buf {
        let sym = Sym::new(name);
        let rank = shape.len();
        let shape = shape.into_iter().map(|e| e.coerce(Ty::Int)).collect();
        self.push(StmtKind::Alloc {
            buf: sym.clone(),
            ty: BufType {
                elem,
                shape,
                window: false,
                mem: mem.clone(),
            },
        });
        Buf { sym, elem, rank }
    }

    pub fn free(&mut self, buf: &Buf) -> &mut Self {
        self.push(StmtKind::Free {
            buf: buf.sym.clone(),
        })
    }

    /// `let name = src[coords]`.
    pub fn window(&mut self, name: &str, src: &Buf, coords: Vec<WinCoord>) -> Buf {
        let sym = Sym::new(name);
        let rank = if coords.is_empty() {
            src.rank
        } else {
            coords
                .iter()
                .filter(|c| matches!(c, WinCoord::Interval(..)))
                .count()
        };
        self.push(StmtKind::Window {
            name: sym.clone(),
            rhs: src.win(coords),
        });
        Buf {
            sym,
            elem: src.elem,
            rank,
        }
    }

    /// A call; control arguments are plain expressions, buffer arguments are windows
    /// ([`Buf::all`] or [`Buf::win`]).
    pub fn call(&mut self, proc: &Arc<Proc>, args: Vec<Expr>) -> &mut Self {
        let args = args
            .into_iter()
            .zip(proc.args.iter().map(Some).chain(std::iter::repeat(None)))
            .map(|(e, p)| match p.map(|a| &a.kind) {
                Some(ArgKind::Ctrl(c)) => e.coerce(c.ty()),
                _ => e,
            })
            .collect();
        self.push(StmtKind::Call {
            proc: proc.clone(),
            args,
        })
    }
}

/// Builds a proc: declare arguments, then fill [`ProcBuilder::body`], then [`ProcBuilder::finish`].
pub struct ProcBuilder {
    name: String,
    args: Vec<Arg>,
    preds: Vec<Expr>,
    body: BlockBuilder,
    instr: Option<Instr>,
    default_mem: Arc<Memory>,
}

impl ProcBuilder {
    /// A new proc whose tensors live in `default_mem` unless stated otherwise.
    pub fn new(name: &str, default_mem: &Arc<Memory>) -> ProcBuilder {
        ProcBuilder {
            name: name.to_string(),
            args: Vec::new(),
            preds: Vec::new(),
            body: BlockBuilder::default(),
            instr: None,
            default_mem: default_mem.clone(),
        }
    }

    /// Make this an instruction emitted through a C template.
    pub fn instr_template(&mut self, template: &str) -> &mut Self {
        self.instr = Some(Instr {
            template: template.to_string(),
            header: String::new(),
            isa: Vec::new(),
            finish: String::new(),
        });
        self
    }

    fn ctrl(&mut self, name: &str, c: CtrlType) -> Expr {
        let sym = Sym::new(name);
        self.args.push(Arg {
            sym: sym.clone(),
            kind: ArgKind::Ctrl(c),
            span: Span::DUMMY,
        });
        Expr::var(&sym, c.ty())
    }

    pub fn size(&mut self, name: &str) -> Expr {
        self.ctrl(name, CtrlType::Size)
    }
    pub fn index(&mut self, name: &str) -> Expr {
        self.ctrl(name, CtrlType::Index)
    }
    pub fn stride_arg(&mut self, name: &str) -> Expr {
        self.ctrl(name, CtrlType::Stride)
    }
    pub fn bool_arg(&mut self, name: &str) -> Expr {
        self.ctrl(name, CtrlType::Bool)
    }

    /// A buffer argument of any kind.
    pub fn buffer(&mut self, name: &str, ty: BufType) -> Buf {
        let sym = Sym::new(name);
        let b = Buf {
            sym: sym.clone(),
            elem: ty.elem,
            rank: ty.rank(),
        };
        self.args.push(Arg {
            sym,
            kind: ArgKind::Buf(BufType {
                shape: ty.shape.into_iter().map(|e| e.coerce(Ty::Int)).collect(),
                ..ty
            }),
            span: Span::DUMMY,
        });
        b
    }

    /// A dense row-major tensor in the default memory.
    pub fn tensor(&mut self, name: &str, elem: DType, shape: Vec<Expr>) -> Buf {
        let mem = self.default_mem.clone();
        self.buffer(
            name,
            BufType {
                elem,
                shape,
                window: false,
                mem,
            },
        )
    }

    /// A window (strided view) argument in the default memory.
    pub fn window(&mut self, name: &str, elem: DType, shape: Vec<Expr>) -> Buf {
        let mem = self.default_mem.clone();
        self.buffer(
            name,
            BufType {
                elem,
                shape,
                window: true,
                mem,
            },
        )
    }

    /// A scalar data argument (a rank-0 buffer, passed by reference so it can be an output).
    pub fn scalar(&mut self, name: &str, elem: DType) -> Buf {
        self.tensor(name, elem, vec![])
    }

    /// A precondition.
    pub fn assert(&mut self, pred: Expr) -> &mut Self {
        self.preds.push(pred.coerce(Ty::Bool));
        self
    }

    pub fn body(&mut self) -> &mut BlockBuilder {
        &mut self.body
    }

    pub fn finish(self) -> Arc<Proc> {
        Arc::new(Proc {
            name: self.name,
            args: self.args,
            preds: self.preds,
            body: self.body.stmts,
            instr: self.instr,
            span: Span::DUMMY,
            origin: None,
        })
    }
}
