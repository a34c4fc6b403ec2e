use weft::jit::{Arg, BufArg, Jit};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Parse, check (bounds proved for every n) and apply schedules; `weft::load(path)` reads a file.
    let program = weft::load_str(
        "axpy.weft",
        "proc axpy(n: size, a: f32, x: f32[n], y: f32[n]) {
             for i in 0..n {
                 y[i] += a * x[i];
             }
         }",
    )?;
    // Compile to C and native code (cached under WEFT_CACHE_DIR or ~/.cache/weft), load it.
    let module = Jit::new()?.compile(&program.module.procs)?;
    let axpy = module.kernel("axpy")?;

    let x = vec![1.0f32, 2.0, 3.0];
    let mut y = vec![10.0f32; 3];
    axpy.call(&mut [
        Arg::Int(3),
        Arg::Buf(BufArg::scalar(&2.0f32)),
        Arg::Buf(BufArg::from_slice(&x, &[3])),
        Arg::Buf(BufArg::new(&mut y, &[3])),
    ])?;
    assert_eq!(y, [12.0, 14.0, 16.0]);

    // ndarray views (strided ones included) are buffers too; misuse is an error, never UB.
    let mut grid = weft::ndarray::Array2::<f32>::zeros((3, 2));
    axpy.call(&mut [
        Arg::Int(3),
        Arg::Buf(BufArg::scalar(&1.0f32)),
        Arg::Buf(BufArg::from_slice(&x, &[3])),
        Arg::Buf(grid.column_mut(1).into()), // `y` is dense: a column is refused
    ])
    .unwrap_err();
    Ok(())
}
