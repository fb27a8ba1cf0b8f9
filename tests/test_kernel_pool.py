"""The kernels' thread pool (layers/kernel_build.POOL) under callers in several OS threads at once: two explorer
requests, or a script's threads, each multiplying through the same kernel library at two threads. The pool's fields
describe one job, so one caller owns the helpers at a time and another does its whole job alone; before that rule
two callers at once crashed the process (a segmentation fault within a few hundred calls on a 2-core AMD EPYC).

Reference: each product at one thread, where no pool is involved; the answers must be the same bits (each output
block is computed the same way whichever thread takes it)."""

from __future__ import annotations

import threading

import pytest
import torch

from attnlab.layers import int4_kernel

CALLS = 150  # per thread: the crash took a few dozen to a few hundred concurrent calls


@pytest.mark.parametrize("rows", [1, 32], ids=["gemv", "rows_product"])
def test_two_threads_calling_one_kernel_at_two_threads_each_get_their_own_answer(rows):
    if not int4_kernel.available() or (rows > 1 and not int4_kernel.rows_available()):
        pytest.skip(f"the 4-bit kernel does not run here: {int4_kernel.unavailable_reason()}")
    torch.manual_seed(0)
    n, k = 1024, 576
    tiles, = int4_kernel.pack(torch.randint(0, 256, (n, k // 2), dtype=torch.uint8), torch.rand(n, k // 32).half(),
                              torch.rand(n, k // 32).half())
    product = int4_kernel.gemv if rows == 1 else int4_kernel.rows_product
    xs = [torch.randn(rows, k) for _ in range(2)]
    expected = [product(x, tiles, None, n, 1) for x in xs]
    wrong, failures = [0, 0], []

    def caller(i: int) -> None:
        try:
            for _ in range(CALLS):
                wrong[i] += not torch.equal(product(xs[i], tiles, None, n, 2), expected[i])
        except Exception as e:  # noqa: BLE001 - reported by the assertion below
            failures.append(e)

    threads = [threading.Thread(target=caller, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures and wrong == [0, 0], (failures, wrong)


SHARED = r"""
import os, torch
from attnlab.layers import int4_kernel, q8_0_kernel
from attnlab.layers.quantized import QuantizedLinear
torch.set_num_threads(1)  # torch's own pool starts no thread of its own
torch.manual_seed(0)
calls = []
for kernel, layer in ((int4_kernel, QuantizedLinear.from_float(torch.nn.Linear(256, 1024, bias=False), "int4")),
                      (q8_0_kernel, QuantizedLinear(256, 1024, "q8_0"))):
    tiles, bias = kernel.pack_layer(layer.buffers_dict(), None)
    for rows in (1, 32):  # the one-row and the rows library of each format: four libraries
        product = kernel.gemv if rows == 1 else kernel.rows_product
        calls.append((product, torch.randn(rows, 256), tiles, bias))
before = len(os.listdir("/proc/self/task"))
for product, x, tiles, bias in calls:
    assert product(x, tiles, bias, 1024, 2) is not None
print(len(os.listdir("/proc/self/task")) - before)
"""


def test_the_kernel_libraries_share_one_pool(tmp_path):
    """Four kernel libraries (4-bit and Q8_0, one-row and rows) each at two threads start one helper thread in
    all, not one each: the pool is one object for the process (kernel_build.POOL's inline variable, a GNU unique
    symbol), so one library's helper never spins for the core another's job needs. A fresh process, so no earlier
    test's threads are counted."""
    import subprocess
    import sys

    from attnlab.layers import kernel_build, q8_0_kernel

    if not (int4_kernel.available() and int4_kernel.rows_available() and q8_0_kernel.available()
            and q8_0_kernel.rows_available()):
        pytest.skip("the 4-bit and Q8_0 kernels do not all run here")
    version = subprocess.run([kernel_build.compiler(), "--version"], capture_output=True, text=True).stdout
    if "clang" in version.lower():
        pytest.skip("clang emits no GNU unique symbols: each kernel library keeps its own pool (kernel_build.POOL)")
    done = subprocess.run([sys.executable, "-c", SHARED], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-1] == "1", done.stdout


COVER = r"""
extern "C" int attnlab_pool_cover(int64_t* counts, int64_t n, int64_t threads) {
    attnlab_pool::for_blocks(n, threads, [&](int64_t i) { __atomic_fetch_add(counts + i, 1, __ATOMIC_RELAXED); });
    return 0;
}
"""


def test_every_block_is_taken_exactly_once_from_either_end():
    """The pool hands out blocks from the front (the caller, every other helper) and from the back (the first
    helper, ...): kernel_build.POOL's claim. Every block of a job must run once and only once, for any block count
    against any thread count (odd counts, fewer blocks than threads, one block), job after job."""
    from attnlab.layers import kernel_build

    try:
        cover = kernel_build.load("pool_cover", kernel_build.POOL + COVER, "attnlab_pool_cover")
    except (RuntimeError, OSError) as e:
        pytest.skip(f"no kernel library can be built here: {e}")
    for threads in (2, 3, 4, 8):
        for n in (1, 2, 3, 5, 64, 257, 1000):
            for _ in range(20):
                counts = torch.zeros(n, dtype=torch.int64)
                assert cover(counts.data_ptr(), n, threads) == 0
                assert torch.equal(counts, torch.ones(n, dtype=torch.int64)), (threads, n, counts.tolist()[:20])
