# Exo's x86 SGEMM (exo-lang's apps/x86/sgemm) rewritten for the exo-lang 1.0.0 package, as a
# peer for weft's SGEMM benchmark: bench/peers/setup.sh-style build is
# `exocc -o OUT --stem exo_sgemm sgemm.py` then `cc -O3 -march=native -fPIC -shared`.
# It exports `sgemm_exo(ctxt, M, N, K, A, B, C)`: C[M, N] += A[M, K] * B[K, N], row-major f32.
#
# It keeps the app's schedule decisions: the same algorithm proc (k, i, j loop nest), L1
# blocking of 264 (= 6 x 44) rows, 64 columns and 512 of K, split into the app's 8 full/tail
# cases; a 6 x 64 AVX-512 register-blocked micro-kernel (C tile held in 24 zmm registers,
# A broadcast with _mm512_set1_ps hoisted out of the 4-vector loop, B loaded with
# _mm512_loadu_ps, _mm512_fmadd_ps) with 1..5-row bottom-panel kernels, a 6-row right-panel
# kernel for N % 64 columns (full vectors plus one masked vector using _mm512_mask*/maskz
# intrinsics, specialized on N / 16 = 0..3), the bottom-right corner left scalar as in the app;
# packing of A (264 x 512) and B (512 x 64) into static buffers for the full blocks, and of B
# (padded to 512 x 64) for every other case.
#
# What differs from the app, and why: 1.0.0 lacks `bound_and_guard`, `stage_window`,
# `bound_alloc` and `apply_to_block`, and its stdlib `vectorize` has another signature.
# Here they are built from 1.0.0 primitives:
#  - bound_and_guard (for x in seq(0, e) -> for x in seq(0, 16): if x < e) = divide_loop with a
#    guarded tail, rewrite_expr of the (provably zero) outer index to 0, remove_loop of the
#    0-or-1 trip outer loop; remove_loop leaves an `if e > 0` guard around it, which the
#    masked intrinsics need anyway (their mask count must be >= 1).
#  - stage_window = stage_mem of the call's window argument + set_memory(DRAM_STATIC);
#    bound_alloc = resize_dim to the constant block size (64 columns / 512 of K).
#  - apply_to_block = try an operation (hoist_stmt) on each statement of a block.
#  - the micro-kernel is vectorized with divide_loop/bind_expr/expand_dim/replace instead of
#    the newer stdlib `vectorize`; the instructions selected are the same.
#  - the right-panel kernel stages C as a [6, N/16, 16] vector array plus a [6, 16] masked
#    tail vector (stage_mem of the whole tile rather than the app's per-element staging and
#    lifting) and runs the tail's k loop separately rather than fused with the full vectors'.
#  - case 1 packs A once per (K block, M block), outside the 64-column loop, and case 2 packs
#    its B block once per K block, outside the M-block loop (the app's intent with
#    autofission; here the copy loop is fissioned out and the redundant loop removed).
from __future__ import annotations

from exo import *
from exo.libs.memories import DRAM_STATIC
from exo.platforms.x86 import *
from exo.stdlib.scheduling import *
from exo.stdlib.stdlib import attempt, expr_to_string, hoist_stmt
import exo.API_cursors as cursors


@proc
def SGEMM(M: size, N: size, K: size, A: f32[M, K], B: f32[K, N], C: f32[M, N]):
    assert M >= 1
    assert N >= 1
    assert K >= 1
    assert stride(A, 1) == 1
    assert stride(B, 1) == 1
    assert stride(C, 1) == 1
    for k in seq(0, K):
        for i in seq(0, M):
            for j in seq(0, N):
                C[i, j] += A[i, k] * B[k, j]


VEC_W = 16
M_REG_BLK = 6
N_REG_BLK = 4 * VEC_W
M_L1_BLK = M_REG_BLK * 44
N_L1_BLK = N_REG_BLK * 1
K_L1_BLK = 512
AVX512F = [mm512_loadu_ps, mm512_storeu_ps, mm512_fmadd_ps, mm512_set1_ps]
AVX512F_MASKED = [mm512_maskz_loadu_ps, mm512_mask_storeu_ps, mm512_mask_fmadd_ps,
                  mm512_mask_set1_ps]


