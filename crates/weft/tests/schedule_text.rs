//! Text schedules as a user writes them, loaded through the facade: procs a step adds to the
//! module.

use std::collections::HashMap;
use weft_interp::{random_args, run, ArgValue, ConfigState};
use weft_ir::Proc;

/// `a` and `b` leave the same buffers for size `n`.
fn same(a: &Proc, b: &Proc, n: i64) {
    let sizes: HashMap<String, i64> = [("n".to_string(), n)].into();
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

#[test]
fn rename_keeps_a_callable_version_under_the_new_name() {
    let src = "proc f(n: size, x: f32[n] @ DRAM) {
    for i in 0..n {
        x[i] = 1.0;
    }
}
schedule g = f {
    split(i, 4, io, ii, cut);
    rename(f_split);
    unroll(ii);
}
proc h(n: size, x: f32[n] @ DRAM) {
    g(n, x);
}
";
    let loaded = weft::load_str("r.weft", src).unwrap();
    let snap = loaded
        .module
        .proc("f_split")
        .expect("the renamed version joins the module");
    let g = loaded.module.proc("g").unwrap();
    let snap_text = weft_ir::print::proc_to_string(snap);
    assert!(
        snap_text.starts_with("proc f_split(") && snap_text.contains("for ii in 0..4"),
        "{snap_text}"
    );
    assert!(!weft_ir::print::proc_to_string(g).contains("for ii in 0..4"));
    same(loaded.module.proc("f").unwrap(), snap, 7);
    // A name in use is refused.
    let dup = src.replace("rename(f_split)", "rename(h)");
    let Err(e) = weft::load_str("r.weft", &dup) else {
        panic!("a rename to a used name is accepted");
    };
    let e = e.to_string();
    assert!(e.contains("a proc named `h` already exists"), "{e}");
}
