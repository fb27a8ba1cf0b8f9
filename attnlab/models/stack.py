"""Stack: N blocks sharing one position scheme and one mask. Every model is a stack plus an input and a head.

Input vectors arrive already looked up (tokens or patches); the stack adds what every topology shares:
embedding scaling, absolute positions, segment embeddings, embedding norm, dropout, the per-forward
attention bias (mask + ALiBi/T5 bias, computed once for all layers), RoPE angles, the blocks, a final norm.
"""

from __future__ import annotations

import math
from itertools import islice

import torch
from torch import nn

from attnlab.config import ModelConfig
from attnlab.errors import InputError
from attnlab.layers.block import Block
from attnlab.layers.masks import attention_bias
from attnlab.layers.norms import make_norm
from attnlab.layers.positions import ALiBi, LearnedPositions, Rotary, SinusoidalPositions, T5RelativeBias
from attnlab.recording import active


def check_mask(mask, name: str, shape: tuple[int, int], shape_text: str) -> None:
    """A padding mask must be a (batch, keys) tensor of 0/1 (bool, integer or float); anything else is refused."""
    if not isinstance(mask, torch.Tensor):
        raise InputError(f"{name} must be a torch.Tensor of 0/1 with shape {shape_text.format(*shape)}, "
                         f"got {type(mask).__name__}")
    if tuple(mask.shape) != shape:
        raise InputError(f"{name} has shape {tuple(mask.shape)}, expected {shape_text.format(*shape)}")
    if mask.dtype != torch.bool and mask.numel() and not bool(((mask == 0) | (mask == 1)).all()):
        raise InputError(f"{name} must hold only 0 (padding) and 1 (real token); got other values")


def check_index_tensor(values, name: str, shape: tuple[int, int], upper: int | None) -> None:
    """A per-position index tensor (position_ids, token_type_ids) must be integers of `shape` in [0, upper).

    Token ids are checked by the model (TransformerModel.check_ids), against the vocabulary."""
    if not isinstance(values, torch.Tensor) or values.dtype not in (torch.int32, torch.int64):
        raise InputError(f"{name} must be an integer torch.Tensor of shape {shape}, got "
                         f"{getattr(values, 'dtype', type(values).__name__)}")
    if tuple(values.shape) != shape:
        raise InputError(f"{name} has shape {tuple(values.shape)}, expected {shape}")
    # the min/max read-back would split a torch.compile graph (as in TransformerModel.check_ids): skipped there
    if values.numel() and not torch.compiler.is_compiling() and (
            int(values.min()) < 0 or (upper is not None and int(values.max()) >= upper)):
        allowed = f"[0, {upper})" if upper is not None else "[0, ...)"
        raise InputError(f"{name} must lie in {allowed}; got min {int(values.min())}, max {int(values.max())}")


