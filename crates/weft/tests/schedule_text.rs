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

/// Review holes (the focused check of a new call): a callee that writes a config field makes
/// its value unknown after the call, where the statement it replaced made it known, so the
/// whole proc is checked and a bounds error after the call is this step's.
#[test]
fn replacing_a_config_write_by_a_call_checks_what_reads_the_field_after() {
    let src = "config C { k: index }
proc setk() {
    C.k = 3;
}
proc p(x: f32[8] @ DRAM) {
    C.k = 3;
    x[C.k] = 1.0;
}
schedule q = p {
    replace(\"C.k =\", setk);
}
";
    let Err(e) = weft::load_str("c.weft", src) else {
        panic!("the step must be rejected");
    };
    let text = e.to_string();
    assert!(
        text.contains("replace: the call of 'setk' does not check")
            && text.contains("may be out of bounds"),
        "{text}"
    );
}

/// ... and a precondition the new call breaks is reported even where an earlier call of the
/// same instruction had a diagnostic with the same text (the old filter compared messages only,
/// and let `mm512_maskz_loadu_ps(17, ..)` through: its C shifted by a negative count).
#[test]
fn a_new_call_that_breaks_a_precondition_is_refused_whatever_else_failed() {
    let src = "import \"avx512\";
config C { k: size }
proc nop(a: [f32][1] @ DRAM) {
    pass;
}
proc p(x: f32[17] @ DRAM, y: f32[32] @ DRAM) {
    C.k = 16;
    alloc u: f32[16] @ AVX512;
    alloc t: f32[16] @ DRAM;
    y[0] = 0.0;
    mm512_maskz_loadu_ps(C.k, u[0:16], x[0:C.k]);
    for i in 0..16 {
        if i < 17 {
            t[i] = x[i];
        } else {
            t[i] = 0.0;
        }
    }
    mm512_storeu_ps(y[0:16], u[0:16]);
    for i in 0..16 {
        y[16 + i] = t[i];
    }
}
schedule q = p {
    insert_call(\"y = #0\", nop, y[0:1]);
    replace(\"for i #0\", mm512_maskz_loadu_ps);
}
";
    let Err(e) = weft::load_str("m.weft", src) else {
        panic!("the step must be rejected");
    };
    let text = e.to_string();
    assert!(
        text.contains("replace: the call of 'mm512_maskz_loadu_ps' does not check")
            && text.contains("N <= 16"),
        "{text}"
    );
}
