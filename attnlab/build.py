"""build_model: config -> the right topology, refusing what will not fit in memory; allocate_empty: a model
built on the meta device made real without initialising it (loaders overwrite every weight anyway)."""

from __future__ import annotations

import os

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

from attnlab.config import AnyConfig, DualEncoderConfig, ModelConfig
from attnlab.errors import ConfigError
from attnlab.models import Decoder, DualEncoder, Encoder, EncoderDecoder, VisionTransformer

MODEL_CLASSES = {"encoder": Encoder, "decoder": Decoder, "encoder-decoder": EncoderDecoder,
                 "vit": VisionTransformer, "dual-encoder": DualEncoder}


def _model_class(config: AnyConfig):
    return MODEL_CLASSES[config.topology]


def _parts(config: AnyConfig) -> list[ModelConfig]:
    """The ModelConfigs whose models make up `config`'s model (a dual encoder's two towers, else itself)."""
    return list(config.towers) if isinstance(config, DualEncoderConfig) else [config]


def _blocks(config: AnyConfig) -> int:
    return sum(c.total_layers for c in _parts(config))


def available_memory() -> int:
    """Bytes of memory the OS says are available now (MemAvailable), or total RAM as a fallback."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


COUNT_MARGIN = 8  # a model's parameters are fewer than this x minimum_parameters() (see build_model)
LAYER_OVERHEAD = 64 * 1024  # bytes of Python objects per block (measured ~70 KB for a tiny block)


def minimum_parameters(config: AnyConfig) -> int:
    """A lower bound on the numbers a model holds, from the config alone (no module is constructed).

    Counts only matrices every such model has (embeddings, W_Q and W_O, two feed-forward matrices per layer,
    position tables, heads), so a config whose bound already exceeds memory is refused in microseconds,
    before a constructor could loop over 10**9 layers or heads.
    """
    if isinstance(config, DualEncoderConfig):
        return sum(minimum_parameters(c) + c.d_model * config.embed_dim for c in config.towers)
    d, q_width = config.d_model, config.n_heads * config.head_dim
    layers = config.total_layers
    total = layers * (2 * d * q_width + 2 * d * config.d_ff)
    if config.topology == "vit":
        positions = config.n_patches + 1
        total += config.n_channels * config.patch_size**2 * d
    else:
        positions = config.max_len
        total += config.vocab_size * d
    if config.position == "learned":
        total += (positions + config.position_offset) * d
    elif config.position == "sinusoidal":
        total += positions * d  # a fixed table, but memory all the same
    if config.position == "t5":
        total += config.t5_num_buckets * config.n_heads
    total += config.type_vocab_size * d
    if config.head in ("classifier", "token_classifier"):
        total += config.n_classes * d
    return total


def refuse_if_absurd(config: AnyConfig, source: object = None, dtype: torch.dtype | None = None) -> None:
    """Refuse, from the closed-form bound alone, a config that cannot fit in memory.

    Loaders call this as soon as they know the config, before they read, map or allocate a single tensor: a
    config.json from a stranger claiming 10**9 layers is answered in microseconds instead of looping.
    """
    element = torch.finfo(dtype).bits // 8 if dtype is not None else 4
    need, have = minimum_parameters(config) * element + _blocks(config) * LAYER_OVERHEAD, available_memory()
    if need > 0.8 * have:
        where = f"{source}: " if source is not None else ""
        raise ConfigError(f"{where}model {config.name or config.topology!r} needs at least {need / 2**30:.1f} GiB "
                          f"({_blocks(config):,} blocks; {config.summary()}), more than 80% of the "
                          f"{have / 2**30:.1f} GiB available")


# the Tensor methods initialisation calls besides nn.init's functions (nn.init.ones_ / zeros_ of a norm end in fill_
# and zero_, a dual encoder fills its logit scale itself)
_FILLS = (torch.Tensor.normal_, torch.Tensor.uniform_, torch.Tensor.zero_, torch.Tensor.fill_)


class _NoFillsOnMeta(TorchFunctionMode):
    """Initialisation of meta tensors skipped (every nn.init function, and the fills above): they hold no data,
    so nothing changes. Why: torch runs them on the meta device through its Python decompositions, uniform_ at
    about a millisecond a matrix (a 30-block decoder has 121, and every loader builds on the meta device first),
    and normal_ through torch._refs, which imports torch._dynamo, sympy and the compiler stack (~3.5 s of every
    command that checks a checkpoint's shapes, for nothing)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _FILLS or getattr(func, "__module__", None) == "torch.nn.init":
            tensor = args[0] if args else kwargs.get("tensor", kwargs.get("self"))
            if isinstance(tensor, torch.Tensor) and tensor.is_meta:
                return tensor
        return func(*args, **kwargs)


def build_model(config: AnyConfig, device: str | torch.device | None = None, dtype: torch.dtype | None = None):
    """Build the model `config` (a ModelConfig or a DualEncoderConfig) describes.

    The parameter count is first measured on the `meta` device (no memory); a model whose weights would take
    more than 80% of the available memory is refused unless device="meta" (shapes only, for counting).
    """
    if not isinstance(config, (ModelConfig, DualEncoderConfig)):
        raise ConfigError(f"build_model needs a ModelConfig or a DualEncoderConfig, got {type(config).__name__}; "
                          "see attnlab.presets for named ones")
    cls = _model_class(config)
    if str(device) != "meta":
        element = torch.finfo(dtype).bits // 8 if dtype is not None else 4
        have = available_memory()
        n_params = minimum_parameters(config)  # closed form first: absurd sizes never reach a constructor
        layers = _blocks(config)
        objects = layers * LAYER_OVERHEAD  # the Python modules of each block, even on the meta device
        # the exact count builds the model on the meta device, which costs ~5 s and ~77 MB (torch's device
        # context routes nn.init through torch._refs, importing torch._dynamo, sympy and mpmath): only needed when
        # the closed-form lower bound is within COUNT_MARGIN of the limit (every module's parameters are within
        # that factor of the bound: K and V, a third feed-forward matrix, cross-attention, biases and norms)
        if COUNT_MARGIN * n_params * element + objects > 0.8 * have >= n_params * element + objects:
            try:
                with torch.device("meta"), _NoFillsOnMeta():
                    meta = cls(config)
                # fixed buffers (a sinusoid table) take memory too
                n_params = meta.num_parameters() + sum(b.numel() for b in meta.buffers())
            except (RuntimeError, OverflowError) as exc:  # a size torch cannot even represent
                raise ConfigError(f"model {config.name or config.topology!r} is too large to build ({exc}); "
                                  "choose a smaller config") from None
        need = n_params * element + objects
        if need > 0.8 * have:
            raise ConfigError(
                f"model {config.name or config.topology!r} has at least {n_params:,} parameters and {layers:,} layers "
                f"= {need / 2**30:.1f} GiB, "
                f"more than 80% of the {have / 2**30:.1f} GiB available; build it with device='meta' to count "
                "and inspect it without allocating, or choose a smaller config")
    if device is None or torch.device(device).type == "cpu":
        model = cls(config)  # the default device: no device context (see above), no torch._dynamo import
    elif torch.device(device).type == "meta":
        with torch.device(device), _NoFillsOnMeta():  # shapes only: initialising them would import torch._dynamo
            model = cls(config)
    else:
        with torch.device(device):  # an accelerator: allocated there, never on the CPU first
            model = cls(config)
    if dtype is not None:
        model = model.to(dtype)
    return model


def allocate_empty(model: nn.Module, device: str | torch.device | None = None) -> nn.Module:
    """Give a model built on the meta device real, uninitialised storage on `device`, in place.

    Unlike `nn.Module.to_empty`, a matrix shared by two modules (tied embeddings) stays one Parameter, and the
    fixed tables modules compute themselves (sinusoids, RoPE frequencies, ALiBi slopes) are recomputed. Every
    other value is garbage until a loader copies the checkpoint's tensors in: loading costs no random init.
    """
    device = torch.device(device if device is not None else "cpu")
    done: dict[int, torch.Tensor] = {}
    for module in model.modules():
        for group in (module._parameters, module._buffers):
            for name, tensor in group.items():
                if tensor is None:
                    continue
                if id(tensor) not in done:
                    # torch.empty, not empty_like: empty_like of a meta tensor runs through torch._refs and so
                    # imports sympy and the compiler stack
                    empty = torch.empty(tensor.shape, dtype=tensor.dtype, device=device)
                    done[id(tensor)] = nn.Parameter(empty, tensor.requires_grad) \
                        if isinstance(tensor, nn.Parameter) else empty
                group[name] = done[id(tensor)]
    for module in model.modules():
        reset = getattr(module, "reset_buffers", None)
        if callable(reset):
            reset()
        elif module._non_persistent_buffers_set:  # not in the checkpoint and not recomputed: would stay garbage
            raise TypeError(f"{type(module).__name__} keeps buffers {sorted(module._non_persistent_buffers_set)} out "
                            "of checkpoints but has no reset_buffers() to recompute them after allocate_empty")
    return model
