#!/usr/bin/env bash
# Installs the peers the benchmarks compare against into a virtual environment (never vendored):
# numpy (its bundled OpenBLAS), MKL (`mkl`, its libmkl_rt) and BLIS (`blis`) for the SGEMM
# benchmark, which loads their shared libraries, oneDNN (`onednn-cpu-gomp`, its libdnnl on GNU
# OpenMP) for the convolution benchmark, Exo (`exo-lang`, whose compiler builds Exo's x86 SGEMM
# and convolution, bench/peers/exo/*.py, into shared libraries here) for both, and Halide 21 (its Python bindings and JIT,
# for the pipeline benchmarks). Usage: bash bench/peers/setup.sh [VENV_DIR] (default .venv-peers).
set -euo pipefail
venv="${1:-.venv-peers}"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --upgrade pip
"$venv/bin/pip" install --quiet "numpy>=2,<3" "halide==21.0.0" "mkl==2026.2.0" "blis==1.3.4" "onednn-cpu-gomp==2023.2.0" "exo-lang==1.0.0"
"$venv/bin/python" -c "import numpy; print('numpy', numpy.__version__)"
"$venv/bin/python" -c "import halide; print('halide', halide.__version__ if hasattr(halide, '__version__') else '21')"
# Exo's SGEMM and convolution, compiled by Exo and the system C compiler as Exo's own build does.
# Both are AVX-512 code: on a CPU without it they are not built (and the benchmarks leave Exo out).
exo_out="$venv/exo-build"
mkdir -p "$exo_out"
if ! grep -qw avx512f /proc/cpuinfo; then
    rm -f "$exo_out"/libexo_*.so
    echo "exo: not built (Exo's x86 kernels use AVX-512, which this CPU lacks)"
    exit 0
fi
for kernel in sgemm conv; do
    "$venv/bin/exocc" -o "$exo_out" --stem "exo_$kernel" "$(dirname "$0")/exo/$kernel.py"
    cc -O3 -march=native -fPIC -shared -o "$exo_out/libexo_$kernel.so" "$exo_out/exo_$kernel.c"
    echo "exo $kernel: $exo_out/libexo_$kernel.so"
done
