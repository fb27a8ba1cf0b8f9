"""KV cache: keys and values of past tokens, preallocated and written in place.

With a cache a decoding step computes Q, K, V for the new token only and attends over the stored K, V:
the cost of one token drops from O(b n d^2 + b n^2 d) to O(b d^2 + b n d). The cache holds
2 * n * d_kv * L numbers per sequence (d_kv = n_kv_heads * d_head; = d for plain multi-head attention).
"""

from __future__ import annotations

import torch

from attnlab.errors import InputError


class LayerCache:
    """One self-attention layer's K and V buffers, (batch, kv_heads, capacity, d_head), filled up to `length`."""

    def __init__(self, batch: int, kv_heads: int, capacity: int, d_head: int, dtype, device):
        self.k = torch.empty(batch, kv_heads, capacity, d_head, dtype=dtype, device=device)
        self.v = torch.empty_like(self.k)
        self.length = 0

    @property
    def capacity(self) -> int:
        return self.k.shape[2]

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Write the new keys/values after the stored ones; return views of everything stored so far."""
        start, end = self.length, self.length + k.shape[2]
        if end > self.capacity:
            raise InputError(f"KV cache is full: it holds {self.capacity} positions, {end} needed; "
                             "allocate it with a larger capacity (prompt + max_new_tokens)")
        self.k[:, :, start:end] = k
        self.v[:, :, start:end] = v
        self.length = end
        return self.k[:, :, :end], self.v[:, :, :end]

    def reorder(self, index: torch.Tensor) -> None:
        """Keep rows `index` of the batch (beam search), in place (the gather makes one temporary copy)."""
        n = self.length
        self.k[:, :, :n] = self.k[:, :, :n].index_select(0, index)
        self.v[:, :, :n] = self.v[:, :, :n].index_select(0, index)


class CrossCache:
    """Cross-attention K, V of one layer: computed once from the encoder output, then only read."""

    def __init__(self):
        self.k: torch.Tensor | None = None
        self.v: torch.Tensor | None = None

    def reorder(self, index: torch.Tensor) -> None:
        if self.k is not None:
            self.k, self.v = self.k[index], self.v[index]


class KVCache:
    """Every layer's cache for one batch of sequences."""

    def __init__(self, n_layers: int, batch: int, kv_heads: int, capacity: int, d_head: int,
                 dtype=torch.float32, device=None, cross: bool = False):
        self.layers = [LayerCache(batch, kv_heads, capacity, d_head, dtype, device) for _ in range(n_layers)]
        self.cross = [CrossCache() for _ in range(n_layers)] if cross else None

    @classmethod
    def for_model(cls, model, batch: int, capacity: int, dtype=None, device=None) -> KVCache:
        """A cache sized for `model`'s decoder stack."""
        config = model.config
        param = next(model.parameters())
        n_layers = config.decoder_layers if config.topology == "encoder-decoder" else config.n_layers
        return cls(n_layers, batch, config.kv_heads, capacity, config.head_dim, dtype or param.dtype,
                   device or param.device, cross=config.topology == "encoder-decoder")

    @property
    def length(self) -> int:
        return self.layers[0].length

    @property
    def entries(self) -> int:
        """Numbers stored for the tokens seen so far: 2 (K and V) x batch x kv_heads x length x d_head x layers."""
        layer = self.layers[0]
        b, h, _, dh = layer.k.shape
        return 2 * b * h * self.length * dh * len(self.layers)

    @property
    def nbytes(self) -> int:
        return self.entries * self.layers[0].k.element_size()

    @property
    def allocated_bytes(self) -> int:
        return sum(layer.k.nbytes + layer.v.nbytes for layer in self.layers)

    def reorder(self, index: torch.Tensor, cross: bool = True) -> None:
        """Row i of the batch continues from row index[i] (beam search).

        cross=False leaves the cross-attention K/V alone: beams of one source share them, so reordering
        within a source's beams changes nothing there.
        """
        for layer in self.layers:
            layer.reorder(index)
        if cross:
            for layer in self.cross or ():
                layer.reorder(index)
