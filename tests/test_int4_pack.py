"""int4_kernel.pack: the 4-bit tiles the kernels read, checked byte by byte against the layout's definition.

The definition (int4_kernel's docstring): tile (ob, kb) holds, at byte e * 256 + g * 64 + i * 4 + r, output
64 ob + 16 g + i's codes of inputs 32 kb + 8 e + r (low nibble) and 32 kb + 8 e + 4 + r (high nibble); then the
64 outputs' float16 scales, then their minimums. A GGUF block's code of input t is byte t % 16's low nibble for
t < 16, its high nibble otherwise. Written here with plain loops on small matrices, independently of the word
arithmetic pack uses.
"""

from __future__ import annotations

import pytest
import torch

from attnlab.layers import int4_kernel


def _code(qweight: torch.Tensor, o: int, t: int) -> int:
    byte = int(qweight[o, (t // 32) * 16 + t % 16])
    return byte & 0xF if t % 32 < 16 else byte >> 4


@pytest.mark.parametrize("n, k", [(64, 32), (70, 64), (130, 96)])  # whole and padded output blocks
def test_tiles_hold_each_code_where_the_layout_says(n, k):
    g = torch.Generator().manual_seed(n + k)
    qweight = torch.randint(0, 256, (n, k // 2), dtype=torch.uint8, generator=g)
    scale, low = torch.randn(n, k // 32, generator=g).half(), torch.randn(n, k // 32, generator=g).half()
    (tiles,) = int4_kernel.pack(qweight, scale, low)
    nb, kb = -(-n // 64), k // 32
    assert tiles.shape == (nb, kb, 1280)
    for ob in range(nb):
        for b in range(kb):
            tile = tiles[ob, b]
            for e in range(4):
                for gi in range(4):
                    for i in range(16):
                        o = 64 * ob + 16 * gi + i
                        for r in range(4):
                            got = int(tile[e * 256 + gi * 64 + i * 4 + r])
                            want = 0 if o >= n else \
                                _code(qweight, o, 32 * b + 8 * e + r) | (_code(qweight, o, 32 * b + 8 * e + 4 + r) << 4)
                            assert got == want, (ob, b, e, gi, i, r)
            d = tile[1024:1152].view(torch.float16)
            m = tile[1152:1280].view(torch.float16)
            rows = min(64, n - 64 * ob)
            assert torch.equal(d[:rows], scale[64 * ob: 64 * ob + rows, b])
            assert torch.equal(m[:rows], low[64 * ob: 64 * ob + rows, b])
            assert not d[rows:].any() and not m[rows:].any()
