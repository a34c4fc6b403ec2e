//! Differential fuzzing of the hazard classes of issue 8, which the random procs of
//! `sched_differential` never contain: config fields read in loop bounds and conditions and
//! written in loop bodies, `stride()` of windows with point dimensions, uses through windows next
//! to the `free` of their buffer, scheduled instructions, extreme constants in steps, and calls of
//! scheduled procs linked into their callers (with parallel loops and polluted config fields).
//!
//! Procs are put together from random snippets of these kinds; random text steps (every
//! primitive that reads or moves bounds, conditions, frees and windows, with ordinary and extreme
//! arguments) are applied one at a time. Every accepted step must leave the results unchanged on
//! the reference interpreter: every buffer, and every config field the provenance does not record
//! as polluted (for an instruction: every config field), from several initial config states, and
//! the scheduled proc must run without error wherever the original does.
//!
//! `WEFT_SCHED_CASES` sets the number of procs (default 250), `WEFT_SCHED_SEED` the seed;
//! `WEFT_HAZARD_TRACE` prints each step as it is tried (to find a step that runs long).

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::sync::Arc;
use weft_interp::{ArgValue, Cell, ConfigState, ConfigValue};
use weft_ir::{Proc, SchedStep};
use weft_sched::Schedule;

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

const CONFIG: &str = "config C { n: index, k: index, v: f32 }\n";
const FIELDS: &[(&str, usize)] = &[("C", 0), ("C", 1), ("C", 2)];

/// Huge constants for step arguments: where a rewrite copies them into control arithmetic, the
/// result must still fit in 64 bits (or the step must be refused).
const EXTREME: &[i64] = &[
    i64::MAX,
    i64::MAX - 807,
    1 << 62,
    -(1 << 62),
    i64::MIN + 1,
    (1 << 31) - 1,
];

/// One snippet of a hazard kind; `k` keeps its names apart from the other snippets'.
fn snippet(rng: &mut StdRng, k: usize) -> String {
    match rng.gen_range(0..5) {
        // A loop whose bounds read `C.n` and whose body writes it.
        0 => {
            let lo = ["0", "C.n % 2", "1"].choose(rng).unwrap();
            let hi = ["n + 1", "n + C.n % 2 + 1", "C.n % 4 + 1", "n + 2"]
                .choose(rng)
                .unwrap();
            let v = ["0", "1", "2", "n"].choose(rng).unwrap();
            let cond = if rng.gen_bool(0.5) {
                "if C.n % 2 == 0 { cnt += 2; }".to_string()
            } else {
                String::new()
            };
            format!(
                "    for i{k} in {lo}..{hi} {{
        if i{k} < n {{ x[i{k}] += 1.0; }}
        cnt += 1;
        {cond}
        C.n = {v};
    }}
"
            )
        }
        // Conditions on strides of a window with a point dimension and of its root.
        1 => {
            let row = rng.gen_range(0..4);
            if rng.gen_bool(0.5) {
                format!(
                    "    let w{k} = A[{row}, 0:4];
    if stride(w{k}, 0) == 1 {{ y[0, 0] = 1.0; }}
    if stride(A, 0) == 4 {{ y[0, 0] = 2.0; }}
    if stride(A, 0) == 4 {{
        if stride(w{k}, 0) == 1 {{ y[0, 1] = 5.0; }}
    }}
"
                )
            } else {
                format!(
                    "    let w{k} = A[{row}, 0:4];
    for j{k} in 0..2 {{
        if j{k} == 0 and stride(w{k}, 0) == 1 {{ y[0, 2] = 1.0; }}
        if j{k} == 1 and stride(A, 0) == 4 {{ y[0, 2] = 2.0; }}
    }}
"
                )
            }
        }
        // A use through a window next to the free of its buffer.
        2 => format!(
            "    alloc t{k}: f32[4];
    t{k}[0] = x[0];
    t{k}[1] = 2.0;
    let v{k} = t{k}[0:2];
    y[1, 0] = v{k}[0] + v{k}[1];
    free t{k};
    y[1, 1] = 3.0;
"
        ),
        // A config write followed by reads in control position.
        3 => format!(
            "    C.k = {};
    for a{k} in 0..C.k % 3 + 1 {{
        y[2, a{k}] += x[a{k}];
    }}
",
            rng.gen_range(0..4)
        ),
        // A plain nest.
        _ => format!(
            "    for a{k} in 0..n {{
        for b{k} in 0..4 {{
            y[a{k} + 3, b{k}] += x[a{k} + b{k}];
        }}
    }}
