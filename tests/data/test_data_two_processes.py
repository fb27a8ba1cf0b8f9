"""Two gloo processes (as torchrun starts them) prepare one token file together and, step by step, see exactly the
windows one process sees: the same global batch, rank r holding its contiguous slice of it."""

import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from attnlab.data.sources import CorpusSource
from attnlab.data.token_file import TokenFile
from attnlab.data.tokenizers import char_tokenizer
from attnlab.training import distributed

TEXT = "".join(f"line {i}: the quick brown fox jumps over the lazy dog {i * 7 % 13}.\n" for i in range(200))
STEPS, BATCH, SEQ = 3, 4, 16


def _windows(token_file, info):
    """Per step, this rank's inputs: the global batch drawn from the shared seed, sliced by distributed.shard."""
    generator = torch.Generator().manual_seed(1234)
    steps = []
    for _ in range(STEPS):
        x, y = token_file.get_batch("train", BATCH, SEQ, generator)
        steps.append(distributed.shard({"x": x, "y": y}, info)["x"])
    return torch.stack(steps)  # (steps, batch / world, seq)


def _rank(rank, world, root):
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank))
    dist.init_process_group("gloo", init_method=f"file://{root}/store", rank=rank, world_size=world)
    try:
        info = distributed.DistInfo(rank=rank, world=world, local_rank=rank)
        token_file, _ = TokenFile.prepare(CorpusSource(root / "corpus.txt"), char_tokenizer(TEXT), root / "data", 0.1,
                                          progress=False)
        mine = _windows(token_file, info)
        gathered = [torch.empty_like(mine) for _ in range(world)]
        dist.all_gather(gathered, mine)
        if rank == 0:
            torch.save(torch.cat(gathered, dim=1), root / "two.pt")  # ranks' slices side by side: the global batch
    finally:
        dist.destroy_process_group()


def test_two_processes_see_the_windows_of_one(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNLAB_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "corpus.txt").write_text(TEXT)
    mp.spawn(_rank, args=(2, tmp_path), nprocs=2, join=True)
    two = torch.load(tmp_path / "two.pt")
    single, reused = TokenFile.prepare(CorpusSource(tmp_path / "corpus.txt"), char_tokenizer(TEXT),
                                       tmp_path / "single", 0.1, progress=False)
    assert reused  # the two ranks built it once, in the token store
    one = _windows(single, distributed.DistInfo())
    assert two.shape == (STEPS, BATCH, SEQ) and torch.equal(two, one)
    train = "".join(map(chr, single.tokens("train").tolist()))  # every window is a run of the train ids
    assert all("".join(map(chr, window.tolist())) in train for window in one.flatten(0, 1))
    assert sorted(p.name for p in (tmp_path / "cache" / "tokens").iterdir() if not p.name.startswith(".")) == \
        [single.meta["fingerprint"]]
