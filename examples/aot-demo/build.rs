//! Compile the crate's weft kernels ahead of time: checked, emitted as C, compiled and linked.
fn main() {
    weft::build::Build::new()
        .file("kernels/saxpy.weft")
        .file("kernels/double/saxpy.weft")
        .file("kernels/pipes/pyramid.weft")
        .compile("kernels")
        .unwrap_or_else(|e| panic!("{e}"));
}