"
        ),
    }
}

/// A random hazard proc `p` (or instruction, whose C template is never used here).
fn random_hazard_proc(rng: &mut StdRng, instr: bool) -> String {
    let mut body = String::from("    C.n = n;\n");
    for k in 0..rng.gen_range(2..=4) {
        body.push_str(&snippet(rng, k));
    }
    let head = if instr {
        "instr p(n: size, x: f32[n + 8], y: f32[n + 8, 4], A: [f32][4, 4], cnt: i32) \"/* {x_data} */\""
    } else {
        "proc p(n: size, x: f32[n + 8], y: f32[n + 8, 4], A: [f32][4, 4], cnt: i32)"
    };
    format!("{CONFIG}{head} {{\n    assert n <= 64;\n{body}}}\n")
}

/// A step written in text, read by the language's parser with the module's items in scope.
fn step(scope: &mut weft_syntax::Scope, primitive: &str, args: &[String]) -> SchedStep {
    let text = format!("{primitive}({})", args.join(", "));
    weft_syntax::parse_step(0, &text, scope).unwrap_or_else(|d| panic!("{text}: {d:?}"))
}

/// A random text step on the current proc: a statement chosen among the proc's, a primitive
/// that reads or moves its bounds, condition or neighbours, ordinary or extreme arguments.
fn random_step(
    rng: &mut StdRng,
    s: &Schedule,
    n: usize,
    scope: &mut weft_syntax::Scope,
) -> SchedStep {
    let mut step = |p: &str, a: &[String]| step(scope, p, a);
    let p = s.proc();
    let stmts = weft_sched::find::all_stmts(p);
    let loops: Vec<String> = stmts
        .iter()
        .filter_map(|(_, st)| match &st.kind {
            weft_ir::StmtKind::For { var, .. } => Some(var.name().to_string()),
            _ => None,
        })
        .collect();
    let patterns: Vec<String> = {
        let mut v = vec!["if".to_string(), "if #1".into(), "if #2".into()];
        v.extend(["x +=", "y =", "y +=", "cnt +=", "C.n =", "C.k ="].map(String::from));
        v.extend((0..4).map(|k| format!("free t{k}")));
        v.extend((0..4).map(|k| format!("window v{k}")));
        v.extend((0..4).map(|k| format!("window w{k}")));
        v.iter().map(|x| format!("\"{x}\"")).collect()
    };
    let any_stmt = |rng: &mut StdRng| -> String {
        if rng.gen_bool(0.5) {
            if let Some(l) = loops.choose(rng) {
                return l.clone();
            }
        }
        patterns.choose(rng).unwrap().clone()
    };
    let big = |rng: &mut StdRng| *EXTREME.choose(rng).unwrap();
    let Some(lp) = loops.choose(rng).cloned() else {
        return step("simplify", &[]);
    };
    match rng.gen_range(0..16) {
        0 | 1 => {
            let f = if rng.gen_bool(0.8) {
                rng.gen_range(1..=5)
            } else {
                big(rng)
            };
            let tail = ["guard", "cut", "cut_and_guard", "perfect"]
                .choose(rng)
                .unwrap();
            step(
                "split",
                &[
                    lp,
                    f.to_string(),
                    format!("o{n}"),
                    format!("t{n}i"),
                    tail.to_string(),
                ],
            )
        }
        2 => {
            let point = ["1", "n", "0", "2"].choose(rng).unwrap().to_string();
            step("cut", &[lp, point])
        }
        3 => {
            let start = if rng.gen_bool(0.6) {
                rng.gen_range(0..3).to_string()
            } else {
                big(rng).to_string()
            };
            step("shift", &[lp, start])
        }
        4 => step("fuse", &[lp]),
        5 => step("fission", &[any_stmt(rng)]),
        6 => step("reorder_loops", &[lp]),
        7 => step("reorder_stmts", &[any_stmt(rng)]),
        8 => step("lift_if", &[lp]),
        9 => step("parallelize", &[lp]),
        10 => step("eliminate_dead_code", &[any_stmt(rng)]),
        11 => {
            let cond = match rng.gen_range(0..3) {
                0 => format!("n + {} > 0", big(rng)),
                1 => format!("n - {} > 0", big(rng)),
                _ => "n > 2".to_string(),
            };
            step("add_guard", &[any_stmt(rng), cond])
        }
        12 => step("unroll", &[lp]),
        13 => step(
            "write_config",
            &[
                any_stmt(rng),
                ["C.k", "C.n"].choose(rng).unwrap().to_string(),
                ["5", "0", "n"].choose(rng).unwrap().to_string(),
            ],
        ),
        14 => step("remove_loop", &[lp]),
        _ => step(
            "add_loop",
            &[
                any_stmt(rng),
                format!("r{n}"),
                // (Not an extreme count: an idempotent statement may run that often.)
                ["2", "n", "n + 1"].choose(rng).unwrap().to_string(),
            ],
        ),
    }
}

