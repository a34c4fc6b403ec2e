//! Shared test helpers: a generator of random, syntactically valid modules built through the
//! Rust builder API (not necessarily well typed), driven by a seed.

#![allow(dead_code)]

use std::sync::Arc;
use weft_ir::build::{BlockBuilder, Buf, ProcBuilder};
use weft_ir::proc::FieldType;
use weft_ir::{
    BinOp, BufType, Config, ConfigField, CtrlType, DType, Expr, MathFn, Memory, Module, Proc, Span,
    WinCoord,
};

/// SplitMix64: small, deterministic, good enough to drive a generator from one seed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
}

/// Names are drawn from a small pool so that different symbols often share a name (siblings,
/// nested scopes), and some are keywords or item names, exercising the printer's renaming.
const NAMES: &[&str] = &[
    "i", "j", "k", "x", "y", "t", "n", "w", "acc", "i_1", "in", "size", "Cfg", "callee0", "inf",
    "DRAM", "a b", "3d",
];

const FLOATS: &[f64] = &[
    0.0, -0.0, 1.0, -1.5, 0.1, 1e-7, 1e16, 2.5e300, -3.25e-300, 5e-324, 123456.789,
];

#[derive(Clone, Default)]
struct Env {
    ints: Vec<Expr>,
    bools: Vec<Expr>,
    bufs: Vec<Buf>,
}

pub struct Gen {
    pub rng: Rng,
    mems: Vec<Arc<Memory>>,
    config: Arc<Config>,
    callees: Vec<Arc<Proc>>,
}

fn escape_bait(rng: &mut Rng) -> String {
    let parts = [
        "{name}", "\"", "\\", "\n", "\t", "\u{1}", "é", "{", "}", "//", "x", " ", "\u{7f}",
    ];
    (0..rng.below(6)).map(|_| *rng.pick(&parts)).collect()
}

impl Gen {
    pub fn new(seed: u64) -> Gen {
        let mut rng = Rng(seed);
        let scratch = Arc::new(Memory {
            name: "SCRATCH".into(),
            header: escape_bait(&mut rng),
            alloc: format!("{{type}} {{name}}[{{size}}];{}", escape_bait(&mut rng)),
            free: escape_bait(&mut rng),
            access: "{name}[{offset}]".into(),
            addressable: rng.chance(50),
            last_dim: if rng.chance(50) {
                Some(rng.below(16) as i64 - 4)
            } else {
                None
            },
            max_bytes: if rng.chance(30) {
                Some(rng.below(1 << 20) as i64 + 1)
            } else {
                None
            },
            isa: if rng.chance(30) {
                vec!["avx512f".into(), "sse4.2".into()]
            } else {
                Vec::new()
            },
            dtypes: if rng.chance(30) {
                vec![DType::F32, DType::I8]
            } else {
                Vec::new()
            },
            span: Span::DUMMY,
        });
        let mems = vec![
            weft_syntax::std_memory("DRAM").unwrap(),
            weft_syntax::std_memory("DRAM_STACK").unwrap(),
            scratch,
        ];
        let config = Arc::new(Config {
            name: "Cfg".into(),
            fields: vec![
                ConfigField {
                    name: "scale".into(),
                    ty: FieldType::Data(DType::F32),
                },
                ConfigField {
                    name: "st".into(),
                    ty: FieldType::Ctrl(CtrlType::Stride),
                },
                ConfigField {
                    name: "on".into(),
                    ty: FieldType::Ctrl(CtrlType::Bool),
                },
                ConfigField {
                    name: "k".into(),
                    ty: FieldType::Ctrl(CtrlType::Index),
                },
                ConfigField {
                    name: "d".into(),
                    ty: FieldType::Data(DType::I16),
                },
            ],
            span: Span::DUMMY,
        });
        Gen {
            rng,
            mems,
            config,
            callees: Vec::new(),
        }
    }

