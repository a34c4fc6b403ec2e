//! `parse(print(module))` gives back procs alpha-equivalent to the generated ones.

use rand::rngs::StdRng;
use rand::SeedableRng;
use weft_ir::alpha::alpha_eq_proc;
use weft_ir::print::module_to_string;
use weft_ir::Module;
use weft_testkit::random_proc;

#[test]
fn generated_procs_round_trip_through_text() {
    let dram = weft_syntax::std_memory("DRAM").expect("the prelude declares DRAM");
    for seed in 0..300u64 {
        let mut rng = StdRng::seed_from_u64(1_000_000 + seed);
        let g = random_proc(&mut rng, &dram);
        let mut procs = g.helper_procs.clone();
        procs.push(g.proc.clone());
        let module = Module {
            procs: procs.clone(),
            ..Module::default()
        };
        let text = module_to_string(&module);
        let mut sources = weft_syntax::SourceMap::new();
        let parsed = match weft_syntax::parse_module(&mut sources, "gen.weft", &text) {
            Ok(m) => m,
            Err(diags) => {
                let msgs: Vec<String> = diags.iter().map(|d| sources.render(d)).collect();
                panic!(
                    "seed {seed}: printed module does not parse:\n{text}\n{}",
                    msgs.join("\n")
                );
            }
        };
        assert_eq!(parsed.procs.len(), procs.len(), "seed {seed}:\n{text}");
        for (orig, back) in procs.iter().zip(&parsed.procs) {
            assert!(
                alpha_eq_proc(orig, back),
                "seed {seed}: `{}` changed in the round trip.\nprinted:\n{text}\nreprinted:\n{}",
                orig.name,
                back
            );
        }
    }
}