/// The initial config states every comparison starts from.
fn config_states() -> Vec<ConfigState> {
    let mut out = vec![ConfigState::default()];
    for v in [0, 1, 3] {
        let mut c = ConfigState::default();
        c.set("C", 0, ConfigValue::Int(v));
        c.set("C", 1, ConfigValue::Int(v + 1));
        out.push(c);
    }
    out
}

/// One run: its outcome, every buffer argument's cells, the final config state.
fn exec(
    p: &Proc,
    n: i64,
    seed: u64,
    cfg: &ConfigState,
) -> (Result<(), String>, Vec<Vec<Cell>>, ConfigState) {
    let sizes: HashMap<String, i64> = [("n".to_string(), n)].into();
    let mut args = weft_interp::random_args(p, &sizes, seed).expect("arguments");
    let mut cfg = cfg.clone();
    let r = weft_interp::run(p, &mut args, &mut cfg).map_err(|e| e.to_string());
    let bufs = args
        .into_iter()
        .filter_map(|a| match a {
            ArgValue::Buf(b) => Some(b.data),
            _ => None,
        })
        .collect();
    (r, bufs, cfg)
}

/// `new` behaves as `orig`: wherever `orig` runs, `new` runs too and leaves the same buffers and
/// the same values of the config fields outside `polluted`.
fn same_behaviour(orig: &Proc, new: &Proc, polluted: &[(String, usize)]) -> Result<(), String> {
    for n in [1, 2, 5] {
        for (c, cfg) in config_states().iter().enumerate() {
            let seed = n as u64 * 7 + c as u64;
            let (ra, ba, ca) = exec(orig, n, seed, cfg);
            if ra.is_err() {
                continue;
            }
            let (rb, bb, cb) = exec(new, n, seed, cfg);
            if let Err(e) = rb {
                return Err(format!(
                    "at n={n} from {cfg:?} the original runs and the result fails: {e}"
                ));
            }
            for (k, (x, y)) in ba.iter().zip(&bb).enumerate() {
                if x != y {
                    return Err(format!(
                        "at n={n} from {cfg:?} buffer argument {k} differs:\n{x:?}\n{y:?}"
                    ));
                }
            }
            for (name, f) in FIELDS {
                if polluted.iter().any(|(p, g)| p == name && g == f) {
                    continue;
                }
                if ca.get(name, *f) != cb.get(name, *f) {
                    return Err(format!(
                        "at n={n} from {cfg:?} config {name}.{f} differs: {:?} vs {:?}",
                        ca.get(name, *f),
                        cb.get(name, *f)
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Whether the interpreter can run `p` in reasonable time: an extreme split factor makes a correct
/// proc whose inner loop has a constant trip count of about 2^63.
fn runnable(p: &Proc) -> bool {
    let mut ok = true;
    weft_ir::visit::walk_block(&p.body, &mut |st| {
        if let weft_ir::StmtKind::For { lo, hi, .. } = &st.kind {
            if let (Some(l), Some(h)) = (lo.as_int_const(), hi.as_int_const()) {
                ok &= h.saturating_sub(l) <= 1 << 20;
            }
        }
    });
    ok
}

fn module(src: &str) -> Result<weft_ir::Module, String> {
    let m = weft_syntax::parse_module(&mut weft_syntax::SourceMap::new(), "h.weft", src)
        .map_err(|e| format!("does not parse: {e:?}\n{src}"))?;
    weft_check::check_module(&m).map_err(|e| format!("does not check: {e:?}\n{src}"))?;
    Ok(m)
}

#[test]
fn hazard_schedules_preserve_results() {
    let cases = env_num("WEFT_SCHED_CASES", 250);
    let seed = env_num("WEFT_SCHED_SEED", 0x5eed);
    let mut rng = StdRng::seed_from_u64(seed ^ 0x4a2a);
    let (mut accepted, mut attempted, mut too_long) = (0u64, 0u64, 0u64);
    let mut by_primitive: std::collections::BTreeMap<String, u64> = Default::default();
    let mut failures = Vec::new();
    for case in 0..cases {
        let instr = case % 4 == 3;
        let t0 = std::time::Instant::now();
        let src = random_hazard_proc(&mut rng, instr);
        let m = module(&src).unwrap_or_else(|e| panic!("case {case}: {e}"));
        let orig = m.proc("p").unwrap().clone();
        let mut s = Schedule::new(orig.clone());
        s.recheck = true;
        let procs = |name: &str| m.proc(name).cloned();
        let mut scope = weft_syntax::Scope::prelude();
        scope.add_module(&m);
        for k in 0..12 {
            attempted += 1;
            let st = random_step(&mut rng, &s, k, &mut scope);
            if std::env::var("WEFT_HAZARD_TRACE").is_ok() {
                eprintln!("case {case} step {k} {st} ({:?})", t0.elapsed());
            }
            let r =
                weft_sched::script::apply_step_in(&mut s, &st, &weft_syntax::std_memory, &procs);
            match r {
                Err(e) if e.message.contains("internal error") => {
                    failures.push(format!(
                        "case {case}: {st} produced a proc that does not check: {e}\n{src}"
                    ));
                    break;
                }
                Err(_) => continue,
                Ok(()) => {}
            }
            accepted += 1;
            *by_primitive.entry(st.primitive.clone()).or_default() += 1;
            if !runnable(s.proc()) {
                too_long += 1;
                break;
            }
            // An instruction's template implements its body exactly: nothing may be polluted.
            let polluted: Vec<(String, usize)> = if instr {
                Vec::new()
            } else {
                weft_sched::prims::call_eqv::relation(&orig, s.proc())
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(c, f)| (c.name.clone(), f))
                    .collect()
            };
            if let Err(e) = same_behaviour(&orig, s.proc(), &polluted) {
                failures.push(format!(
                    "case {case}: after {:?} ({st}): {e}\n{src}\n{}",
                    s.steps(),
                    weft_ir::print::proc_to_string(s.proc())
                ));
                break;
            }
        }
    }
    eprintln!(
        "{cases} hazard procs: {attempted} steps attempted, {accepted} accepted ({too_long} results too long to run); by primitive: {by_primitive:?}"
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    assert!(accepted > cases, "too few accepted steps ({accepted})");
}

/// A random module with a proc `f`, a schedule `g` of it, and a caller `h` of `g`.
fn random_link_module(rng: &mut StdRng) -> String {
    let callee_body = [
        "    x[0] += 1.0;\n",
        "    x[1] = x[0] * 2.0;\n",
        "    for i in 0..2 { x[i] += 1.0; }\n",
        "    x[0] += 1.0;\n    C.k = 3;\n",
        // Writes part of its argument: a schedule that stages the whole may read the rest
        // (twice as likely, so the default run meets it with the local buffer below).
        "    x[0] = 1.0;\n",
        "    x[0] = 1.0;\n",
    ]
    .choose(rng)
    .unwrap();
    let mut steps: Vec<&str> = Vec::new();
    for _ in 0..rng.gen_range(1..=2) {
        steps.push(
            [
                "stage_mem(\"x +=\", x[0:2], t);",
                "stage_mem(\"x =\", x[0:2], t);",
                "stage_mem(i, x[0:2], t);",
                "write_config(\"x +=\", C.k, 5);",
                "write_config(\"x =\", C.n, 1);",
                "write_config(i, C.k, 7);",
                "add_guard(\"x +=\", 1 > 0);",
            ]
            .choose(rng)
            .unwrap(),
        );
    }
    let call = [
        "    for i in par(0..n) { g(y[i:i + 2]); }\n",
        "    for i in par(0..n) { g(y[2 * i:2 * i + 2]); }\n",
        "    for i in 0..n { g(y[i:i + 2]); }\n",
        "    g(y[0:2]);\n",
        // A local buffer the callee may read before anything wrote it (twice as likely).
        "    alloc a: f32[2];\n    a[0] = 0.0;\n    g(a);\n    z[0] = a[0];\n",
        "    alloc a: f32[2];\n    a[0] = 0.0;\n    g(a);\n    z[0] = a[0];\n",
    ]
    .choose(rng)
    .unwrap();
    let after = [
        "    if C.k == 0 { z[0] = 2.0; }\n",
        "    if C.n == 0 { z[0] = 3.0; }\n",
        "    z[0] = 1.0;\n",
    ]
    .choose(rng)
    .unwrap();
    format!(
        "{CONFIG}proc f(x: [f32][2]) {{\n{callee_body}}}\nschedule g = f {{ {} }}\nproc h(n: size, y: f32[2 * n + 2], z: f32[1]) {{\n    C.k = 0;\n    C.n = 0;\n{call}{after}}}\n",
        steps.join(" ")
    )
}

#[test]
fn linked_schedules_preserve_their_callers_results() {
    let cases = env_num("WEFT_SCHED_CASES", 250) / 2;
    let seed = env_num("WEFT_SCHED_SEED", 0x5eed);
    let mut rng = StdRng::seed_from_u64(seed ^ 0x1e4c);
    let dir = tempfile::tempdir().unwrap();
    let (mut linked, mut refused) = (0u64, 0u64);
    let mut failures = Vec::new();
    for case in 0..cases {
        let src = random_link_module(&mut rng);
        let path = dir.path().join(format!("l{case}.weft"));
        std::fs::write(&path, &src).unwrap();
        let p = match weft::load(&path) {
            Ok(p) => p,
            Err(_) => {
                refused += 1;
                continue;
            }
        };
        let h: Arc<Proc> = p.module.proc("h").unwrap().clone();
        let Some(origin) = h.origin.clone() else {
            continue; // the schedule failed or nothing changed
        };
        linked += 1;
        // What linking produced must satisfy every rule a checked program does (definedness of
        // reads included, which the interpreter cannot see once error values are copied back).
        if let Err(d) = weft_check::check_procs(&p.module.procs) {
            failures.push(format!(
                "link case {case}: the linked program does not check: {d:?}\n{src}"
            ));
            continue;
        }
        let polluted: Vec<(String, usize)> = origin
            .polluted
            .iter()
            .map(|(c, f)| (c.name.clone(), *f))
            .collect();
        if let Err(e) = same_behaviour(&origin.parent, &h, &polluted) {
            failures.push(format!("link case {case}: {e}\n{src}"));
        }
    }
    eprintln!("{cases} link modules: {linked} linked, {refused} refused");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    assert!(linked > 0 && refused > 0);
}
