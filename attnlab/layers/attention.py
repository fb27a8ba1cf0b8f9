"""Multi-head attention, for self- and cross-attention: Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k) + B) V.

One module serves every topology. Heads are a reshape, not a loop: Q, K, V are projected for all heads at
once (one fused matrix for self-attention), split into (batch, heads, seq, d_head), attended, concatenated
and projected by W_O. Grouped-query attention shares each K/V head among n_heads / n_kv_heads query heads.

Two paths compute the same numbers:
- fast: torch.nn.functional.scaled_dot_product_attention (fused kernels);
- explicit: the textbook math, taken only when a recorder or an edit asks for scores, weights, Q, K or V.
Per-head outputs (z = each head's sum of w * V, and head_out = z through that head's slice of W_O) are opt-in
the same way: only a recording or an edit of them pays for the (batch, heads, seq, d_model) tensor.
"""

from __future__ import annotations

import contextlib

import torch
import torch.nn.functional as F
from torch import nn

from attnlab.config import ModelConfig
from attnlab.layers import attention_kernel
from attnlab.layers.linear import Linear
from attnlab.layers.masks import causal_mask
from attnlab.layers.norms import RMSNorm
from attnlab.layers.positions import apply_rotary
from attnlab.recording import active

_NO_CONTEXT = contextlib.nullcontext()


class _KeepAll:
    """A recorder that keeps nothing and changes nothing: _explicit's stand-in when no recorder is active."""

    @staticmethod
    def keep(module, name, value, head_axis=None):
        return value


_KEEP_ALL = _KeepAll()


_HALF = (torch.bfloat16, torch.float16)


