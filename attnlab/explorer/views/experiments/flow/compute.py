"""Attention, finished: what one token receives from one attention layer, head by head, down to the residual add.

The Attention tab stops at the weights. The rest of the sub-layer is two more steps, and this view writes them
out for one selected token t of one layer:
  1. per head h: z_h = sum_j w[h, t, j] * V[h, j]                (d_head,)   the values mixed across tokens
  2. per head h: c_h = z_h @ W_O[:, h*d_head:(h+1)*d_head]^T     (d_model,)  that head's share through W_O
  3. attention output = sum_h c_h + b_O; then the residual add: x_t + output (pre-LN), Norm(x_t + output) (post-LN)
Why per head: W_O acting on the concatenated heads is the same as adding the heads' separate projections, so
the output of multi-head attention is literally a sum of one vector per head, and a learner can see which head
moved the token's vector most. Steps 1 and 2 are computed here from the recorded V and weights and the model's
W_O; the recording itself never runs them separately, so a test can hold the sum against the real output.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from attnlab.errors import InputError
from attnlab.explorer.server.common import a_an, check_range, encode, rounded, text_model
from attnlab.explorer.server.registry import Loaded
from attnlab.layers.quantized import QuantizedLinear
from attnlab.recording import record

MAX_CHANNELS = 64  # channels of V, z and the residual sent for display (the norms cover every channel)


def _w_o(lm: Loaded, layer: int) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(W_O as (d_model, n_heads * d_head), b_O or None) of `layer`'s self-attention, in float32. A W_O kept as
    codes (SmolLM2's GGUF blocks, --quantize) is dequantized: this one matrix, for this view only."""
    out = lm.model.blocks[layer].attn.out
    if not isinstance(out, (nn.Linear, QuantizedLinear)):
        raise InputError(f"model {lm.id!r} has a W_O of type {type(out).__name__}; this view reads a linear "
                         "layer's matrix (plain or quantized)")
    weight = out.weight.detach().float()  # QuantizedLinear.weight: a new dequantized (out, in) tensor
    return weight, None if out.bias is None else out.bias.detach().float()


def head_contributions(v: torch.Tensor, weights: torch.Tensor, w_o: torch.Tensor, token: int
                       ) -> tuple[torch.Tensor, torch.Tensor]:
    """For query position `token`: (z, c).
    v: (heads, seq, d_head); weights: (heads, seq, seq); w_o: (d_model, heads * d_head).
    z: (heads, d_head) = sum_j w[h, token, j] v[h, j];  c: (heads, d_model) = z_h @ W_O[:, slice_h]^T."""
    n_heads, _, d_head = v.shape
    z = torch.einsum("hj,hjd->hd", weights[:, token, :], v)  # (heads, d_head)
    w_o_heads = w_o.view(w_o.shape[0], n_heads, d_head)  # (d_model, heads, d_head)
    c = torch.einsum("hd,mhd->hm", z, w_o_heads)  # (heads, d_model)
    return z, c


def attention_flow(lm: Loaded, text: str, layer: int = 0, token: int | None = None,
                   head: int | None = None) -> dict[str, Any]:
    """The rest of one self-attention sub-layer for one token: V, each head's sum w.V, its share through W_O,
    their sum (+ b_O) and the residual add. Decoders and encoders (encoder-decoders: not yet).
    `head`: the head whose slice of W_O is sent for the detail view (default: the one with the longest share)."""
    cfg = text_model(lm)
    if cfg.topology not in ("decoder", "encoder"):
        raise InputError(f"model {lm.id!r} is {a_an(cfg.topology)}; this view follows a decoder's or an encoder's "
                         "self-attention (pick gpt-char, MiniLM, SmolLM2 or the toy)")
    layer = check_range("layer", layer, cfg.n_layers)
    ids, tokens = encode(lm, text)
    token = len(ids) - 1 if token is None else check_range("token", token, len(ids))
    name = f"blocks.{layer}"
    store = record(lm.model, torch.tensor([ids]),
                   names=[f"{name}.resid_pre", f"{name}.attn.v", f"{name}.attn.weights", f"{name}.resid_mid"],
                   stop_after=f"{name}.resid_mid")
    v = store[f"{name}.attn.v"][0].float()  # (heads, seq, d_head): per query head (a shared GQA head repeated)
    weights = store[f"{name}.attn.weights"][0].float()  # (heads, seq, seq)
    w_o, b_o = _w_o(lm, layer)
    z, c = head_contributions(v, weights, w_o, token)
    norms = c.norm(dim=-1)  # (heads,)
    head = int(norms.argmax()) if head is None else check_range("head", head, cfg.n_heads)
    output = c.sum(0) + (b_o if b_o is not None else 0.0)  # (d_model,)
    x = store[f"{name}.resid_pre"][0, token].float()  # (d_model,) the residual stream entering the block
    after = store[f"{name}.resid_mid"][0, token].float()
    pre = cfg.norm_placement == "pre"
    k = min(MAX_CHANNELS, cfg.d_model)
    kd = min(MAX_CHANNELS, cfg.head_dim)
    illustration = lm.illustration or bool(cfg.extra.get("illustration"))
    return {
        "model": lm.id, "layer": layer, "n_layers": cfg.n_layers, "n_heads": cfg.n_heads, "d_head": cfg.head_dim,
        "d_model": cfg.d_model, "token": token, "tokens": tokens, "norm_placement": cfg.norm_placement,
        "channels_shown": k, "head_channels_shown": kd,
        "dims": list(cfg.extra.get("dims", [])) if illustration else None,
        "weights": rounded(weights[:, token, :], 4),  # (heads, seq): the selected token's row of each head
        "v": rounded(v[:, :, :kd], 4),  # (heads, seq, shown d_head)
        "z": rounded(z[:, :kd], 4),  # (heads, shown d_head)
        "z_norm": rounded(z.norm(dim=-1), 4),
        "contribution": rounded(c[:, :k], 4),  # (heads, shown d_model)
        "contribution_norm": rounded(norms, 4),  # (heads,) over all d_model channels
        "head": head,  # W_O's slice for this head: (shown d_model rows, shown d_head columns)
        "w_o_head": rounded(w_o[:k, head * cfg.head_dim: head * cfg.head_dim + kd], 4),
        "bias": rounded(b_o[:k], 4) if b_o is not None else None,
        "output": rounded(output[:k], 4), "output_norm": round(float(output.norm()), 4),
        "residual_in": rounded(x[:k], 4), "residual_in_norm": round(float(x.norm()), 4),
        "residual_sum": rounded((x + output)[:k], 4),
        "residual_out": rounded(after[:k], 4), "residual_out_norm": round(float(after.norm()), 4),
        "residual_rule": "x + attention(Norm(x))" if pre else "Norm(x + attention(x))",
    }
