"""KV cache: keys and values of past tokens, preallocated and written in place.

With a cache a decoding step computes Q, K, V for the new token only and attends over the stored K, V:
the cost of one token drops from O(b n d^2 + b n^2 d) to O(b d^2 + b n d). The cache holds
2 * n * d_kv * L numbers per sequence (d_kv = n_kv_heads * d_head; = d for plain multi-head attention).
"""

from __future__ import annotations

import torch

from attnlab.errors import InputError


class LayerCache:
    """One self-attention layer's K and V, (batch, kv_heads, capacity, d_head) each, filled up to `length`.

    K and V are the two halves of one (2, batch, kv_heads, capacity, d_head) buffer, so that attention can write a
    step's keys and values with one copy (`append_kv`, straight from a view of the fused QKV projection) instead
    of one per tensor: a decoding step runs this once per layer, and at one token per step the fixed cost of
    each small kernel is what it costs. Views are taken with `narrow` (one op, not three slices).
    """

    def __init__(self, batch: int, kv_heads: int, capacity: int, d_head: int, dtype, device,
                 window: int | None = None):
        self.kv = torch.empty(2, batch, kv_heads, capacity, d_head, dtype=dtype, device=device)
        self.k, self.v = self.kv[0], self.kv[1]  # views of the one buffer
        self.length = 0  # positions stored
        # a sliding-window layer's cache (KVCache.for_model(bounded=True)): `capacity` is the window, and once full
        # the oldest positions make room (_slide), `dropped` counting them; no query can see them any more
        self.window = window
        self.dropped = 0
        # (1,) int64 holding `length`, set only for the duration of a compiled decoding step (generation/compiled.py):
        # the traced step then writes at this position and attends through it, and its caller moves `length` on
        self.slot: torch.Tensor | None = None

    @property
    def capacity(self) -> int:
        return self.kv.shape[3]

    def _room(self, new: int) -> tuple[int, int]:
        start, end = self.length, self.length + new
        if end > self.capacity:
            raise InputError(f"KV cache is full: it holds {self.capacity} positions, {end} needed; "
                             "allocate it with a larger capacity (prompt + max_new_tokens)")
        return start, end

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Write the new keys/values after the stored ones; return views of everything stored so far (while a
        compiled decoding step traces with `slot` set: (None, None), see slot_write)."""
        if torch.compiler.is_compiling():
            return self._traced_write(torch.stack((k, v)))
        if self.window is not None and self.length + k.shape[2] > self.capacity:
            return self._slide(torch.stack((k, v)))
        start, end = self._room(k.shape[2])
        self.kv[0].narrow(2, start, end - start).copy_(k)
        self.kv[1].narrow(2, start, end - start).copy_(v)
        return self._stored(end)

    def append_kv(self, kv: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """append(kv[0], kv[1]) in one copy; kv: (2, batch, kv_heads, new, d_head), any strides (a view)."""
        if torch.compiler.is_compiling():
            return self._traced_write(kv)
        if self.window is not None and self.length + kv.shape[3] > self.capacity:
            return self._slide(kv)
        start, end = self._room(kv.shape[3])
        self.kv.narrow(3, start, end - start).copy_(kv)
        return self._stored(end)

    @property
    def seen(self) -> int:
        """Positions this layer has been given: those it stores and those a sliding window let go."""
        return self.dropped + self.length

    def _slide(self, kv: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """A full sliding-window cache takes `new` more positions: this forward reads the stored keys and values
        and the new ones, (batch, kv_heads, stored + new, d_head) each (the mask hides those beyond the window),
        and the buffer then keeps the last `capacity` of them. Why: the keys a window has passed are never read
        again, so a Mistral- or Gemma-style layer needs `window` positions, not the whole text (the copy, one
        window per layer and step, is what reading them costs anyway). kv: (2, batch, kv_heads, new, d_head)."""
        both = torch.cat((self.kv.narrow(3, 0, self.length), kv), dim=3)  # (2, batch, kv_heads, stored + new, d)
        keep = min(self.capacity, both.shape[3])
        self.kv.narrow(3, 0, keep).copy_(both.narrow(3, both.shape[3] - keep, keep))
        self.dropped += both.shape[3] - keep
        self.length = keep
        return both[0], both[1]

    def _traced_write(self, kv: torch.Tensor) -> tuple:
        """The same write as seen by torch.compile (generate(compile=True)): index_copy_ at the positions after the
        stored ones (at the slot, where one is set: slot_write), kv (2, batch, kv_heads, new, d_head).
        Why not narrow(...).copy_() there: traced, a write into a slice of the cache (a graph input) followed by a
        read of the stored part became a fresh whole-cache buffer, two whole-cache copies and the attention's own
        K / V copies, per layer and step: SmolLM2's compiled step took 22.5 ms at 400 new tokens against 15.9 ms
        with index_copy_, which inductor performs in place, and attention then reads the cache itself (one
        thread, bench/RESULTS.md, 2026-11-28). Eager keeps narrow + copy_ (no index tensor to build)."""
        if self.slot is not None:
            return self.slot_write(kv)
        start, end = self._room(kv.shape[3])
        self.kv.index_copy_(3, torch.arange(start, end, device=kv.device), kv)
        return self._stored(end)

    def slot_write(self, kv: torch.Tensor) -> tuple[None, None]:
        """A compiled decoding step's write: kv (2, batch, kv_heads, 1, d_head) at position `slot`, read from the
        tensor, not from `length`. Attention then reads the buffer through the same slot (attnlab::decode_attention)
        and the step's caller moves `length` on (generation/compiled.py). Why: with `length` read here, each
        layer's length was an input of the graph of its own (SmolLM2: 30 integers turned into tensors at every call,
        30 more read back as results, and two Python guards on each)."""
        self.kv.index_copy_(3, self.slot, kv)
        return None, None

    def _stored(self, end: int) -> tuple[torch.Tensor, torch.Tensor]:
        # views taken from `kv` alone (not from the k, v attributes): a traced step (torch.compile) then sees one
        # input buffer, not three aliasing ones
        self.length = end
        stored = self.kv.narrow(3, 0, end)
        return stored[0], stored[1]  # (batch, kv_heads, end, d_head) each

    def reorder(self, index: torch.Tensor) -> None:
        """Keep rows `index` of the batch (beam search), in place (the gather makes one temporary copy)."""
        stored = self.kv.narrow(3, 0, self.length)
        stored.copy_(stored.index_select(1, index))


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
                 dtype=torch.float32, device=None, cross: bool = False, windows: list[int | None] | None = None):
        windows = windows or [None] * n_layers
        self.layers = [LayerCache(batch, kv_heads, capacity if w is None else min(capacity, w), d_head, dtype,
                                  device, window=w) for w in windows]
        self.cross = [CrossCache() for _ in range(n_layers)] if cross else None

    @classmethod
    def for_model(cls, model, batch: int, capacity: int, dtype=None, device=None, bounded: bool = False) -> KVCache:
        """A cache sized for `model`'s decoder stack. bounded=True (generation): a layer with a sliding window
        (ModelConfig.sliding_window, every layer but each global_every-th) keeps at most `sliding_window` positions,
        however long the text grows; the others keep `capacity`."""
        config = model.config
        param = next(model.parameters())
        n_layers = config.decoder_layers if config.topology == "encoder-decoder" else config.n_layers
        windows = [config.sliding_window if bounded and config.sliding_layer(i) else None for i in range(n_layers)]
        return cls(n_layers, batch, config.kv_heads, capacity, config.head_dim, dtype or param.dtype,
                   device or param.device, cross=config.topology == "encoder-decoder", windows=windows)

    @property
    def length(self) -> int:
        """Positions seen so far (a bounded sliding-window layer stores fewer: LayerCache.length)."""
        return self.layers[0].seen

    @property
    def window_stored(self) -> int | None:
        """Positions the bounded sliding-window layers store (one count for all of them), or None without any: a
        forward of `seq` new tokens reads window_stored + seq keys in those layers."""
        for layer in self.layers:
            if layer.window is not None:
                return layer.length
        return None

    @property
    def entries(self) -> int:
        """Numbers stored for the tokens seen so far: 2 (K and V) x batch x kv_heads x stored length x d_head, summed
        over the layers (a bounded sliding-window layer stores at most its window)."""
        b, h, _, dh = self.layers[0].k.shape
        return 2 * b * h * dh * sum(layer.length for layer in self.layers)

    @property
    def nbytes(self) -> int:
        return self.entries * self.layers[0].k.element_size()

    @property
    def allocated_bytes(self) -> int:
        return sum(layer.kv.nbytes for layer in self.layers)

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