    fn name(&mut self) -> &'static str {
        NAMES[self.rng.below(NAMES.len())]
    }

    fn dtype(&mut self) -> DType {
        *self.rng.pick(&DType::ALL)
    }

    fn mem(&mut self) -> Arc<Memory> {
        self.rng.pick(&self.mems).clone()
    }

    fn int_lit(&mut self) -> Expr {
        let v = match self.rng.below(10) {
            0 => i64::MIN,
            1 => i64::MAX,
            _ => self.rng.below(41) as i64 - 20,
        };
        Expr::int(v)
    }

    fn float_lit(&mut self) -> Expr {
        if self.rng.chance(50) {
            let v = *self.rng.pick(FLOATS);
            return Expr::float(v);
        }
        loop {
            let v = f64::from_bits(self.rng.next());
            if v.is_finite() {
                return Expr::float(v);
            }
        }
    }

    fn int_expr(&mut self, env: &Env, d: usize) -> Expr {
        let c = if d == 0 {
            self.rng.below(3)
        } else {
            self.rng.below(12)
        };
        match c {
            0 => self.int_lit(),
            1 if !env.ints.is_empty() => self.rng.pick(&env.ints).clone(),
            2 if !env.bufs.is_empty() => {
                let b = self.rng.pick(&env.bufs).clone();
                b.stride(self.rng.below(3))
            }
            3 => -self.int_expr(env, d - 1),
            4..=8 => {
                let op =
                    *self
                        .rng
                        .pick(&[BinOp::Add, BinOp::Sub, BinOp::Mul, BinOp::Div, BinOp::Mod]);
                let a = self.int_expr(env, d - 1);
                let b = self.int_expr(env, d - 1);
                Expr::binary(op, a, b)
            }
            9 => {
                let a = self.int_expr(env, d - 1);
                let b = self.int_expr(env, d - 1);
                if self.rng.chance(50) {
                    Expr::min(a, b)
                } else {
                    Expr::max(a, b)
                }
            }
            10 => {
                let c = self.bool_expr(env, d - 1);
                let a = self.int_expr(env, d - 1);
                let b = self.int_expr(env, d - 1);
                Expr::select(c, a, b)
            }
            11 => Expr::read_config(&self.config, *self.rng.pick(&[1, 3])),
            _ => self.int_lit(),
        }
    }

    fn bool_expr(&mut self, env: &Env, d: usize) -> Expr {
        let c = if d == 0 {
            self.rng.below(2)
        } else {
            self.rng.below(7)
        };
        match c {
            0 => Expr::bool(self.rng.chance(50)),
            1 if !env.bools.is_empty() => self.rng.pick(&env.bools).clone(),
            2 | 3 => {
                let op = *self.rng.pick(&[
                    BinOp::Lt,
                    BinOp::Le,
                    BinOp::Gt,
                    BinOp::Ge,
                    BinOp::Eq,
                    BinOp::Ne,
                ]);
                let a = self.int_expr(env, d - 1);
                let b = self.int_expr(env, d - 1);
                Expr::binary(op, a, b)
            }
            4 => {
                let op = *self.rng.pick(&[BinOp::And, BinOp::Or]);
                let a = self.bool_expr(env, d - 1);
                let b = self.bool_expr(env, d - 1);
                Expr::binary(op, a, b)
            }
            5 => self.bool_expr(env, d - 1).not(),
            6 => Expr::read_config(&self.config, 2),
            _ => Expr::bool(true),
        }
    }

    fn read(&mut self, env: &Env, d: usize) -> Option<Expr> {
        if env.bufs.is_empty() {
            return None;
        }
        let b = self.rng.pick(&env.bufs).clone();
        let idx = (0..b.rank).map(|_| self.int_expr(env, d.min(2))).collect();
        Some(b.at(idx))
    }

    fn data_expr(&mut self, env: &Env, d: usize) -> Expr {
        let c = if d == 0 {
            self.rng.below(4)
        } else {
            self.rng.below(16)
        };
        match c {
            0 => self.int_lit(),
            1 => self.float_lit(),
            2 => Expr::bool(self.rng.chance(50)),
            3 => self.read(env, d).unwrap_or_else(|| self.float_lit()),
            4 | 5 => {
                let op = *self.rng.pick(&[
                    BinOp::Add,
                    BinOp::Sub,
                    BinOp::Mul,
                    BinOp::Div,
                    BinOp::Mod,
                    BinOp::Lt,
                    BinOp::Eq,
                    BinOp::Ge,
                    BinOp::And,
                    BinOp::Or,
                ]);
                let a = self.data_expr(env, d - 1);
                let b = self.data_expr(env, d - 1);
                Expr::binary(op, a, b)
            }
            6 => -self.data_expr(env, d - 1),
            7 => -(-self.data_expr(env, d - 1)),
            8 => self.data_expr(env, d - 1).not(),
            9 => {
                let t = self.dtype();
                Expr::cast(t, self.data_expr(env, d - 1))
            }
            10 => {
                let f = *self.rng.pick(&MathFn::ALL);
                let args = (0..f.arity()).map(|_| self.data_expr(env, d - 1)).collect();
                Expr::math(f, args)
            }
            11 => {
                let c = self.data_expr(env, d - 1);
                let a = self.data_expr(env, d - 1);
                let b = self.data_expr(env, d - 1);
                Expr::select(c, a, b)
            }
            12 => {
                let a = self.data_expr(env, d - 1);
                let b = self.data_expr(env, d - 1);
                if self.rng.chance(50) {
                    Expr::min(a, b)
                } else {
                    Expr::max(a, b)
                }
            }
            13 => Expr::read_config(&self.config, *self.rng.pick(&[0, 4])),
            14 => -self.int_lit(),
            _ => self.read(env, d).unwrap_or_else(|| self.int_lit()),
        }
    }

    fn window(&mut self, env: &Env) -> Option<(Buf, Vec<WinCoord>)> {
        if env.bufs.is_empty() {
            return None;
        }
        let b = self.rng.pick(&env.bufs).clone();
        let coords = if self.rng.chance(30) {
            vec![]
        } else {
            (0..b.rank)
                .map(|_| {
                    if self.rng.chance(50) {
                        WinCoord::Point(self.int_expr(env, 1))
                    } else {
                        WinCoord::Interval(self.int_expr(env, 1), self.int_expr(env, 1))
                    }
                })
                .collect()
        };
        Some((b, coords))
    }

    fn shape(&mut self, env: &Env) -> Vec<Expr> {
        (0..self.rng.below(3))
            .map(|_| self.int_expr(env, 1))
            .collect()
    }

    fn block(&mut self, b: &mut BlockBuilder, env: &Env, depth: usize) {
        let mut env = env.clone();
        let mut allocs: Vec<Buf> = Vec::new();
        let n = self.rng.below(5) + usize::from(depth == 0);
        for _ in 0..n {
            let nested = depth < 3;
            match self.rng.below(11) {
                0 => {
                    b.pass();
                }
                1 | 2 => {
                    if let Some(buf) = env.bufs.get(self.rng.below(env.bufs.len())).cloned() {
                        let idx = (0..buf.rank).map(|_| self.int_expr(&env, 2)).collect();
                        let rhs = self.data_expr(&env, 3);
                        if self.rng.chance(50) {
                            b.assign(&buf, idx, rhs);
                        } else {
                            b.reduce(&buf, idx, rhs);
                        }
                    }
                }
                3 if nested => {
                    let c = if self.rng.chance(80) {
                        self.bool_expr(&env, 3)
                    } else {
                        self.data_expr(&env, 2)
                    };
                    let with_else = self.rng.chance(50);
                    let env1 = env.clone();
                    let mut then_b = BlockBuilder::default();
                    self.block(&mut then_b, &env1, depth + 1);
                    let mut else_b = BlockBuilder::default();
                    if with_else {
                        self.block(&mut else_b, &env1, depth + 1);
                    }
                    b.if_else(c, |t| t.stmts = then_b.stmts, |e| e.stmts = else_b.stmts);
                }
                4 if nested => {
                    let name = self.name();
                    let lo = self.int_expr(&env, 2);
                    let hi = self.int_expr(&env, 2);
                    let env1 = env.clone();
                    let gen = &mut *self;
                    b.for_(name, lo, hi, |body, i| {
                        let mut env2 = env1;
                        env2.ints.push(i.clone());
                        let mut bb = BlockBuilder::default();
                        gen.block(&mut bb, &env2, depth + 1);
                        body.stmts = bb.stmts;
                    });
                }
                5 => {
                    let name = self.name();
                    let elem = self.dtype();
                    let shape = self.shape(&env);
                    let mem = self.mem();
                    let buf = b.alloc(name, elem, shape, &mem);
                    env.bufs.push(buf.clone());
                    allocs.push(buf);
                }
                6 if !allocs.is_empty() => {
                    let k = self.rng.below(allocs.len());
                    let buf = allocs.remove(k);
                    b.free(&buf);
                }
                7 => {
                    if let Some((src, coords)) = self.window(&env) {
                        let name = self.name();
                        let w = b.window(name, &src, coords);
                        env.bufs.push(w);
                    }
                }
                8 | 9 if !self.callees.is_empty() => {
                    let callee = self.rng.pick(&self.callees).clone();
                    let mut args = Vec::new();
                    for a in &callee.args {
                        let e = match &a.kind {
                            weft_ir::ArgKind::Ctrl(CtrlType::Bool) => self.bool_expr(&env, 2),
                            weft_ir::ArgKind::Ctrl(_) => self.int_expr(&env, 2),
                            weft_ir::ArgKind::Buf(_) => match self.window(&env) {
                                Some((src, coords)) => src.win(coords),
                                None => return self.block_tail(b),
                            },
                        };
                        args.push(e);
                    }
                    b.call(&callee, args);
                }
                _ => {
                    let field = self.rng.below(self.config.fields.len());
                    let rhs = match self.config.fields[field].ty {
                        FieldType::Ctrl(CtrlType::Bool) => self.bool_expr(&env, 2),
                        FieldType::Ctrl(_) => self.int_expr(&env, 2),
                        FieldType::Data(_) => self.data_expr(&env, 2),
                    };
                    let cfg = self.config.clone();
                    b.write_config(&cfg, field, rhs);
                }
            }
        }
    }

    /// Ends a block early (used when a call cannot be built): adds a `pass`.
    fn block_tail(&mut self, b: &mut BlockBuilder) {
        b.pass();
    }

    fn proc(&mut self, name: &str, with_body: bool) -> Arc<Proc> {
        let dram = self.mems[0].clone();
        let mut p = ProcBuilder::new(name, &dram);
        if self.rng.chance(30) {
            let t = escape_bait(&mut self.rng);
            p.instr_template(&t);
        }
        let mut env = Env::default();
        for _ in 0..self.rng.below(6) {
            let n = self.name();
            match self.rng.below(7) {
                0 => env.ints.push(p.size(n)),
                1 => env.ints.push(p.index(n)),
                2 => env.ints.push(p.stride_arg(n)),
                3 => env.bools.push(p.bool_arg(n)),
                _ => {
                    let elem = self.dtype();
                    let shape = self.shape(&env);
                    let window = self.rng.chance(30);
                    let mem = self.mem();
                    let b = p.buffer(
                        n,
                        BufType {
                            elem,
                            shape,
                            window,
                            mem,
                        },
                    );
                    env.bufs.push(b);
                }
            }
        }
        for _ in 0..self.rng.below(3) {
            let e = self.bool_expr(&env, 2);
            p.assert(e);
        }
        if with_body {
            let mut bb = BlockBuilder::default();
            self.block(&mut bb, &env, 0);
            p.body().stmts = bb.stmts;
        } else {
            p.body().pass();
        }
        p.finish()
    }

    /// A module: a custom memory, a config, two callees and a proc calling them.
    pub fn module(&mut self) -> Module {
        for k in 0..2 {
            let body = self.rng.chance(50);
            let c = self.proc(&format!("callee{k}"), body);
            self.callees.push(c);
        }
        let main = self.proc("main", true);
        let mut procs = self.callees.clone();
        procs.push(main);
        Module {
            imports: if self.rng.chance(30) {
                vec!["std".into()]
            } else {
                vec![]
            },
            memories: vec![self.mems[2].clone()],
            configs: vec![self.config.clone()],
            procs,
            schedules: vec![],
            pipelines: vec![],
            steps_items: vec![],
        }
    }
}
