#!/usr/bin/env bash
# Installs the peers the benchmarks compare against into a virtual environment (never vendored):
# numpy (its bundled OpenBLAS), MKL (`mkl`, its libmkl_rt) and BLIS (`blis`) for the SGEMM
# benchmark, which loads their shared libraries, oneDNN (`onednn-cpu-gomp`, its libdnnl on GNU
# OpenMP) for the convolution benchmark, and Halide 21 (its Python bindings and JIT,
# for the pipeline benchmarks). Usage: bash bench/peers/setup.sh [VENV_DIR] (default .venv-peers).
set -euo pipefail
venv="${1:-.venv-peers}"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --upgrade pip
"$venv/bin/pip" install --quiet "numpy>=2,<3" "halide==21.0.0" "mkl==2026.2.0" "blis==1.3.4" "onednn-cpu-gomp==2023.2.0"
"$venv/bin/python" -c "import numpy; print('numpy', numpy.__version__)"
"$venv/bin/python" -c "import halide; print('halide', halide.__version__ if hasattr(halide, '__version__') else '21')"
