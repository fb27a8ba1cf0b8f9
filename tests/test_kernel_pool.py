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
