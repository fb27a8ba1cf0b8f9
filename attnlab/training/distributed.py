"""Data-parallel training on an existing engine (torch.distributed): the same script, one process per device.

Under `torchrun --nproc_per_node=N attnlab train ...` the environment holds RANK, WORLD_SIZE, LOCAL_RANK and
MASTER_ADDR/PORT; `setup()` joins the process group (nccl on GPUs, gloo on CPUs). Every rank draws the same
global batch from the same seeded sampler and keeps its own slice (`shard`), so N ranks with a global batch B
compute exactly what one process computes with batch B.

Two strategies, one training loop:

- ddp: DistributedDataParallel. Every rank holds all weights, gradients and optimizer state; an all-reduce
  averages the gradients.
- fsdp: FSDP2 (`torch.distributed.fsdp.fully_shard`). Each Block is its own unit and the root (embeddings,
  positions, final norm, head) another, so every parameter, its gradient and its AdamW moments are split
  along dim 0 over the ranks: a rank holds 1/N of them. A unit's full weights exist only while it runs
  (all-gather before its forward and backward, freed after); gradients are reduce-scattered (averaged) to the
  shard that owns them. FSDP2 rather than FSDP1: it is the maintained API, its parameters are DTensors with
  their original names (so `torch.nn.utils.clip_grad_norm_` computes the global norm across shards and
  state dicts need no name rewriting), and its collectives (all_gather_into_tensor, reduce_scatter_tensor)
  run on gloo (checked with torch 2.13 on CPU), so the CPU test exercises the same code a GPU run does.

Checkpoints under fsdp hold the same files as a single-process run: `gather_full_state` all-gathers the
weights and the optimizer state to rank 0's CPU (torch.distributed.checkpoint.state_dict with
full_state_dict=True), and rank 0 writes them in the single-process layout (optimizer state keyed by parameter
index), so a checkpoint resumes under any strategy and any number of ranks.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any

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
    """DistributedDataParallel (replicated weights, averaged gradients) or FSDP2 (sharded weights, in place).

    Under fsdp the optimizer must be built after this call: fully_shard replaces every parameter by a DTensor
    shard, so an optimizer built before would update tensors the model no longer uses."""
    if info.world <= 1:
        return model
    cuda = str(device).startswith("cuda")
    if strategy == "ddp":
        from torch.nn.parallel import DistributedDataParallel

        return DistributedDataParallel(model, device_ids=[info.local_rank] if cuda else None)
    if strategy == "fsdp":
        return shard_fully(model)
    raise ConfigError(f"strategy={strategy!r}: allowed 'ddp' or 'fsdp'")


def shard_fully(model: torch.nn.Module) -> torch.nn.Module:
    """FSDP2 in place: one unit per Block (bottom-up), then the root for the parameters outside the blocks.

    Sharding per Block is what bounds memory: only one block's full weights are gathered at a time. Tied
    weights (token embedding = LM head) both live in the root unit, so the tie survives sharding."""
    from torch.distributed.fsdp import fully_shard, register_fsdp_forward_method

    from attnlab.layers.block import Block

    blocks = [m for m in model.modules() if isinstance(m, Block)]
    if not blocks:
        raise ConfigError(f"strategy=fsdp shards per Block, and {type(model).__name__} has none; use strategy=ddp")
    scalars = [name for name, p in model.named_parameters() if p.dim() == 0]
    if scalars:  # e.g. DualEncoder.logit_scale (clip-mnist): refused here, on every rank, before any collective
        raise ConfigError(f"strategy=fsdp splits every parameter along dim 0, and {type(model).__name__} has "
                          f"0-dimensional parameters {scalars} that FSDP2 cannot shard; use strategy=ddp")
    for block in blocks:
        fully_shard(block)
    fully_shard(model)
    # entry points other than forward (EncoderDecoder.encode/decode in greedy decoding) must gather the root too
    for name in ("encode", "decode"):
        if callable(getattr(model, name, None)):
            register_fsdp_forward_method(model, name)
    return model


def count_units(model: torch.nn.Module) -> int:
    """How many FSDP units (Blocks + root) the model was cut into."""
    from torch.distributed.fsdp import FSDPModule

    return sum(isinstance(m, FSDPModule) for m in model.modules())


def is_sharded(model: torch.nn.Module) -> bool:
    """Whether fully_shard made `model` an FSDP module. Importing torch.distributed.fsdp to ask would add its
    DTensor machinery, ~45 MB resident (torch 2.13), to every one-process run at its first checkpoint; a model is
    only sharded after that module was imported, so its absence answers no."""
    fsdp = sys.modules.get("torch.distributed.fsdp")
    return fsdp is not None and isinstance(model, fsdp.FSDPModule)


def _param_names(model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> list[str]:
    """The name of each optimizer parameter, in the order torch numbers them in optimizer.state_dict()."""
    names = {id(p): n for n, p in model.named_parameters()}
    return [names[id(p)] for group in optimizer.param_groups for p in group["params"]]


def gather_full_state(model: torch.nn.Module, optimizer: torch.optim.Optimizer
                      ) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """(full weights by name, full optimizer state in optimizer.state_dict()'s index-keyed layout) on rank 0's
    CPU; empty dicts on the other ranks. Every rank must call it (it all-gathers each shard)."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict

    options = StateDictOptions(full_state_dict=True, cpu_offload=True)
    weights, by_name = get_state_dict(model, optimizer, options=options)
    if not by_name:  # not rank 0
        return weights, {}
    names = _param_names(model, optimizer)
    index = {name: i for i, name in enumerate(names)}
    state = {index[name]: value for name, value in by_name["state"].items()}
    groups = [{**group, "params": [index[name] for name in group["params"]]} for group in by_name["param_groups"]]
    return weights, {"state": state, "param_groups": groups}


def load_full_optimizer_state(model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                              state: dict[str, Any]) -> None:
    """Load a full, index-keyed optimizer state (as a single-process checkpoint holds it) into the optimizer of
    a sharded model: every rank passes the same full state and keeps its own shard of each moment."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_optimizer_state_dict

    names = _param_names(model, optimizer)
    if len(names) != sum(len(g["params"]) for g in state["param_groups"]):
        raise ConfigError(f"the saved optimizer state covers {sum(len(g['params']) for g in state['param_groups'])}"
                          f" parameters but the model has {len(names)}; resume with the same model settings")
    by_name = {"state": {names[i]: value for i, value in state["state"].items()},
               "param_groups": [{**g, "params": [names[i] for i in g["params"]]} for g in state["param_groups"]]}
    set_optimizer_state_dict(model, optimizer, by_name, options=StateDictOptions(full_state_dict=True))


def unwrap(model: torch.nn.Module) -> torch.nn.Module:
    """The plain attnlab model inside a DDP wrapper (FSDP2 shards the model in place: it is its own module)."""
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
