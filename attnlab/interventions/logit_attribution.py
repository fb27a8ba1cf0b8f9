"""Direct logit attribution: how much each head and each MLP writes the answer straight into the logits.

In a pre-norm model the residual stream read by the final norm is a sum of parts:

    final_resid = embed + sum over layers l of (sum over heads h of head_out[l, h] + b_O[l] + mlp[l])

and the logit difference answer - contrast is (final_norm(final_resid) * s) . dW + db, with dW = W_U[answer] -
W_U[contrast], db the head's vocabulary bias difference and s the head's logit_scale. The final norm is not
linear: it divides by the scale of the WHOLE residual stream (LayerNorm's standard deviation, RMSNorm's root
mean square). The approximation here, TransformerLens's: that scale is taken from the full residual stream of
this run and held fixed, so each part's direct term is

    direct(part) = (gamma * centre(part) / scale) . dW * s       (centre: minus its mean for LayerNorm only)

and the terms add up exactly to the logit difference once the norm's own bias beta (s * beta . dW) and db are
added (`constant`). "Direct" means through the unembedding only: what a head writes that later layers read is
not counted here (activation patching counts it).

Needs a stack whose residual stream is a sum of what each sub-layer adds and reaches the head unchanged except
for a final norm (decoders, and encoders with a plain masked-LM head): pre-norm blocks, and blocks that normalise
each sub-layer's OUTPUT before adding it (OLMo 2's norm_placement="output", Gemma 2/3's "sandwich"). There a
head's part is what it adds to the stream through that output norm, read the same way: the output norm's scale
is taken from the attention's whole output in this run and held fixed, so each head's share is
gamma_out * centre(head_out) / scale_out, W_O's bias takes the rest (with beta_out), and the parts of a layer add
up exactly to what its attention added. A post-norm block re-normalises the stream itself after every
sub-layer, and BERT's head transform (dense + activation + norm) is non-linear, so neither decomposes: refused
by name.
"""

from __future__ import annotations

import torch
from torch import nn

from attnlab.errors import InputError
from attnlab.interventions.checks import check_one_sentence, checked_index
from attnlab.interventions.readouts import checked_position, lm_parts, read_row
from attnlab.recording import record


def _check_model(model: nn.Module) -> None:
    """Refuse the models whose logits are not a linear read of a sum of parts (module docstring)."""
    lm_parts(model)
    cfg = model.config
    if cfg.norm_placement not in ("pre", "output", "sandwich"):
        raise InputError(f"direct logit attribution needs blocks that add their sub-layers' outputs to the residual "
                         f"stream (norm_placement 'pre', 'output' or 'sandwich'); this one is norm_placement="
                         f"{cfg.norm_placement!r}: each block re-normalises the residual stream, so its parts do "
                         "not add up to what the head reads")
    if cfg.lm_head_transform:
        raise InputError("direct logit attribution needs an LM head that is one projection; this one first "
                         "applies dense + activation + norm (a BERT masked-LM head), which is not linear")
    if getattr(model, "blocks", None) is None or cfg.topology not in ("decoder", "encoder"):
        raise InputError(f"direct logit attribution reads a decoder or an encoder; got {cfg.topology!r}")


def _unembed_direction(model: nn.Module, answer: int, contrast: int | None) -> tuple[torch.Tensor, float]:
    """-> (dW (d_model,) = W_U[answer] - W_U[contrast] times logit_scale, db): the direction a part is read along.

    The rows come from the tied embedding when there is one (a quantized table dequantizes only those rows)."""
    head = model.lm_head
    ids = torch.tensor([answer] if contrast is None else [answer, contrast])
    if model.config.tie_embeddings and getattr(model, "tokens", None) is not None:
        rows = model.tokens(ids).double()  # (1|2, d_model)
    else:
        rows = head.proj.weight[ids].double()
    direction = rows[0] - (rows[1] if contrast is not None else 0)
    bias = 0.0
    if head.bias is not None:
        bias = float(head.bias[answer]) - (float(head.bias[contrast]) if contrast is not None else 0.0)
    return direction * head.scale, bias


def _norm_read(norm: nn.Module | None, resid: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, bool, torch.Tensor]:
    """-> (gamma (d,), beta (d,), centres, scale ()) of the final norm on the full residual stream `resid` (d,).

    scale: LayerNorm's sqrt(var + eps) or RMSNorm's sqrt(mean(x^2) + eps), of this run, then held fixed."""
    d = resid.shape[-1]
    ones, zeros = torch.ones(d, dtype=torch.float64), torch.zeros(d, dtype=torch.float64)
    if norm is None:
        return ones, zeros, False, torch.tensor(1.0, dtype=torch.float64)
    gamma = norm.weight.double() if norm.weight is not None else ones
    eps = norm.eps if norm.eps is not None else torch.finfo(torch.float32).eps
    if isinstance(norm, nn.LayerNorm):
        beta = norm.bias.double() if norm.bias is not None else zeros
        return gamma, beta, True, (resid.var(unbiased=False) + eps).sqrt()
    return gamma, zeros, False, (resid.pow(2).mean() + eps).sqrt()


