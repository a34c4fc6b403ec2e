//! Calls weft kernels that `build.rs` compiled ahead of time, through the same checked call API
//! as JIT kernels.

include!(concat!(env!("OUT_DIR"), "/kernels.rs"));

use weft::jit::{Arg, BufArg};

/// `y = a * x + y` with the AOT kernel. Two files export a `saxpy`, so it is named by its file's
/// namespace: `kernels::saxpy::saxpy` (`kernels/saxpy.weft`), `kernels::saxpy2::saxpy`
/// (`kernels/double/saxpy.weft`).
fn saxpy(a: f32, x: &[f32], y: &mut [f32]) -> Result<(), weft::jit::JitError> {
    let n = x.len();
    kernels::saxpy::saxpy().call(&mut [
        Arg::Int(n as i64),
        Arg::Buf(BufArg::scalar(&a)),
        Arg::Buf(BufArg::from_slice(x, &[n])),
        Arg::Buf(BufArg::new(y, &[n])),
    ])
}

fn main() {
    let x: Vec<f32> = (0..8).map(|i| i as f32).collect();
    let mut y = vec![1.0f32; 8];
    saxpy(2.0, &x, &mut y).expect("saxpy");
    println!("saxpy: {y:?}");
    // A kernel named `write`: with unprefixed symbols it would replace the C library's `write`,
    // and the `println!` below would never reach the terminal.
    let mut ones = vec![0f64; 3];
    kernels::write()
        .call(&mut [Arg::Int(3), Arg::Buf(BufArg::new(&mut ones, &[3]))])
        .expect("write");
    println!("write: {ones:?}");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pipeline compiled ahead of time, its derived arguments computed by the bindings,
    /// equals the pipeline interpreter on every point.
    #[test]
    fn aot_pipeline_matches_the_interpreter() {
        let (w, h) = (37usize, 5usize);
        let input: Vec<f32> = (0..w * h).map(|i| (i % 7) as f32 * 0.5 - 1.0).collect();
        let mut out = vec![0f32; w * h];
        let mut args = vec![
            Arg::Int(0),
            Arg::Int(w as i64),
            Arg::Int(0),
            Arg::Int(h as i64),
            Arg::Buf(BufArg::from_slice(&input, &[h, w])),
            Arg::Int(0),
            Arg::Int(w as i64),
            Arg::Int(0),
            Arg::Int(h as i64),
            Arg::Buf(BufArg::new(&mut out, &[h, w])),
        ];
        kernels::pyramid::pyramid_root_push_derived(&mut args).unwrap();
        assert!(args.len() > 10, "the pyramid has derived arguments");
        kernels::pyramid_root().call(&mut args).unwrap();
        let program = weft::load(std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/kernels/pipes/pyramid.weft"
        )))
        .unwrap();
        let lp = weft::pipeline::lower(&program, "pyramid_root").unwrap();
        let r = weft::pipeline::Realization {
            window: vec![(0, w as i64), (0, h as i64)],
            outputs: vec![("out".into(), weft::hostbuf::HostData::F32(out))],
            inputs: vec![weft::pipeline::InputData {
                region: vec![(0, w as i64), (0, h as i64)],
                data: weft::hostbuf::HostData::F32(input),
            }],
            time: std::time::Duration::ZERO,
        };
        let n = weft::pipeline::check_against_reference(&lp, &[], &r).unwrap();
        assert_eq!(n, w * h);
    }

    #[test]
    fn saxpy_matches_rust() {
        let x: Vec<f32> = (0..37).map(|i| i as f32 * 0.5 - 3.0).collect();
        let mut y: Vec<f32> = (0..37).map(|i| 1.0 / (i as f32 + 1.0)).collect();
        let want: Vec<f32> = x.iter().zip(&y).map(|(x, y)| 1.5 * x + y).collect();
        saxpy(1.5, &x, &mut y).unwrap();
        assert_eq!(y, want);
    }

    #[test]
    fn transpose_of_a_strided_view() {
        // A window parameter accepts a transposed ndarray view.
        let src = weft::ndarray::Array2::from_shape_fn((3, 5), |(i, j)| (i * 5 + j) as f32);
        let view = src.t();
        let mut dst = vec![0f32; 15];
        kernels::transpose()
            .call(&mut [
                Arg::Int(5),
                Arg::Int(3),
                Arg::Buf(view.into()),
                Arg::Buf(BufArg::new(&mut dst, &[3, 5])),
            ])
            .unwrap();
        assert_eq!(dst, src.iter().copied().collect::<Vec<f32>>());
    }

    #[test]
    fn misuse_is_an_error() {
        let x = vec![0f32; 4];
        let mut y = vec![0f32; 3];
        // Shapes disagree with the size argument.
        let r = kernels::saxpy::saxpy().call(&mut [
            Arg::Int(4),
            Arg::Buf(BufArg::scalar(&1.0f32)),
            Arg::Buf(BufArg::from_slice(&x, &[4])),
            Arg::Buf(BufArg::new(&mut y, &[3])),
        ]);
        assert!(r.is_err());
        // Too few arguments.
        assert!(kernels::saxpy::saxpy().call(&mut [Arg::Int(4)]).is_err());
    }

    #[test]
    fn files_with_one_stem_and_one_proc_name_link_side_by_side() {
        let x = vec![1.0f64, 2.0];
        let mut y = vec![0.5f64, 0.5];
        kernels::saxpy2::saxpy()
            .call(&mut [
                Arg::Int(2),
                Arg::Buf(BufArg::scalar(&3.0f64)),
                Arg::Buf(BufArg::from_slice(&x, &[2])),
                Arg::Buf(BufArg::new(&mut y, &[2])),
            ])
            .unwrap();
        assert_eq!(y, vec![3.5, 6.5]);
        assert_eq!(kernels::saxpy2::saxpy().info().symbol, "saxpy2_saxpy_entry");
        assert_eq!(kernels::saxpy::saxpy().info().symbol, "saxpy_saxpy_entry");
    }

    #[test]
    fn a_kernel_named_write_leaves_the_c_library_alone() {
        let mut x = vec![0f64; 4];
        kernels::write()
            .call(&mut [Arg::Int(4), Arg::Buf(BufArg::new(&mut x, &[4]))])
            .unwrap();
        assert_eq!(x, vec![1.0; 4]);
        assert_eq!(
            kernels::saxpy2::write().info().direct_symbol,
            "saxpy2_write"
        );
        // The test harness prints through the C library's `write`; so does this.
        println!("still printing");
    }
}