# ---- helpers that exo-lang 1.0.0 does not ship ------------------------------------------------

def apply_to_block(p, block, op):
    """Try `op` on each statement of `block`, keeping the ones that succeed."""
    for s in list(block):
        p = attempt(op)(p, s)
    return p


def _reads_of(loop, name):
    """Cursors to every read of variable `name` inside `loop`'s body."""
    found = []

    def expr(c):
        if isinstance(c, cursors.ReadCursor):
            if c.name() == name:
                found.append(c)
            for i in c.idx():
                expr(i)
        elif isinstance(c, cursors.BinaryOpCursor):
            expr(c.lhs())
            expr(c.rhs())
        elif isinstance(c, cursors.UnaryMinusCursor):
            expr(c.arg())

    def stmt(s):
        if isinstance(s, cursors.ForCursor):
            expr(s.lo())
            expr(s.hi())
            for b in s.body():
                stmt(b)
        elif isinstance(s, cursors.IfCursor):
            expr(s.cond())
            for b in s.body():
                stmt(b)
        elif isinstance(s, (cursors.AssignCursor, cursors.ReduceCursor)):
            for i in s.idx():
                expr(i)
            expr(s.rhs())

    for b in loop.body():
        stmt(b)
    return found


def bound_and_guard(p, loop):
    """for x in seq(0, e): s  (e <= 16)  ->  if e > 0: for x in seq(0, 16): if x < e: s"""
    loop = p.forward(loop)
    e = expr_to_string(loop.hi())
    name = loop.name()
    p = simplify(divide_loop(p, loop, VEC_W, [name + "_o", name], tail="guard"))
    outer = p.find_loop(name + "_o")
    for r in _reads_of(outer, outer.name()):  # the outer loop runs at most once: index is 0
        p = rewrite_expr(p, r, "0")
    p = simplify(p)
    outer = p.find_loop(name + "_o")
    inner = outer.body()[0]
    p = remove_loop(p, outer, unsafe_disable_check=True)  # sound: 0 or 1 iterations
    guard = p.forward(inner).parent()
    if isinstance(guard, cursors.IfCursor) and "+ 15) / 16 > 0" in str(guard.cond()._impl._node):
        p = rewrite_expr(p, guard.cond(), f"{e} > 0")
    return p


def stage_window(p, call, arg_name, new_name, mem):
    """Copy the window passed as `arg_name` to `call` into a new buffer in `mem`."""
    call = p.forward(call)
    names = [a.name() for a in call.subproc().args()]
    win = str(call.args()[names.index(arg_name)]._impl._node)
    p = stage_mem(p, call, win, new_name)
    return simplify(set_memory(p, p.find(f"{new_name} : _"), mem))


def vec_loop(p, loop, names):
    return simplify(divide_loop(p, loop, VEC_W, names, perfect=True))


def stage_input(p, expr, new_buf, n_lifts=1):
    """Bind a scalar operand into a 16-lane AVX-512 register filled by its own loop."""
    p = bind_expr(p, expr, new_buf)
    p = expand_dim(p, new_buf, VEC_W, "ji")
    p = lift_alloc(p, new_buf, n_lifts=n_lifts)
    p = set_memory(p, new_buf, AVX512)
    return fission(p, p.find(f"{new_buf} = _").after(), n_lifts=n_lifts)


def select(p, instrs):
    for ins in instrs:
        p = replace_all(p, ins)
    return p


SGEMM_WINDOW = rename(SGEMM, "SGEMM_WINDOW")
for _buf in "ABC":
    SGEMM_WINDOW = set_window(SGEMM_WINDOW, _buf, True)


# ---- micro-kernels: M x 64 for M = 1..6 ------------------------------------------------------

basic_kernel_Mx4 = {}
sgemm_kernel_avx512_Mx4 = {}