class Stack(nn.Module):
    def __init__(self, config: ModelConfig, *, n_layers: int, causal: bool, cross: bool = False,
                 max_len: int | None = None):
        super().__init__()
        self.config, self.causal = config, causal
        self.max_len = max_len or config.max_len
        d = config.d_model
        self.embed_scale = math.sqrt(d) if config.scale_embeddings else 1.0
        self.positions = None
        self.rotary = self.alibi = self.rel_bias = None
        if config.position == "learned":
            self.positions = LearnedPositions(self.max_len, d, config.position_offset)
        elif config.position == "sinusoidal":
            self.positions = SinusoidalPositions(self.max_len, d, config.sinusoidal_layout)
        elif config.position == "rope":
            self.rotary = Rotary(config.rope_dim, config.rope_theta, config.rope_scaling)
        elif config.position == "alibi":
            self.alibi = ALiBi(config.n_heads)
        elif config.position == "t5":
            self.rel_bias = T5RelativeBias(config.n_heads, config.t5_num_buckets, config.t5_max_distance,
                                           bidirectional=not causal)
        # Gemma 3: the sliding-window layers turn q and k at a base of their own, without the global layers' scaling
        self.rotary_local = (Rotary(config.rope_dim, config.rope_local_theta)
                             if config.position == "rope" and config.rope_local_theta is not None else None)
        self.token_types = nn.Embedding(config.type_vocab_size, d) if config.type_vocab_size else None
        self.embed_norm = make_norm(config) if config.embedding_norm else None
        self.dropout = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList(Block(config, cross=cross) for _ in range(n_layers))
        self.final_norm = make_norm(config) if config.has_final_norm else None

    def sites(self) -> tuple[str, ...]:
        """The names this module records or lets edit (attnlab.recording.sites); a model adds "logits"."""
        return ("embed", "final")

    def _embed(self, x: torch.Tensor, position_ids: torch.Tensor, token_type_ids: torch.Tensor | None,
               shared_positions: bool) -> torch.Tensor:
        """Token or patch vectors -> the residual stream entering block 0 (scale, positions, segments, norm)."""
        if self.embed_scale != 1.0:
            x = x * self.embed_scale
        if self.positions is not None:
            # shared positions: look up (1, seq, d_model) once and broadcast it over the batch, rather than
            # gathering a (batch, seq, d_model) copy whose gradient would be scattered back row by row
            x = x + self.positions(position_ids[:1] if shared_positions else position_ids)
        if self.token_types is not None:
            if token_type_ids is None:  # every token in segment 0: one row, broadcast over (batch, seq)
                token_type_ids = torch.zeros(1, 1, dtype=torch.long, device=x.device)
            x = x + self.token_types(token_type_ids)
        if self.embed_norm is not None:
            x = self.embed_norm(x)
        if self.training:
            x = self.dropout(x)
        return x

    @property
    def seq_limit(self) -> int | None:
        return self.max_len if self.positions is not None else None

    def run(
        self,
        x: torch.Tensor,  # (batch, seq, d_model) token or patch vectors
        *,
        attention_mask: torch.Tensor | None = None,  # (batch, past + seq) 1 = real token, 0 = padding
        position_ids: torch.Tensor | None = None,  # (batch, seq)
        token_type_ids: torch.Tensor | None = None,
        context: torch.Tensor | None = None,  # (batch, src_seq, d_model) encoder output (cross-attention)
        context_mask: torch.Tensor | None = None,  # (batch, src_seq)
        cache=None,  # KVCache
        validate: bool = True,  # False: the caller checked masks and ids once (generation); skip host reads
        start: int = 0,  # > 0: x is the residual stream entering block `start` (see below)
    ) -> torch.Tensor:
        """The blocks (and what precedes them) over x; -> the last hidden state (after any final norm).

        start > 0 runs blocks start.. on x, a residual stream recorded entering that block (`resid_pre`): the
        embedding steps and earlier blocks are skipped. Sweeps whose variants differ only from block `start` on
        (attnlab.interventions.head_sweep) run each variant from there instead of from the tokens.
        """
        if start and (isinstance(start, bool) or not isinstance(start, int) or not 0 < start < len(self.blocks)):
            raise InputError(f"start={start!r}: allowed a block index in [0, {len(self.blocks)})")
        batch, seq, _ = x.shape
        past = cache.length if cache is not None else 0
        total = past + seq
        limit = self.seq_limit
        if limit is not None and total > limit:
            raise InputError(f"sequence of {total} positions exceeds this model's limit of {limit} "
                             f"({self.config.position} positions); shorten the input")
        if attention_mask is not None and validate:
            check_mask(attention_mask, "attention_mask", (batch, total), "(batch={}, past+seq={})")
        if context_mask is not None and validate:
            src = context.shape[1] if context is not None else context_mask.shape[-1]
            check_mask(context_mask, "encoder attention_mask", (batch, src), "(batch={}, src_seq={})")
        if context is not None and (context.dim() != 3 or context.shape[0] != batch):
            raise InputError(f"encoder output has shape {tuple(context.shape)} but the decoder input has batch "
                             f"{batch}: source and target batches must match")
        if position_ids is not None and validate:
            check_index_tensor(position_ids, "position_ids", (batch, seq), limit)
        if token_type_ids is not None and validate:
            check_index_tensor(token_type_ids, "token_type_ids", (batch, seq), self.config.type_vocab_size or None)
        shared_positions = position_ids is None and attention_mask is None  # every row sits at past .. total-1
        if position_ids is None:  # a row's positions count its real tokens (token_positions): padding shifts none
            position_ids = token_positions(attention_mask, past, batch, seq, x.device)  # (batch, seq)
        if start == 0:
            x = self._embed(x, position_ids, token_type_ids, shared_positions)
        recorder = active()
        if recorder is not None:
            recorder.span(total, attention_mask)  # position-selective edits map token positions into this forward
            if start == 0:
                x = recorder.keep(self, "embed", x)

        position_bias = None
        if self.alibi is not None or self.rel_bias is not None:
            q_pos = torch.arange(past, total, device=x.device)
            k_pos = torch.arange(total, device=x.device)
            module = self.alibi if self.alibi is not None else self.rel_bias
            position_bias = module(q_pos, k_pos)[None]  # (1, heads, seq, total)
        # a sliding-window layer of a bounded cache (KVCache.for_model(bounded=True)) reads only the keys it still
        # stores and the new ones: its mask covers the last `window_keys` columns
        stored = cache.window_stored if cache is not None else None
        window_keys = total if stored is None else stored + seq
        window_mask = attention_mask if attention_mask is None or window_keys == total else \
            attention_mask[:, total - window_keys:]
        window_bias = position_bias if position_bias is None or window_keys == total else \
            position_bias[..., total - window_keys:]
        bias, is_causal = attention_bias(q_len=seq, k_len=window_keys, causal=self.causal, attention_mask=window_mask,
                                         position_bias=window_bias, dtype=x.dtype, device=x.device,
                                         window=self.config.sliding_window)
        if self.config.sliding_window is not None and cache is not None and torch.compiler.is_compiling():
            # a compiled decoding step is traced once, at one cache length, and run without its guards: whether the
            # window hides a key yet would be fixed at that length (generation/compiled.py decodes eagerly instead)
            raise RuntimeError("a decoding step with a sliding window is not compiled: it runs eagerly")
        context_bias = None
        if context is not None or (cache is not None and cache.cross is not None):
            if context_mask is not None:
                context_bias, _ = attention_bias(q_len=seq, k_len=context_mask.shape[1], causal=False,
                                                 attention_mask=context_mask, dtype=x.dtype, device=x.device)
        rope = self.rotary(position_ids) if self.rotary is not None else None
        # the angles of the sliding-window layers: their own base where rope_local_theta says (else the same)
        local_rope = self.rotary_local(position_ids) if self.rotary_local is not None else rope

        if self.config.global_every is None:  # one kind of layer: all sliding (local_rope) or none (the same angles)
            for i, block in islice(enumerate(self.blocks), start, None):  # islice: no ModuleList indexing per block
                x = block(x, bias=bias, is_causal=is_causal, rope=local_rope, context=context,
                          context_bias=context_bias, cache=cache.layers[i] if cache is not None else None,
                          cross_cache=cache.cross[i] if cache is not None and cache.cross is not None else None)
        else:  # Gemma 2, 3: every global_every-th layer sees every key, the others the window (a decoder: no cross)
            every = self.config.global_every
            full = attention_bias(q_len=seq, k_len=total, causal=self.causal, attention_mask=attention_mask,
                                  position_bias=position_bias, dtype=x.dtype, device=x.device)
            for i, block in islice(enumerate(self.blocks), start, None):
                layer_bias, layer_causal, layer_rope = (*full, rope) if (i + 1) % every == 0 else (
                    bias, is_causal, local_rope)
                x = block(x, bias=layer_bias, is_causal=layer_causal, rope=layer_rope,
                          cache=cache.layers[i] if cache is not None else None)
        if self.final_norm is not None:
            x = self.final_norm(x)
        if recorder is not None:
            x = recorder.keep(self, "final", x)
        return x  # (batch, seq, d_model)


def token_positions(attention_mask: torch.Tensor | None, past: int, batch: int, seq: int,
                    device: torch.device) -> torch.Tensor:
    """Each column's position when the caller gives none; -> (batch, seq) for the columns past .. past+seq-1.

    Without a mask every row sits at past .. past+seq-1. With one, a row's position counts its real tokens,
    cumsum(mask) - 1 clamped at 0 (as Hugging Face's generate numbers a padded batch): a left-padded row gets the
    positions it has alone, so absolute positions (learned, sinusoidal) and RoPE give it the same logits in a
    batch as alone; right padding leaves the real tokens at 0, 1, 2 ... as before.
    """
    if attention_mask is None:
        return torch.arange(past, past + seq, device=device).expand(batch, seq)
    return (attention_mask.long().cumsum(dim=-1) - 1).clamp(min=0)[:, past:]  # mask: (batch, past + seq)
