"""The text recipes' bigram baseline: the numbers of the dense V x V add-one table, without ever making one.

Why: a V x V float64 table is 312 MB for a 6,245-character vocabulary and 20 GB for a 50k BPE vocabulary; the
baseline only needs the counts of the pairs it scores and of each first id."""

import math
import resource
import sys
from collections import Counter

import pytest
import torch

from attnlab.training.recipes.text import bigram_loss


def dense_bigram_loss(train: torch.Tensor, val: torch.Tensor, vocab: int) -> float:
    """The add-one bigram cross-entropy through a full V x V table (what the baseline used to allocate)."""
    counts = torch.ones(vocab, vocab, dtype=torch.float64)  # (V, V) add-one
    counts.index_put_((train[:-1], train[1:]), torch.ones(len(train) - 1, dtype=torch.float64), accumulate=True)
    prev, nxt = val[:, :-1].flatten(), val[:, 1:].flatten()
    return float(-(counts[prev, nxt] / counts.sum(1)[prev]).log().mean())


@pytest.mark.parametrize("vocab", [3, 37, 300])
def test_sparse_baseline_equals_the_dense_table(vocab):
    g = torch.Generator().manual_seed(vocab)
    train = torch.randint(0, vocab, (5000,), generator=g)
    val = torch.randint(0, vocab, (6, 17), generator=g)  # with 300 ids, most val pairs never occur in train
    pieces = [train[max(0, i - 1):i + 700] for i in range(0, len(train), 700)]  # split_pieces(..., overlap=1)
    expected = dense_bigram_loss(train, val, vocab)
    assert bigram_loss(train, val, vocab) == pytest.approx(expected, rel=1e-13, abs=0)
    assert bigram_loss(pieces, val, vocab) == pytest.approx(expected, rel=1e-13, abs=0)


def _data_size() -> int:
    """This process's data segment in bytes (VmData: heap and private mappings, what RLIMIT_DATA bounds)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmData:"):
                return int(line.split()[1]) * 1024
    raise OSError("no VmData line")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_DATA and /proc/self/status: Linux")
def test_a_50k_vocabulary_never_allocates_vocab_squared():
    """Counted under a 256 MB allowance above what the process holds: the dense table (20 GB) is refused by the
    allocator, the sparse count needs a few MB. The result is checked against plain Python counters."""
    vocab = 50_000
    g = torch.Generator().manual_seed(0)
    train = torch.randint(0, vocab, (20_000,), generator=g)
    train[1000:3000:2] = 7  # some pairs seen many times: (7, x) and (x, 7)
    val = torch.cat([train[1000:1065], train[5000:5065]]).view(2, 65)  # pairs seen in train ...
    val[1, ::3] = torch.randint(0, vocab, (22,), generator=g)  # ... and pairs never seen
    old = resource.getrlimit(resource.RLIMIT_DATA)
    resource.setrlimit(resource.RLIMIT_DATA, (_data_size() + 256 * 2**20, old[1]))
    try:
        loss = bigram_loss(train, val, vocab)
    finally:
        resource.setrlimit(resource.RLIMIT_DATA, old)
    pairs = Counter(zip(train[:-1].tolist(), train[1:].tolist(), strict=True))
    firsts = Counter(train[:-1].tolist())
    scored = [(a, b) for row in val.tolist() for a, b in zip(row[:-1], row[1:], strict=True)]
    expected = -sum(math.log((pairs[p] + 1) / (firsts[p[0]] + vocab)) for p in scored) / len(scored)
    assert loss == pytest.approx(expected, rel=1e-12)