def make_kernels(m):
    p = rename(SGEMM_WINDOW, f"basic_kernel_{m}x4")
    basic_kernel_Mx4[m] = p = simplify(p.partial_eval(m, N_REG_BLK))
    p = rename(p, f"sgemm_kernel_avx512_{m}x4")
    p = stage_mem(p, p.find_loop("k"), f"C[0:{m}, 0:{N_REG_BLK}]", "C_reg")
    c_reg = p.find("C_reg : _")
    p = divide_dim(p, c_reg, 1, VEC_W)
    p = set_memory(p, c_reg, AVX512)
    p = vec_loop(p, p.find_loop("i1"), ["i1o", "i1i"])
    p = vec_loop(p, p.find_loop("j"), ["jo", "ji"])
    p = vec_loop(p, p.find_loop("i1"), ["i1o", "i1i"])
    p = stage_input(p, p.find("A[_]"), "a_vec")
    p = stage_input(p, p.find("B[_]"), "b_vec")
    p = select(p, AVX512F)
    p = apply_to_block(p, p.find_loop("jo").body(), hoist_stmt)
    sgemm_kernel_avx512_Mx4[m] = simplify(p)


for _m in range(1, M_REG_BLK + 1):
    make_kernels(_m)


# ---- bottom panel: M < 6 rows x 64 -----------------------------------------------------------

bottom_panel_kernel = rename(SGEMM_WINDOW, "bottom_panel_kernel")
bottom_panel_kernel = bottom_panel_kernel.partial_eval(N=N_REG_BLK)
bottom_panel_kernel = simplify(bottom_panel_kernel.add_assertion("M < 6"))


def make_bottom_panel_kernel_scheduled(p=bottom_panel_kernel):
    p = rename(p, "bottom_panel_kernel_scheduled")
    p = simplify(specialize(p, p.body()[0], [f"M == {i}" for i in range(1, M_REG_BLK)]))
    for m in range(1, M_REG_BLK):
        p = replace_all(p, basic_kernel_Mx4[m])
        p = call_eqv(p, f"basic_kernel_{m}x4(_)", sgemm_kernel_avx512_Mx4[m])
    return simplify(p)


bottom_panel_kernel_scheduled = make_bottom_panel_kernel_scheduled()


# ---- right panel: 6 rows x N < 64 columns ----------------------------------------------------

right_panel_kernel = rename(SGEMM_WINDOW, "right_panel_kernel")
right_panel_kernel = right_panel_kernel.partial_eval(M=M_REG_BLK)
right_panel_kernel = simplify(right_panel_kernel.add_assertion("N / 16 < 4"))


def make_right_panel_kernel_opt(p=right_panel_kernel):
    p = rename(p, "right_panel_kernel_opt")
    p = divide_loop(p, "j", VEC_W, ["jo", "ji"], tail="cut")
    p = bound_and_guard(p, p.find_loop("ji #1"))
    p = fission(p, p.find("for jo in _: _").after(), n_lifts=2)
    p = simplify(lift_if(p, p.find("if _: _"), n_lifts=2))
    # full vectors: C tile in a [6, N / 16, 16] register array
    p = stage_mem(p, p.find_loop("k #0"), "C[0:6, 0:16 * (N / 16)]", "C_reg")
    # masked tail vector: C[:, 16 * (N / 16):N] in a [6, 16] register array
    p = stage_mem(p, p.find_loop("k #1"), "C[0:6, 16 * (N / 16):N]", "C_tail")
    p = simplify(p)
    c = p.find("C_reg : _")
    p = divide_dim(p, c, 1, VEC_W)
    p = set_memory(p, c, AVX512)
    p = vec_loop(p, p.find_loop("i1 #0"), ["i1o", "i1i"])
    p = vec_loop(p, p.find_loop("i1 #0"), ["i1o", "i1i"])
    c = p.find("C_tail : _")
    p = resize_dim(p, c, 1, VEC_W, 0)
    p = set_memory(p, c, AVX512)
    load, store = p.find_loop("i1 #0"), p.find_loop("i1 #1")
    p = bound_and_guard(p, load)
    p = bound_and_guard(p, store)
    p = rewrite_expr(p, p.find("C_tail[_] += _").idx()[1], "ji")
    p = simplify(p)
    p = stage_input(p, p.find("A[_]"), "A_reg")
    p = stage_input(p, p.find("B[_]"), "B_reg")
    p = stage_input(p, p.find("A[_] #1"), "A_reg2", n_lifts=2)
    p = stage_input(p, p.find("B[_] #1"), "B_reg2", n_lifts=2)
    p = select(p, AVX512F + AVX512F_MASKED)
    p = apply_to_block(p, p.find_loop("jo").body(), hoist_stmt)
    return simplify(p)