def direct_logit_attribution(model: nn.Module, ids: torch.Tensor, answer: int, *, contrast: int | None = None,
                             position: int = -1) -> dict[str, torch.Tensor]:
    """Each part's direct contribution to logit[answer] - logit[contrast] at `position` (module docstring).

    ids: (1, seq), one sentence. contrast None: the answer's logit alone. One recorded forward (float64 sums).
    -> {"heads": (layers, heads), "attn_bias": (layers,) W_O's bias, "mlp": (layers,), "embed": (),
        "constant": () the norm's beta and the head's bias, "total": () the sum of all of them,
        "logit_diff": () the model's own logit difference (equal to total up to float rounding),
        "scale": () the final norm's scale taken from the full residual stream}

        >>> dla = attnlab.direct_logit_attribution(model, ids, answer=mary, contrast=john)
        >>> dla["heads"].shape            # (layers, heads); dla["total"] == dla["logit_diff"]
    """
    _check_model(model)
    check_one_sentence(model, ids, "ids")
    position = checked_position(position, ids.shape[1])
    vocab = model.config.vocab_size
    answer = checked_index(answer, "answer", vocab, "token id")
    contrast = None if contrast is None else checked_index(contrast, "contrast", vocab, "token id")
    with torch.no_grad():
        return _attribute(model, ids, answer, contrast, position)


def _attribute(model: nn.Module, ids: torch.Tensor, answer: int, contrast: int | None,
               position: int) -> dict[str, torch.Tensor]:
    """direct_logit_attribution's work on checked arguments (under no_grad: parameters are read, not trained)."""
    causal, _ = lm_parts(model)
    run = ids[:, : position + 1] if causal else ids
    names = ["embed", "logits", "blocks.*.attn.head_out", "blocks.*.resid_mid", "blocks.*.resid_post"]
    rec = record(model, run, names=names)
    row = read_row(model, position)  # the stream's row the head reads (the previous one under predict_from_previous)
    at = (lambda name: rec[name][0, row].double())  # (d_model,) at the read row
    n_layers = len(model.blocks)
    parts_mlp = torch.stack([at(f"blocks.{i}.resid_post") - at(f"blocks.{i}.resid_mid") for i in range(n_layers)])
    heads = torch.stack([rec[f"blocks.{i}.attn.head_out"][0, :, row].double()
                         for i in range(n_layers)])  # (layers, heads, d_model)
    out_bias = torch.stack([_attn_bias(block, heads.shape[-1]) for block in model.blocks])  # (layers, d_model)
    if model.config.norm_placement in ("output", "sandwich"):  # what each head adds through the output norm
        heads, out_bias = _through_output_norms(model, heads, out_bias)
    resid = at(f"blocks.{n_layers - 1}.resid_post") if n_layers else at("embed")
    gamma, beta, centres, scale = _norm_read(getattr(model, "final_norm", None), resid)
    direction, bias = _unembed_direction(model, answer, contrast)
    read = gamma * direction / scale  # (d_model,): a part's direct term is centre(part) . read

    def direct(parts: torch.Tensor) -> torch.Tensor:  # (..., d_model) -> (...)
        if centres:
            parts = parts - parts.mean(dim=-1, keepdim=True)
        return parts @ read

    logits = rec["logits"][0, position].double()  # (vocab,) the model's own
    out = {"heads": direct(heads), "attn_bias": direct(out_bias), "mlp": direct(parts_mlp),
           "embed": direct(at("embed")), "constant": torch.tensor(float(beta @ direction) + bias,
                                                                  dtype=torch.float64),
           "logit_diff": logits[answer] - (logits[contrast] if contrast is not None else 0), "scale": scale}
    out["total"] = out["heads"].sum() + out["attn_bias"].sum() + out["mlp"].sum() + out["embed"] + out["constant"]
    return out


def _through_output_norms(model: nn.Module, heads: torch.Tensor,
                          out_bias: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """heads (layers, heads, d_model) and W_O's biases (layers, d_model) as they reach the residual stream through
    each block's attention output norm (norm1, or the sandwich's `after`): its scale from the attention's whole
    output (the heads' sum + the bias) of this run, held fixed; the norm's beta goes with the bias."""
    placed_heads, placed_bias = [], []
    for block, layer_heads, bias in zip(model.blocks, heads, out_bias, strict=True):
        norm = block.norm1 if model.config.norm_placement == "output" else block.norm1.after
        gamma, beta, centres, scale = _norm_read(norm, layer_heads.sum(0) + bias)
        if centres:
            layer_heads = layer_heads - layer_heads.mean(-1, keepdim=True)
            bias = bias - bias.mean()
        placed_heads.append(gamma * layer_heads / scale)
        placed_bias.append(gamma * bias / scale + beta)
    return torch.stack(placed_heads), torch.stack(placed_bias)


def _attn_bias(block: nn.Module, d_model: int) -> torch.Tensor:
    """W_O's bias of a block's attention (zeros when it has none): added once per position, owned by no head."""
    bias = getattr(block.attn.out, "bias", None)
    return bias.detach().double() if bias is not None else torch.zeros(d_model, dtype=torch.float64)
