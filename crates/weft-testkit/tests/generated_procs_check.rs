//! Every generated proc (and every helper it calls) must pass the checker: the generator builds
//! indices that are in bounds by construction, so a rejection is a generator or checker bug.

use rand::rngs::StdRng;
use rand::SeedableRng;
use weft_testkit::random_proc;

#[test]
fn generated_procs_pass_the_checker() {
    let dram = weft_syntax::std_memory("DRAM").expect("the prelude declares DRAM");
    let mut failures = Vec::new();
    for seed in 0..300u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let g = random_proc(&mut rng, &dram);
        let mut all = g.helper_procs.clone();
        all.push(g.proc.clone());
        for p in &all {
            if let Err(diags) = weft_check::check_proc(p) {
                let msgs: Vec<String> = diags.iter().map(|d| format!("{d:?}")).collect();
                failures.push(format!(
                    "seed {seed}: `{}` rejected:\n{}\n{}",
                    p.name,
                    p,
                    msgs.join("\n")
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} generated procs rejected; first:\n{}",
        failures.len(),
        failures[0]
    );
}

#[test]
fn generator_is_deterministic_per_seed() {
    let dram = weft_syntax::std_memory("DRAM").expect("the prelude declares DRAM");
    for seed in 0..20u64 {
        let a = random_proc(&mut StdRng::seed_from_u64(seed), &dram);
        let b = random_proc(&mut StdRng::seed_from_u64(seed), &dram);
        assert_eq!(a.proc.to_string(), b.proc.to_string());
        assert_eq!(a.sizes, b.sizes);
    }
}

#[test]
fn sizes_cover_every_size_argument_and_are_positive() {
    let dram = weft_syntax::std_memory("DRAM").expect("the prelude declares DRAM");
    let mut saw_one = false;
    for seed in 0..100u64 {
        let g = random_proc(&mut StdRng::seed_from_u64(seed), &dram);
        for name in g.size_names() {
            let v = g.sizes[&name];
            assert!(v >= 1, "size {name} = {v}");
            saw_one |= v == 1;
        }
    }
    assert!(saw_one, "size 1 is an edge case the generator must produce");
}

/// The generator keeps producing every construct it is meant to cover (a generator that
/// silently stopped emitting, say, calls would leave the differential test toothless).
#[test]
fn generated_procs_cover_the_language() {
    let dram = weft_syntax::std_memory("DRAM").expect("the prelude declares DRAM");
    let features = [
        "alloc ",
        "@ DRAM_STACK",
        "free ",
        "let ",
        "if ",
        "} else {",
        "for ",
        "in 1..",
        " - 1 {",
        "+=",
        "select(",
        "sqrt(abs(",
        "floor(",
        "ceil(",
        "min(",
        "max(",
        " % ",
        " / ",
        "stride(",
        "not ",
        "f32(",
        "bool(",
        "_h0(",
        "_h0_h0(",
        "[f64][m]",
    ];
    let mut counts = vec![0usize; features.len()];
    let mut reused = 0;
    for seed in 0..300u64 {
        let g = random_proc(&mut StdRng::seed_from_u64(seed), &dram);
        let mut text = g.proc.to_string();
        for h in &g.helper_procs {
            text.push_str(&h.to_string());
        }
        for (f, c) in features.iter().zip(counts.iter_mut()) {
            *c += usize::from(text.contains(f));
        }
        // Calls in the main proc only: `name_h0(` followed by an argument, not a declaration.
        let call = format!("{}_h0(", g.proc.name);
        let calls = g.proc.to_string().matches(&call).count();
        reused += usize::from(calls > 1);
    }
    for (f, c) in features.iter().zip(&counts) {
        assert!(*c >= 3, "only {c} of 300 procs contain `{f}`");
    }
    assert!(reused > 0, "no helper was ever called twice");
}
