
/// A schedule whose analysis warmed its solvers in the thread's context, then used inside
/// `z3::with_z3_config` (another context), and the other way round.
#[test]
fn schedule_across_z3_contexts() {
    let src = "proc rows(m: size, n: size, a: f32[m, n] @ DRAM, y: f32[m] @ DRAM) {
    for i in 0..m {
        y[i] = 0.0;
        for j in 0..n {
            y[i] += a[i, j];
        }
    }
}";
    let mut s = sched(src);
    let j = s.find("for j").unwrap();
    s.split(&j, 4, "jo", "ji", weft_sched::Tail::Guard).unwrap();
    eprintln!("warmed outside");
    let r = z3::with_z3_config(&z3::Config::new(), || {
        let i = s.find("for i").unwrap();
        s.parallelize(&i).map(|_| ())
    });
    eprintln!("inside: {r:?}");
}

#[test]
fn schedule_made_inside_z3_context_used_after() {
    let src = "proc rows(m: size, n: size, a: f32[m, n] @ DRAM, y: f32[m] @ DRAM) {
    for i in 0..m {
        y[i] = 0.0;
        for j in 0..n {
            y[i] += a[i, j];
        }
    }
}";
    let mut s = z3::with_z3_config(&z3::Config::new(), || {
        let mut s = sched(src);
        let j = s.find("for j").unwrap();
        s.split(&j, 4, "jo", "ji", weft_sched::Tail::Guard).unwrap();
        s
    });
    eprintln!("warmed inside");
    let i = s.find("for i").unwrap();
    let r = s.parallelize(&i).map(|_| ());
    eprintln!("after: {r:?}");
}
