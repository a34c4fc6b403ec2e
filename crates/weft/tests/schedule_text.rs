//! Text schedules as a user writes them, loaded through the facade: procs a step adds to the
//! module.

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
    // It is a version of `f` by the schedule's records, so `call_eqv` can switch calls to it.
    let mut p = snap.parent();
    while let Some(q) = p {
        if q.name == "f" {
            break;
        }
        p = q.parent();
    }
    assert!(p.is_some(), "the snapshot's provenance does not reach `f`");
    // A name in use is refused.
    for other in ["DRAM", "C"] {
        let clash = format!(
            "config C {{ k: index }}\n{}",
            src.replace("rename(f_split)", &format!("rename({other})"))
        );
        let Err(e) = weft::load_str("r.weft", &clash) else {
            panic!("a rename to the memory or config `{other}` is accepted");
        };
        assert!(e.to_string().contains("which names another item"), "{e}");
    }
    let dup = src.replace("rename(f_split)", "rename(h)");
    let Err(e) = weft::load_str("r.weft", &dup) else {
        panic!("a rename to a used name is accepted");
    };
    let e = e.to_string();
    assert!(e.contains("a proc named `h` already exists"), "{e}");
}
