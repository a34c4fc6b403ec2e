use rand::SeedableRng;
fn main() {
    let dram = weft_syntax::std_memory("DRAM").unwrap();
    for seed in 0..3u64 {
        let g = weft_testkit::random_proc(&mut rand::rngs::StdRng::seed_from_u64(seed), &dram);
        for h in &g.helper_procs {
            println!("{h}");
        }
        println!("{}\n{:?}\n", g.proc, g.sizes);
    }
}
