//! Text schedules: every primitive reachable from a `schedule` declaration, with its arguments
//! read against the proc as it stands at that step; rejected steps become diagnostics at the step.

use std::collections::HashMap;
use std::sync::Arc;
use weft_interp::{random_args, run, ArgValue, ConfigState};
use weft_ir::{Diagnostic, Proc};

fn apply(src: &str, name: &str) -> Result<(Arc<Proc>, Arc<Proc>), Diagnostic> {
    let m = weft_syntax::parse_module(&mut weft_syntax::SourceMap::new(), "s.weft", src)
        .unwrap_or_else(|e| panic!("does not parse: {e:?}"));
    weft_check::check_module(&m).unwrap_or_else(|e| panic!("does not check: {e:?}"));
    let decl = m.schedules.iter().find(|d| d.name == name).unwrap();
    let base = m.proc(&decl.base).unwrap().clone();
    let (p, _) =
        weft_sched::script::apply(decl, base.clone(), &weft_syntax::std_memory, |_, _| {})?;
    weft_check::check_procs(std::slice::from_ref(&p)).unwrap_or_else(|e| panic!("{e:?}"));
    Ok((base, p))
}

fn same(a: &Proc, b: &Proc, sizes: &[(&str, i64)]) {
    let sizes: HashMap<String, i64> = sizes.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    let mut x = random_args(a, &sizes, 3).unwrap();
    let mut y = x.clone();
    run(a, &mut x, &mut ConfigState::default()).unwrap();
    run(b, &mut y, &mut ConfigState::default()).unwrap();
    for (u, v) in x.iter().zip(&y) {
        if let (ArgValue::Buf(u), ArgValue::Buf(v)) = (u, v) {
            assert_eq!(u.data, v.data);
        }
    }
}

const BLUR: &str = "proc blur(n: size, x: i32[n + 2] @ DRAM, y: i32[n] @ DRAM) {
    for i in 0..n {
        alloc t: i32[3] @ DRAM_STACK;
        for k in 0..3 {
            t[k] = x[i + k];
        }
        y[i] = t[0] + t[1] + t[2];
    }
}
";

#[test]
fn buffer_and_guard_steps_in_text() {
    let src = format!(
        "{BLUR}
schedule a = blur {{
    lift_alloc(\"alloc t\");
    specialize(i, n > 4);
    split(\"for i #1\", 4, io, ii, guard);
    set_memory(\"alloc t\", DRAM);
    unroll(k);
}}
"
    );
    let (base, p) = apply(&src, "a").unwrap();
    let text = weft_ir::print::proc_to_string(&p);
    assert!(
        text.contains("alloc t: i32[3] @ DRAM;\n    if n > 4 {"),
        "{text}"
    );
    for n in [1, 4, 5, 11] {
        same(&base, &p, &[("n", n)]);
    }
}

#[test]
fn lifting_an_allocation_whose_size_depends_on_the_index_is_rejected_at_the_step() {
    let src = "proc p(n: size, y: i32[n] @ DRAM) {
    for i in 0..n {
        alloc t: i32[i + 1] @ DRAM;
        t[i] = 3;
        y[i] = t[i];
    }
}
schedule a = p {
    lift_alloc(\"alloc t\");
}
";
    let d = apply(src, "a").unwrap_err();
    assert_eq!(d.rule, "schedule");
    assert!(d.message.starts_with("lift_alloc:"), "{}", d.message);
    assert!(
        d.message.contains("depends on the loop index 'i'"),
        "{}",
        d.message
    );
}

#[test]
fn argument_errors_name_the_argument() {
    let bad = |steps: &str| {
        let src = format!("{BLUR}\nschedule a = blur {{\n    {steps}\n}}\n");
        apply(&src, "a").unwrap_err().message
    };
    assert!(bad("split(i, four, io, ii);").contains("expected a number, found `four`"));
    assert!(bad("split(i, 4, io, ii, sideways);").contains("unknown tail strategy `sideways`"));
    assert!(bad("cut(i, q + 1);").contains("`q` is not a control argument"));
    assert!(bad("set_precision(\"alloc t\", f128);").contains("unknown data type `f128`"));
    assert!(bad("set_memory(\"alloc t\", SRAM);").contains("unknown memory `SRAM`"));
    assert!(bad("unroll(z);").contains("no statement matches 'for z'"));
    assert!(bad("reorder_loops(i, k);").contains("takes 1 argument, got 2"));
}
