"""Data-parallel training on an existing engine (torch.distributed): the same script, one process per device.

Under `torchrun --nproc_per_node=N attnlab train ...` the environment holds RANK, WORLD_SIZE, LOCAL_RANK and
MASTER_ADDR/PORT; `setup()` joins the process group (nccl on GPUs, gloo on CPUs). Every rank draws the same
global batch from the same seeded sampler and keeps its own slice (`shard`), so N ranks with a global batch B
compute exactly what one process computes with batch B: DistributedDataParallel averages the gradients.
FSDP (parameters, gradients and optimizer state sharded across ranks) is the option for models that do not fit
one device; the training loop is the same.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist

from attnlab.errors import ConfigError


@dataclass
class DistInfo:
    rank: int = 0
    world: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def setup(device: str = "cpu") -> DistInfo:
    """Join the process group torchrun (or a test) described in the environment; single process otherwise."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return DistInfo()
    rank, local_rank = int(os.environ.get("RANK", "0")), int(os.environ.get("LOCAL_RANK", "0"))
    if not dist.is_initialized():
        backend = "nccl" if str(device).startswith("cuda") else "gloo"
        if backend == "nccl":
            torch.cuda.set_device(local_rank)
        dist.init_process_group(backend=backend, rank=rank, world_size=world)
    return DistInfo(rank=rank, world=world, local_rank=local_rank)


def cleanup() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()


def wrap(model: torch.nn.Module, info: DistInfo, strategy: str = "ddp", device: str = "cpu") -> torch.nn.Module:
    """DistributedDataParallel (replicated weights, averaged gradients) or FSDP (sharded weights)."""
    if info.world <= 1:
        return model
    cuda = str(device).startswith("cuda")
    if strategy == "ddp":
        from torch.nn.parallel import DistributedDataParallel

        return DistributedDataParallel(model, device_ids=[info.local_rank] if cuda else None)
    if strategy == "fsdp":
        from torch.distributed.fsdp import FullyShardedDataParallel

        return FullyShardedDataParallel(model, device_id=info.local_rank if cuda else None, use_orig_params=True)
    raise ConfigError(f"strategy={strategy!r}: allowed 'ddp' or 'fsdp'")


def unwrap(model: torch.nn.Module) -> torch.nn.Module:
    """The plain attnlab model inside a DDP wrapper (FSDP keeps the original module with use_orig_params)."""
    return model.module if hasattr(model, "module") else model


def shard(batch: dict[str, torch.Tensor], info: DistInfo) -> dict[str, torch.Tensor]:
    """This rank's contiguous slice of the global batch (dim 0)."""
    if info.world <= 1:
        return batch
    out = {}
    for key, value in batch.items():
        if not isinstance(value, torch.Tensor):
            out[key] = value
            continue
        n = value.shape[0]
        if n % info.world:
            raise ConfigError(f"global batch of {n} does not split evenly over {info.world} processes; "
                              f"choose batch_size divisible by {info.world}")
        per = n // info.world
        out[key] = value[info.rank * per:(info.rank + 1) * per]
    return out


def mean_across(value: torch.Tensor, info: DistInfo) -> torch.Tensor:
    """Average a scalar over ranks (for logging: every rank then reports the global-batch loss)."""
    if info.world <= 1:
        return value
    value = value.detach().clone()
    dist.all_reduce(value, op=dist.ReduceOp.SUM)
    return value / info.world


def barrier(info: DistInfo) -> None:
    if info.world > 1:
        dist.barrier()