def one_query_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor | None,
                        scale: float) -> torch.Tensor:
    """softmax(scale q k^T + bias) v for one query position, each query head reading its group's K and V head.

    Why: torch 2.13's CPU flash kernel takes ~6 ms a layer for a bfloat16 decoding step of 64 SmolLM2 rows (9 query
    heads, 3 key/value heads, 100 cached positions) where two small matrix products take ~0.5 ms (2026-12-07, one
    thread, AMD EPYC Zen 5): it is built for long query blocks. Scores and softmax are float32; the products run in
    the inputs' precision, as SDPA's do.
    q (batch, heads, 1, d_head), k and v (batch, kv_heads, k_len, d_head), bias broadcastable to (batch, heads, 1,
    k_len) -> (batch, heads, 1, d_head).
    """
    batch, heads, _, d_head = q.shape
    groups = k.shape[1]
    q = q.reshape(batch, groups, heads // groups, d_head)  # query heads of one group side by side
    scores = torch.matmul(q, k.transpose(-1, -2)).float() * scale  # (batch, groups, heads / groups, k_len)
    if bias is not None:
        bias = bias.expand(batch, heads, 1, k.shape[2]).reshape(scores.shape)
        scores = scores + bias if bias.dtype != torch.bool else scores.masked_fill(~bias, float("-inf"))
    weights = scores.softmax(dim=-1).to(v.dtype)
    return torch.matmul(weights, v).view(batch, heads, 1, d_head)


def _growing_kv_backends():
    """SDPA without cuDNN's kernel, for attention over a KV cache on a GPU.

    cuDNN's attention (torch's first choice for bf16/fp16 on recent NVIDIA GPUs) builds and caches an
    execution plan per shape. While generating, K and V grow by one position a step, so every step is a new
    shape: measured on an H200 (bench/RESULTS.md, "Speed: GPU"), a first 256-token GPT-2 generation in bf16 took
    ~41 ms a step building plans against ~3 ms once they were cached. Flash and memory-efficient attention take
    any length without a plan, so a cached forward uses those (and the math kernel as the last resort)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH])


_RECORDED = ("q", "k", "v", "raw_scores", "weights")  # wanted -> the explicit path
_PER_HEAD = ("z", "head_out")  # wanted -> the per-head outputs
_HEAD_OUT = ("head_out",)


class Attention(nn.Module):
    def __init__(self, config: ModelConfig, cross: bool = False):
        super().__init__()
        self.cross = cross
        self.n_heads, self.n_kv_heads, self.d_head = config.n_heads, config.kv_heads, config.head_dim
        self.scale = config.attn_scale if config.attn_scale is not None else self.d_head ** -0.5
        self.dropout_p = config.attn_dropout
        d, q_width, kv_width = config.d_model, config.n_heads * config.head_dim, config.kv_heads * config.head_dim
        self.q_width, self.kv_width = q_width, kv_width
        if cross:  # queries from the decoder, keys and values from the encoder output
            self.q = nn.Linear(d, q_width, bias=config.bias)
            self.kv = nn.Linear(d, 2 * kv_width, bias=config.bias)
        else:  # W_Q, W_K, W_V stacked into one matrix: one matmul instead of three
            # wide: decoding steps read it from an (in, out) copy (layers/linear.py)
            self.qkv = Linear(d, q_width + 2 * kv_width, bias=config.attn_qkv_bias)
        self.out = nn.Linear(q_width, d, bias=config.bias)  # W_O
        # q/k norm: q and k rescaled to unit root mean square (times a learned gain) before RoPE, which bounds the
        # scores however large the projections grow; per head over d_head features (Qwen3, the gain shared by the
        # heads) or over all heads' features at once (OLMo 2)
        self.qk_norm = "none" if cross else config.qk_norm
        q_features, k_features = (self.d_head, self.d_head) if self.qk_norm == "head" else (q_width, kv_width)
        normed = self.qk_norm != "none"
        self.q_norm = RMSNorm(q_features, eps=config.norm_eps) if normed else None
        self.k_norm = RMSNorm(k_features, eps=config.norm_eps) if normed else None
        # partial RoPE (GPT-NeoX): only the first rotary_dim features of each head turn, the rest pass as they are
        self.rotary_dim = config.rope_dim if not cross and config.rope_dim < self.d_head else None
        # the general path (`_project`) for cross-attention and for any option above; the plain self-attention of
        # every other model takes the specialised branches of forward() at the cost of this one test
        # Gemma 2 caps the scores (cap * tanh(scores / cap)): SDPA cannot, so such a layer always runs _explicit
        self.softcap = None if cross else config.attn_softcap
        self.special = cross or normed or self.rotary_dim is not None or self.softcap is not None

    def sites(self) -> tuple[str, ...]:
        """The names this module records or lets edit (attnlab.recording.sites)."""
        return _RECORDED + _PER_HEAD

    def _heads(self, x: torch.Tensor, n: int) -> torch.Tensor:
        batch, seq, _ = x.shape
        return x.view(batch, seq, n, self.d_head).transpose(1, 2)  # (batch, n, seq, d_head)

    def project_kv(self, context: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Cross-attention K, V from the encoder output: computed once per source, reusable every step."""
        k, v = self.kv(context).split(self.kv_width, dim=-1)
        return self._heads(k, self.n_kv_heads), self._heads(v, self.n_kv_heads)

    def forward(
        self,
        x: torch.Tensor,  # (batch, q_len, d_model)
        *,
        bias: torch.Tensor | None = None,  # (batch|1, heads|1, q_len, k_len) additive, masks included
        is_causal: bool = False,
        rope: tuple[torch.Tensor, torch.Tensor] | None = None,
        context: torch.Tensor | None = None,  # (batch, k_len, d_model) for cross-attention
        cache=None,  # LayerCache: self-attention appends in place; cross-attention stores K, V once
    ) -> torch.Tensor:
        native = not self.cross and getattr(cache, "slot", None) is not None and self._native_decoding(x, bias)
        if self.special:
            q, k, v = self._project(x, rope, context, cache)
            if self.softcap is not None:
                rec = active()
                return self._combine(self._explicit(q, k, v, bias, is_causal, rec or _KEEP_ALL), rec)
        elif self.n_kv_heads == self.n_heads and cache is None:
            # training and cache-free forwards: split the last dimension, then each into heads (views, no copy).
            # Its backward writes the three gradients straight into the projection's layout; unbinding the packed
            # view below costs a stack and a strided copy per layer instead (2.5-7% of attention's forward and
            # backward on a CPU; on an H200 the two extra kernels were 2.4 of a GPT-2 step's 35 ms: bench/RESULTS.md)
            batch, q_len, _ = x.shape
            q, k, v = (t.view(batch, q_len, self.n_heads, self.d_head).transpose(1, 2)
                       for t in self.qkv(x).split(self.q_width, dim=-1))  # (batch, heads, q_len, d_head) each
            if rope is not None:
                q, k = apply_rotary(q, *rope), apply_rotary(k, *rope)
        elif self.n_kv_heads == self.n_heads:
            # with a cache, one view splits all three into heads: (3, batch, heads, q_len, d_head), no copy; K and V
            # then go into the cache with one copy (a decoding step pays per small kernel: see cache.py)
            batch, q_len, _ = x.shape
            qkv = self.qkv(x).view(batch, q_len, 3, self.n_heads, self.d_head).permute(2, 0, 3, 1, 4)
            if rope is not None:
                q, k = apply_rotary(qkv[:2], *rope).unbind(0)  # q and k rotated together
                k, v = cache.append(k, qkv[2])
            else:
                q = qkv[0]
                k, v = cache.append_kv(qkv[1:])  # (batch, heads, cached + q_len, d_head) each
        else:  # grouped-query: g = n_kv_heads K and V heads, each shared by n_heads / g query heads
            batch, q_len, _ = x.shape
            h, g = self.n_heads, self.n_kv_heads
            # the same single view: (batch, h + 2g, q_len, d_head), Q heads first, then K's, then V's
            heads = self.qkv(x).view(batch, q_len, h + 2 * g, self.d_head).transpose(1, 2)
            qk, v = heads.split((h + g, g), dim=1)
            if rope is not None:
                qk = apply_rotary(qk, *rope)  # q and k rotated together
            q, k = qk.split((h, g), dim=1)
            if cache is not None:
                k, v = cache.append(k, v)  # (batch, kv_heads, cached + q_len, d_head)

        rec = active()
        if native:
            from attnlab.layers.kernel_ops import decode_attention

            out = decode_attention(q, cache.kv, cache.slot, self.scale)  # (batch, heads, 1, d_head)
        elif rec is not None and rec.wants_any(self, _RECORDED):
            out = self._explicit(q, k, v, bias, is_causal, rec)
        elif (is_causal or bias is not None) and not (self.training and self.dropout_p) \
                and attention_kernel.takes(q, k, v, bias, is_causal):
            z = attention_kernel.attend(q, k, v, self.scale, bias)  # a prompt: (batch, q_len, heads * d_head)
            if rec is not None and rec.wants_any(self, _PER_HEAD):
                return self._per_head(z.view(*z.shape[:2], self.n_heads, self.d_head), rec)
            return self.out(z)
        elif q.shape[2] == 1 and q.dtype in _HALF and not q.is_cuda and not (self.training and self.dropout_p):
            out = one_query_attention(q, k, v, bias, self.scale)  # a decoding step in bf16 / fp16 on the CPU
        else:
            with _growing_kv_backends() if cache is not None and q.is_cuda else _NO_CONTEXT:
                out = F.scaled_dot_product_attention(
                    q, k, v, attn_mask=bias, is_causal=is_causal, scale=self.scale,
                    dropout_p=self.dropout_p if self.training else 0.0,
                    enable_gqa=self.n_kv_heads != self.n_heads,
                )  # (batch, heads, q_len, d_head)
        if rec is not None and rec.wants_any(self, _PER_HEAD):
            return self._per_head(out.transpose(1, 2), rec)  # z: (batch, q_len, heads, d_head)
        batch, _, q_len, _ = out.shape
        out = out.transpose(1, 2).reshape(batch, q_len, self.q_width)  # concat heads
        return self.out(out)  # (batch, q_len, d_model)

    def _combine(self, out: torch.Tensor, rec) -> torch.Tensor:
        """Heads (batch, heads, q_len, d_head) -> (batch, q_len, d_model) through W_O (per head when recorded): the
        end of forward() for a layer that attended on its own path."""
        if rec is not None and rec.wants_any(self, _PER_HEAD):
            return self._per_head(out.transpose(1, 2), rec)
        batch, _, q_len, _ = out.shape
        return self.out(out.transpose(1, 2).reshape(batch, q_len, self.q_width))

    def _project(self, x: torch.Tensor, rope, context, cache) -> tuple[torch.Tensor, ...]:
        """Q, K, V for cross-attention, or for a self-attention with q/k norm or partial RoPE; (batch, heads, seq,
        d_head) each (K and V with kv_heads, everything cached so far)."""
        if self.cross:
            q = self._heads(self.q(x), self.n_heads)
            if cache is not None and cache.k is not None:
                return q, cache.k, cache.v
            k, v = self.project_kv(context)
            if cache is not None:
                cache.k, cache.v = k, v
            return q, k, v
        batch, q_len, _ = x.shape
        q, k, v = self.qkv(x).split((self.q_width, self.kv_width, self.kv_width), dim=-1)  # (batch, q_len, width)
        if self.qk_norm == "all":  # over all heads' features
            q, k = self.q_norm(q), self.k_norm(k)
        q, k, v = (t.view(batch, q_len, -1, self.d_head) for t in (q, k, v))  # (batch, q_len, heads, d_head)
        if self.qk_norm == "head":  # over each head's d_head features
            q, k = self.q_norm(q), self.k_norm(k)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # (batch, heads, q_len, d_head)
        if rope is not None and self.rotary_dim is None:
            q, k = apply_rotary(q, *rope), apply_rotary(k, *rope)
        elif rope is not None:  # cos, sin are rotary_dim wide: the first features turn, the others are kept
            r = self.rotary_dim
            q = torch.cat((apply_rotary(q[..., :r], *rope), q[..., r:]), dim=-1)
            k = torch.cat((apply_rotary(k[..., :r], *rope), k[..., r:]), dim=-1)
        if cache is not None:
            k, v = cache.append(k, v)  # (batch, kv_heads, cached + q_len, d_head)
        return q, k, v

    def _native_decoding(self, x: torch.Tensor, bias: torch.Tensor | None) -> bool:
        """A compiled decoding step's attention (the cache's `slot` is set: generation/compiled.py), done by
        attnlab::decode_attention (layers/kernel_ops_native.py) over the cache buffer up to the slot. The step is
        built only where that holds; anything else is a bug, said as such.

        Why: there, SDPA's flash kernel spent ~8% of a SmolLM2 step in MKL's matrix-vector calls (a few positions
        per head), and the cache views it needs made each layer's length a graph input with guards of its own."""
        if not torch.compiler.is_compiling():
            return False
        if x.shape[1] != 1 or bias is not None or x.device.type != "cpu" or x.dtype != torch.float32 \
                or (self.training and self.dropout_p) or self.softcap is not None:
            raise RuntimeError("a compiled decoding step with the cache's slot set takes one float32 CPU token per "
                               "row, no attention bias, no dropout and no score capping (generation/compiled.py "
                               "decides)")
        return True

    def _per_head(self, z: torch.Tensor, rec) -> torch.Tensor:
        """W_O applied head by head: z (batch, q, heads, d_head) -> sum over heads of head_out, + W_O's bias.

        W_O's columns split by head (the concat order), so out = sum_h z_h W_O[:, h] + b. z is where a head is
        switched off (before W_O: every head's slice of W_O sees only its own z); head_out is each head's
        contribution to the residual stream.
        """
        z = rec.keep(self, "z", z, head_axis=2)
        batch, q_len = z.shape[:2]
        if not rec.wants_any(self, _HEAD_OUT):
            return self.out(z.reshape(batch, q_len, self.q_width))
        w_o = self.out.weight.view(-1, self.n_heads, self.d_head)  # (d_model, heads, d_head)
        head_out = torch.einsum("bqhd,mhd->bhqm", z, w_o)  # (batch, heads, q, d_model)
        head_out = rec.keep(self, "head_out", head_out, head_axis=1)
        out = head_out.sum(dim=1)  # (batch, q, d_model)
        return out + self.out.bias if self.out.bias is not None else out

    def _explicit(self, q, k, v, bias, is_causal, rec) -> torch.Tensor:
        """The same attention written out, keeping (and letting edits replace) what the probe asks for."""
        if self.n_kv_heads != self.n_heads:
            group = self.n_heads // self.n_kv_heads
            k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        q = rec.keep(self, "q", q, head_axis=1)  # (batch, heads, q, d_head)
        k = rec.keep(self, "k", k, head_axis=1)  # (batch, heads, k, d_head): per query head
        v = rec.keep(self, "v", v, head_axis=1)
        raw = (q @ k.transpose(-2, -1)) * self.scale  # (batch, heads, q, k)
        if self.softcap is not None:  # bounded to (-cap, cap), nearly unchanged while |scores| << cap
            raw = torch.tanh(raw / self.softcap) * self.softcap
        if is_causal:
            keep = causal_mask(q.shape[-2], k.shape[-2], q.device)
            raw = raw.masked_fill(~keep, torch.finfo(raw.dtype).min)
        if bias is not None:
            raw = raw + bias
            raw = raw.clamp(min=torch.finfo(raw.dtype).min)  # -inf from min + negative stays finite
        raw = rec.keep(self, "raw_scores", raw, head_axis=1)
        weights = raw.softmax(dim=-1)
        if self.training and self.dropout_p:
            weights = F.dropout(weights, self.dropout_p)
        weights = rec.keep(self, "weights", weights, head_axis=1)
        return weights @ v  # (batch, heads, q, d_head)