right_panel_kernel_opt = make_right_panel_kernel_opt()


def make_right_panel_kernel_scheduled(p=right_panel_kernel):
    p = rename(p, "right_panel_kernel_scheduled")
    p = replace_all(p, right_panel_kernel)
    p = specialize(p, p.find("right_panel_kernel(_)"),
                   [f"(N / 16) == {i}" for i in range(N_REG_BLK // VEC_W)])
    p = repeat(call_eqv)(p, "right_panel_kernel(_)", right_panel_kernel_opt)
    p = repeat(inline)(p, "right_panel_kernel_opt(_)")
    p = repeat(inline_window)(p, "A = _")
    p = repeat(inline_window)(p, "B = _")
    p = repeat(inline_window)(p, "C = _")
    return simplify(p)


right_panel_kernel_scheduled = make_right_panel_kernel_scheduled()


# ---- a block that fits L1: 6 x 64 register tiles, right and bottom panels ---------------------

def make_sgemm_above_kernel(p=SGEMM_WINDOW):
    p = rename(p, "sgemm_above_kernel")
    p = divide_loop(p, "j", N_REG_BLK, ["jo", "ji"], tail="cut_and_guard")
    p = divide_loop(p, "i", M_REG_BLK, ["io", "ii"], tail="cut_and_guard")
    p = fission(p, p.find("for jo in _: _ #0").after(), n_lifts=2)
    p = reorder_loops(p, "ii jo #0")
    p = fission(p, p.find("for io in _: _").after())
    p = fission(p, p.find("for io in _: _ #1").after())
    p = reorder_loops(p, "k io #0")
    p = reorder_loops(p, "k jo #0")
    p = lift_if(p, "if N % 64 > 0: _ #0", n_lifts=3)
    p = reorder_loops(p, "k io")
    p = lift_if(p, "if M % 6 > 0: _ #0")
    p = fission(p, p.find("for jo in _: _ #1").after(), n_lifts=2)
    p = reorder_loops(p, "ii jo")
    p = reorder_loops(p, "k jo")
    p = lift_if(p, "if N % 64 > 0: _ #1", n_lifts=2)
    p = replace_all(p, basic_kernel_Mx4[6])
    p = call_eqv(p, basic_kernel_Mx4[6], sgemm_kernel_avx512_Mx4[6])
    p = replace_all(p, right_panel_kernel)
    p = call_eqv(p, right_panel_kernel, right_panel_kernel_scheduled)
    p = replace_all(p, bottom_panel_kernel)
    p = call_eqv(p, bottom_panel_kernel, bottom_panel_kernel_scheduled)
    # the bottom-right corner (M % 6 rows x N % 64 columns) stays scalar, as in the app
    return simplify(p)


sgemm_above_kernel = make_sgemm_above_kernel()


# ---- the whole SGEMM: L1 blocks in 8 full/tail cases, packed into static buffers -------------

def make_sgemm_exo(p=SGEMM):
    p = rename(p, "sgemm_exo")
    p = divide_loop(p, "k", K_L1_BLK, ["ko", "ki"], tail="cut_and_guard")
    p = repeat(divide_loop)(p, "i", M_L1_BLK, ["io", "ii"], tail="cut_and_guard")
    p = repeat(divide_loop)(p, "j", N_L1_BLK, ["jo", "ji"], tail="cut_and_guard")
    for i in range(0, 2):
        p = fission(p, p.find(f"for io in _:_ #{i}").after(), n_lifts=2)
    for i in range(0, 4):
        p = fission(p, p.find(f"for jo in _:_ #{i}").after(), n_lifts=4)
    # case 1: full K, M, N blocks
    p = repeat(reorder_loops)(p, "ki io")
    p = repeat(reorder_loops)(p, "ii jo")
    p = repeat(reorder_loops)(p, "ki jo")
    p = replace(p, "for ki in _: _ #0", SGEMM_WINDOW)
    # case 2: N tail
    p = lift_if(p, "if N%64 > 0: _ #0", n_lifts=4)
    p = replace(p, "for ki in _: _ #0", SGEMM_WINDOW)
    # case 3: M tail
    p = lift_if(p, "if M%264 > 0: _ #0", n_lifts=2)
    p = repeat(reorder_loops)(p, "ki jo")
    p = replace(p, "for ki in _: _ #0", SGEMM_WINDOW)
    # case 4: M and N tails
    p = lift_if(p, "if M%264 > 0: _ #1", n_lifts=2)
    p = lift_if(p, "if N%64 > 0: _ #1", n_lifts=3)
    p = replace(p, "for ki in _: _ #0", SGEMM_WINDOW)
    # case 5: K tail
    p = replace(p, "for ki in _: _ #0", SGEMM_WINDOW)
    # case 6: K and N tails
    p = lift_if(p, "if N%64 > 0: _ #2", n_lifts=3)
    p = replace(p, "for ki in _: _ #0", SGEMM_WINDOW)
    # case 7: K and M tails
    p = lift_if(p, "if M%264 > 0: _ #2")
    p = repeat(reorder_loops)(p, "ki jo")
    p = replace(p, "for ki in _: _ #0", SGEMM_WINDOW)
    # case 8: K, M and N tails
    p = lift_if(p, "if M%264 > 0: _ #3")
    p = lift_if(p, "if N%64 > 0: _ #3", n_lifts=2)
    p = replace(p, "for ki in _: _ #0", SGEMM_WINDOW)
    p = simplify(p)

    calls = p.find("SGEMM_WINDOW(_)", many=True)
    assert len(calls) == 8
    # case 1: pack A (264 x 512) once per (ko, io) and B (512 x 64) per (ko, io, jo)
    p = stage_window(p, calls[0], "A", "A1_cache", DRAM_STATIC)
    p = stage_window(p, calls[0], "B", "B1_cache", DRAM_STATIC)
    p = lift_alloc(p, "A1_cache : _", n_lifts=3)
    p = lift_alloc(p, "B1_cache : _", n_lifts=3)
    a_copy = p.find_loop("i0 #0")
    p = fission(p, a_copy.after())
    p = remove_loop(p, p.forward(a_copy).parent())
    # case 2: pack B (512 x N % 64, padded to 64) once per ko
    p = stage_window(p, calls[1], "B", "B2_cache", DRAM_STATIC)
    p = resize_dim(p, "B2_cache : _", 1, N_L1_BLK, 0)
    p = lift_alloc(p, "B2_cache : _", n_lifts=3)
    b_copy = p.forward(calls[1]).prev()
    p = fission(p, b_copy.after())
    p = remove_loop(p, p.forward(b_copy).parent())
    # cases 3..8: pack B per call, padded to a static 512 x 64 buffer
    for c, dims in [(2, []), (3, [(1, N_L1_BLK)]), (4, [(0, K_L1_BLK)]),
                    (5, [(0, K_L1_BLK), (1, N_L1_BLK)]), (6, [(0, K_L1_BLK)]),
                    (7, [(0, K_L1_BLK), (1, N_L1_BLK)])]:
        name = f"B{c + 1}_cache"
        p = stage_window(p, calls[c], "B", name, DRAM_STATIC)
        for d, s in dims:
            p = resize_dim(p, f"{name} : _", d, s, 0)
    p = simplify(p)
    # the blocks themselves: the register-blocked AVX-512 code
    p = repeat(call_eqv)(p, SGEMM_WINDOW, sgemm_above_kernel)
    return simplify(p)


sgemm_exo = make_sgemm_exo()

if __name__ == "__main__":
    print(sgemm_exo)

__all__ = ["sgemm_exo"]
