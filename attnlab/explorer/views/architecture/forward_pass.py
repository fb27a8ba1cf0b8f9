"""A forward pass the learner watches: the learner's own text through the selected model, stage by stage, with
the real values of ONE forward (attnlab.record, under the recorder's names), at three levels of detail.

  model  tokens and ids -> embedding rows -> positions -> the blocks (the residual stream, layer by layer) ->
         final norm -> logits -> probabilities -> the next token (ViT: patches in, a class out; an encoder: one
         vector per token out; an encoder-decoder: the source through the encoder, then the target through the
         decoder, which cross-attends to the encoder's output)
  block  norm -> Q, K, V -> every head's weights -> W_O -> residual add -> (cross-attention) -> norm ->
         feed-forward (a gated one's three matrices) -> residual add
  head   Q, K, V of one head (GQA: the K/V head it shares) -> RoPE's turn -> scaled, masked scores -> softmax
         -> weighted sum -> its share of W_O's output

Why values of one forward: everything the recorder names (embed, blocks.i.resid_pre, attn.q/k/v/raw_scores/
weights/z/head_out, resid_mid, resid_cross, ffn.hidden, resid_post, final, logits) comes from one record() call.
The few values between two recorded names (a norm's output, a gated FFN's gate before it multiplies, Q before RoPE
turns it, the FFN's output) are the block's own modules applied to the recorded input of that step: the same
modules on the same numbers, so the same values, without hooks on a model other requests share.

Why summaries: a stage's JSON stays small (SmolLM2: d_model 576, 49,152 logits): matrices show the first
D_SHOWN features of the first T_SHOWN tokens, vocabularies their top TOP_K, each with a note saying what was cut.
Each stage carries its equation in the seeds' notation and the `path:line` computing it (code_lines.py).
"""

from __future__ import annotations

from typing import Any

import torch

from attnlab.explorer.server.common import (
    check_index,
    config_of,
    encode,
    token_text,
    token_texts,
)
from attnlab.explorer.server.registry import Loaded, UnknownItem
from attnlab.explorer.views.architecture.code_lines import where
from attnlab.recording import record

D_SHOWN = 16  # features of a d_model (or d_head, d_ff) vector shown
T_SHOWN = 24  # tokens shown (rows of a matrix, rows and columns of an attention map)
TOP_K = 10  # vocabulary entries shown of logits and probabilities
DECIMALS = 4
PARTS = ("encoder", "decoder")  # an encoder-decoder's two stacks


def _r(t: torch.Tensor) -> list:
    """Rounded to DECIMALS places as nested lists (float64 first, so the rounding is the same everywhere)."""
    t = t.detach().double()
    return (torch.round(t * 10**DECIMALS) / 10**DECIMALS).tolist()


def _matrix(t: torch.Tensor, rows: list[str], what: str, unit: str = "value") -> dict[str, Any]:
    """(seq, width) -> a heatmap of the first T_SHOWN rows and D_SHOWN columns, with a note of what was cut."""
    seq, width = t.shape
    shown = t[:T_SHOWN, :D_SHOWN]
    cut = []
    if width > D_SHOWN:
        cut.append(f"first {D_SHOWN} of {width} {what}")
    if seq > T_SHOWN:
        cut.append(f"first {T_SHOWN} of {seq} tokens")
    return {"kind": "matrix", "rows": rows[:T_SHOWN], "cols": [str(j) for j in range(shown.shape[1])],
            "col_title": what, "values": _r(shown), "unit": unit, "note": "; ".join(cut)}


def _attention_map(t: torch.Tensor, rows: list[str], cols: list[str], unit: str) -> dict[str, Any]:
    """(q, k) scores or weights -> a heatmap; a masked entry (the model's most negative float) is None."""
    shown = t[:T_SHOWN, :T_SHOWN]
    masked = shown <= torch.finfo(torch.float32).min / 2
    values = [[None if m else v for v, m in zip(row, mrow, strict=True)]
              for row, mrow in zip(_r(shown.masked_fill(masked, 0)), masked.tolist(), strict=True)]
    note = f"first {T_SHOWN} of {t.shape[0]} query and {t.shape[1]} key tokens" if max(t.shape) > T_SHOWN else ""
    return {"kind": "attention", "rows": rows[:T_SHOWN], "cols": cols[:T_SHOWN], "values": values, "unit": unit,
            "note": note}


def _bars(values: torch.Tensor, labels: list[str], unit: str, note: str = "") -> dict[str, Any]:
    return {"kind": "bars", "labels": labels, "values": _r(values), "unit": unit, "note": note}


def _stage(sid: str, level: str, title: str, shape: list, dims: str, picture: dict | None, code: str,
           text: str) -> dict[str, Any]:
    return {"id": sid, "level": level, "title": title, "shape": [int(s) for s in shape], "dims": dims,
            "picture": picture, **where(code), "text": text}


class _Run:
    """One recorded forward of a text (or image) model and what the stages read from it."""

    def __init__(self, lm: Loaded, text: str, part: str | None, layer: Any, head: Any):
        cfg = self.cfg = config_of(lm)
        self.lm, self.model = lm, lm.model
        topo = cfg.topology
        if part in (None, ""):
            part = "decoder" if topo == "encoder-decoder" else topo
        allowed = PARTS if topo == "encoder-decoder" else (topo,)
        if part not in allowed:
            shown = repr(part)[:40]
            raise UnknownItem(f"part {shown} does not exist for this {topo}; allowed: {', '.join(allowed)}")
        self.part = part
        self.prefix = f"{part}." if topo == "encoder-decoder" else ""
        self.stack = getattr(self.model, part) if topo == "encoder-decoder" else self.model
        self.layer = check_index("layer", layer, len(self.stack.blocks))
        self.head = check_index("head", head, cfg.n_heads)
        self.cross = self.stack.blocks[self.layer].cross_attn is not None
        self.inputs(text)
        self.store = self.record()

    # ------------------------------------------------------------------ inputs
    def inputs(self, text: str) -> None:
        cfg, lm = self.cfg, self.lm
        self.target_ids = None
        if cfg.topology == "vit":
            from attnlab.explorer.views.vision.images import to_pixels

            pixels, self.grey = to_pixels(cfg, {"mnist": 0})
            self.pixels = pixels[None]  # (1, channels, H, W)
            self.ids = None
            self.tokens = ["[CLS]"] + [f"patch {i + 1}" for i in range(cfg.n_patches)]
            return
        self.ids, _ = encode(lm, text)
        self.tokens = token_texts(lm, self.ids)
        if cfg.topology == "encoder-decoder":
            from attnlab.explorer.views.attention.compute import target_token_ids

            self.target_ids = target_token_ids(lm, self.ids, None)  # the start token + the greedy translation
            self.target_tokens = token_texts(lm, self.target_ids)

    def rows(self, part: str | None = None) -> list[str]:
        """Token labels of the stack `part` (the target's in an encoder-decoder's decoder)."""
        part = part or self.part
        return self.target_tokens if part == "decoder" and self.target_ids is not None else self.tokens

    def record(self) -> dict[str, torch.Tensor]:
        p, i = self.prefix, self.layer
        names = [f"{p}blocks.{i}.{leaf}" for leaf in ("resid_pre", "resid_mid", "resid_post", "ffn.hidden")]
        names += [f"{p}blocks.{i}.attn.{leaf}" for leaf in ("q", "k", "v", "raw_scores", "weights", "z",
                                                           "head_out")]
        if self.cross:
            names += [f"{p}blocks.{i}.cross_attn.{leaf}" for leaf in ("q", "k", "v", "raw_scores", "weights", "z",
                                                                     "head_out")]
            names.append(f"{p}blocks.{i}.resid_cross")
        stacks = [f"{s}." for s in PARTS] if self.cfg.topology == "encoder-decoder" else [""]
        names += [f"{s}{leaf}" for s in stacks for leaf in ("embed", "blocks.*.resid_post", "final")]
        names.append("logits")
        if self.cfg.topology == "vit":
            return record(self.model, self.pixels, names=names)
        ids = torch.tensor([self.ids])
        if self.target_ids is not None:
            return record(self.model, ids, decoder_input_ids=torch.tensor([self.target_ids]), names=names)
        return record(self.model, ids, names=names)

    def get(self, name: str) -> torch.Tensor:
        return self.store[self.prefix + name]

    # ------------------------------------------------------------------ model level
    def model_stages(self) -> list[dict[str, Any]]:
        cfg, d = self.cfg, self.cfg.d_model
        out = []
        if cfg.topology == "encoder-decoder":
            out += self.input_stages("encoder")
            out.append(self.stream_stage("encoder"))
            enc = self.store["encoder.final"][0]
            out.append(_stage("encoder_output", "model", "Encoder output E", [1, enc.shape[0], d],
                              "(batch, source tokens, d_model)", _matrix(enc, self.tokens, "features of d_model"),
                              "final_norm" if self.model.encoder.final_norm is not None else "post_norm",
                              "The source, read once: every decoder layer's cross-attention takes its K and V from "
                              "these vectors, which stay fixed while the target is written."))
            out += self.input_stages("decoder")
            out.append(self.stream_stage("decoder"))
        else:
            out += self.input_stages(cfg.topology)
            out.append(self.stream_stage(cfg.topology))
        out += self.output_stages()
        return out

    def input_stages(self, part: str) -> list[dict[str, Any]]:
        cfg, d = self.cfg, self.cfg.d_model
        stack = getattr(self.model, part) if cfg.topology == "encoder-decoder" else self.model
        prefix = f"{part}." if cfg.topology == "encoder-decoder" else ""
        rows = self.rows(part)
        n = len(rows)
        out = []
        if cfg.topology == "vit":
            size, patch = cfg.image_size, cfg.patch_size
            out.append(_stage("input", "model", "Image → patches", [1, cfg.n_channels, size, size],
                              "(batch, channels, height, width)",
                              {"kind": "image", "grey": self.grey, "size": size, "patch": patch,
                               "note": f"MNIST sample 0, cut into {cfg.n_patches} patches of {patch} × {patch} "
                                       "pixels: each patch is one token"},
                              "patches", "A vision transformer's tokens are image patches: each P × P patch is "
                              "flattened and projected to d_model, then a learned [CLS] vector is put first."))
            with torch.no_grad():
                x = torch.cat((self.model.cls_token.expand(1, -1, -1), self.model.patches(self.pixels)), dim=1)[0]
            out.append(_stage("embedding", "model", "Patch embeddings + [CLS]", [1, n, d], "(batch, tokens, d_model)",
                              _matrix(x, rows, "features of d_model"), "cls",
                              "One d_model vector per patch, [CLS] first: the classifier will read [CLS]'s final "
                              "vector."))
        else:
            target = cfg.topology == "encoder-decoder" and part == "decoder"
            ids = self.target_ids if target else self.ids
            title = "Target tokens" if target else "Source tokens" if cfg.topology == "encoder-decoder" \
                else "Tokens and ids"
            text = ("The decoder's input: the start token, then the translation so far (here the model's own greedy "
                    "translation of the source)." if target else
                    "Your text, cut into the tokenizer's pieces; each piece is a row number of the embedding table.")
            code = "tokens_target" if target else "tokens_encoder" if cfg.topology == "encoder" else "tokens"
            out.append(_stage(f"{prefix}tokens", "model", title, [1, n], "(batch, tokens)",
                              {"kind": "tokens", "tokens": rows, "ids": list(ids)}, code, text))
            table = self.model.tokens if target or getattr(self.model, "source_tokens", None) is None \
                else self.model.source_tokens
            with torch.no_grad():
                x = table(torch.tensor([ids]))[0]
            out.append(_stage(f"{prefix}embedding", "model", "Embedding rows", [1, n, d], "(batch, tokens, d_model)",
                              _matrix(x, rows, "features of d_model"), code,
                              f"Row id of the {cfg.vocab_size:,} × {d} table W_E, one per token: the same token "
                              "gets the same vector wherever it stands."))
        out.append(self.position_stage(stack, prefix, rows))
        return out

    def position_stage(self, stack, prefix: str, rows: list[str]) -> dict[str, Any]:
        cfg, d = self.cfg, self.cfg.d_model
        n = len(rows)
        x = self.store[f"{prefix}embed"][0]
        extras = []
        if stack.embed_scale != 1.0:
            extras.append(f"scaled by √d_model = {stack.embed_scale:.2f} first")
        if stack.token_types is not None:
            extras.append("plus the segment (token-type) vector")
        if stack.embed_norm is not None:
            extras.append("then normalised")
        tail = f" ({'; '.join(extras)})" if extras else ""
        if cfg.position == "rope":
            pos = torch.arange(n)[None]

            def angles_of(rotary) -> torch.Tensor:  # (seq, rope_dim / 2): each rotated pair's angle
                cos, sin = rotary(pos)  # (..., seq, rope_dim) each, the two halves repeated
                return torch.atan2(sin, cos).reshape(n, -1)[:, : cfg.rope_dim // 2]

            picture = _matrix(angles_of(stack.rotary), rows, "rotation frequencies θ_i",
                              unit="angle, radians (wrapped to ±π)")
            local = ""
            if stack.rotary_local is not None:  # Gemma 3: the sliding-window layers turn at a base of their own
                picture.update(kind="before_after", after=_r(angles_of(stack.rotary_local)[:T_SHOWN, :D_SHOWN]),
                               captions=[f"global layers (base {cfg.rope_theta:g})",
                                         f"sliding-window layers (base {cfg.rope_local_theta:g})"])
                local = (f" The sliding-window layers turn at base {cfg.rope_local_theta:g}, the global ones at "
                         f"{cfg.rope_theta:g}: both are shown.")
            return _stage(f"{prefix}positions", "model", "Positions: RoPE (nothing added)", [1, n, cfg.rope_dim // 2],
                          "(batch, tokens, rotated features / 2 angles)", picture, "rope",
                          "Nothing is added to the vectors: in every block, each (q_i, q_{i+d/2}) pair of Q and K is "
                          "turned by the angle shown (position × θ_i), so a score depends only on how far apart two "
                          "tokens are. Open a head to see Q before and after the turn." + local + tail)
        if cfg.position in ("learned", "sinusoidal"):
            code = "learned" if cfg.position == "learned" else "sinusoidal"
            what = "a learned table" if cfg.position == "learned" else "fixed sines and cosines"
            added = stack.positions(torch.arange(n)[None])[0]  # (seq, d_model): the vectors added, P[pos]
            picture = _matrix(added, rows, "features of d_model")
            picture.update(kind="before_after", after=_r(x[:T_SHOWN, :D_SHOWN]),
                           captions=["the position vectors P[pos] (added)", "X = token embedding + P[pos]" +
                                     (" (then " + ", ".join(extras) + ")" if extras else "") + ": enters block 1"])
            return _stage(f"{prefix}positions", "model", f"+ positions ({cfg.position})", [1, n, d],
                          "(batch, tokens, d_model)", picture, code,
                          f"Each token's vector plus the vector of its position, from {what}: the same token at "
                          f"two places now gets two different vectors{tail}.")
        return _stage(f"{prefix}positions", "model", f"Positions ({cfg.position}: a bias on the scores)", [1, n, d],
                      "(batch, tokens, d_model)", _matrix(x, rows, "features of d_model"), "scores",
                      f"Nothing is added to the vectors; each block adds a position bias to its scores{tail}.")

    def stream_stage(self, part: str) -> dict[str, Any]:
        """The residual stream through every block: the root mean square of each token's vector after each layer."""
        prefix = f"{part}." if self.cfg.topology == "encoder-decoder" else ""
        stack = getattr(self.model, part) if self.cfg.topology == "encoder-decoder" else self.model
        layers = [self.store[f"{prefix}embed"][0]]
        layers += [self.store[f"{prefix}blocks.{i}.resid_post"][0] for i in range(len(stack.blocks))]
        rms = torch.stack([x.pow(2).mean(-1).sqrt() for x in layers])  # (layers + 1, seq)
        # log10: a few tokens (often the first) grow vectors hundreds of times larger than the rest, which a linear
        # colour scale would leave as the only visible cells
        rows = self.rows(part)
        shown = rms.T[:T_SHOWN].clamp_min(1e-12).log10()  # (seq, layers + 1): every layer, tokens cut
        picture = {"kind": "matrix", "rows": rows[:T_SHOWN], "cols": [str(i) for i in range(rms.shape[0])],
                   "col_title": "after block l (0: the embedding)", "values": _r(shown),
                   "unit": "log₁₀ of the vector's root mean square", "scale": "sequential",
                   "note": f"first {T_SHOWN} of {len(rows)} tokens" if len(rows) > T_SHOWN else ""}
        n_layers = len(stack.blocks)
        causal = "causal mask" if stack.causal else "no mask"
        return _stage(f"{prefix}blocks", "model", f"{n_layers} blocks · {causal}", [1, len(rows),
                      self.cfg.d_model], "(batch, tokens, d_model)", picture, "pre_norm" if
                      self.cfg.norm_placement == "pre" else "post_norm",
                      "x_{l+1} = Block_l(x_l), N times: each block adds attention's and the feed-forward network's "
                      "outputs to the residual stream. The heatmap shows how large each token's vector is after "
                      "each block (1 on this scale is 10, 2 is 100). Open a block to see its steps.")

    def output_stages(self) -> list[dict[str, Any]]:
        cfg, lm = self.cfg, self.lm
        prefix = "decoder." if cfg.topology == "encoder-decoder" else ""
        stack = self.model.decoder if cfg.topology == "encoder-decoder" else self.model
        rows = self.rows("decoder" if cfg.topology == "encoder-decoder" else None)
        n, d = len(rows), cfg.d_model
        out = []
        final = self.store[f"{prefix}final"][0]
        if stack.final_norm is not None:
            norm = "RMSNorm" if cfg.norm == "rmsnorm" else "LayerNorm"
            out.append(_stage(f"{prefix}final_norm", "model", f"Final {norm}", [1, n, d], "(batch, tokens, d_model)",
                              _matrix(final, rows, "features of d_model"), "final_norm",
                              "A pre-norm stack never normalises its residual stream inside; one last norm does, "
                              "before the head reads the vectors."))
        logits = self.store.get("logits")
        if logits is None:  # an encoder without a head: its output is the vectors
            out.append(_stage("output", "model", "Output: one vector per token", [1, n, d],
                              "(batch, tokens, d_model)", _matrix(final, rows, "features of d_model"),
                              "final_norm" if stack.final_norm is not None else "post_norm",
                              "N tokens in, N context-aware vectors out. The [CLS] row (or the mean of the rows) "
                              "stands for the whole text: compare two texts' vectors for meaning."))
            return out
        if cfg.topology == "vit":
            row = logits[0].float()
            labels = [str(c) for c in range(row.shape[0])]
            top = row.argsort(descending=True)[:TOP_K]
            out.append(_stage("logits", "model", "Class logits from [CLS]", list(logits.shape), "(batch, classes)",
                              _bars(row[top], [labels[int(i)] for i in top], "logit"), "classifier",
                              "The classifier reads only the [CLS] vector: one score per class."))
            probs = row.softmax(-1)
            out.append(_stage("probs", "model", "Class probabilities", list(logits.shape), "(batch, classes)",
                              _bars(probs[top], [labels[int(i)] for i in top], "probability"), "probs",
                              "softmax turns the scores into probabilities that sum to 1."))
            best = int(row.argmax())
            out.append(_stage("next", "model", f"Prediction: {labels[best]}", [1], "(batch)",
                              {"kind": "answer", "token": labels[best], "probability": round(float(probs[best]), 4),
                               "what": "class"}, "classifier",
                              "The most probable class is the model's answer."))
            return out
        position = n - 1
        if cfg.topology == "encoder":  # a masked-LM head guesses a token at every position; show the last real one
            specials = lm.tokenizer.special_ids if lm.tokenizer is not None else set()
            real = [i for i, t in enumerate(self.ids) if t not in specials]
            position = real[-1] if real else n - 1
        row = logits[0, position].float()
        top = row.argsort(descending=True)[:TOP_K]
        labels = [token_text(lm, int(i)) for i in top]
        at = f"at token {position + 1} ({rows[position]!r})"
        note = f"top {TOP_K} of {row.shape[0]:,}, {at}"
        tied = " W_out is W_E^T: the embedding table read backwards." if cfg.tie_embeddings else ""
        out.append(_stage("logits", "model", "Logits", list(logits.shape), "(batch, tokens, vocabulary)",
                          _bars(row[top], labels, "logit", note), "logits",
                          f"One score per vocabulary entry for every token: h W_out.{tied}"))
        probs = row.softmax(-1)
        out.append(_stage("probs", "model", "Probabilities", list(logits.shape), "(batch, tokens, vocabulary)",
                          _bars(probs[top], labels, "probability", note), "probs",
                          "softmax over the vocabulary: positive numbers that sum to 1."))
        best = int(row.argmax())
        what = "masked-LM guess" if cfg.topology == "encoder" else "next token"
        text = ("A masked-LM head was trained to fill [MASK]: this is its guess at the last word." if
                cfg.topology == "encoder" else "The most probable token (greedy choice); generation appends it and "
                "runs the forward again.")
        out.append(_stage("next", "model", f"The {what}", [1], "(batch)",
                          {"kind": "answer", "token": token_text(lm, best), "id": best,
                           "probability": round(float(probs[best]), 4), "what": what}, "probs", text))
        return out

    # ------------------------------------------------------------------ block level
    def norm_text(self) -> str:
        return "RMSNorm" if self.cfg.norm == "rmsnorm" else "LayerNorm"

    def block_stages(self) -> list[dict[str, Any]]:
        cfg, d, i = self.cfg, self.cfg.d_model, self.layer
        block = self.stack.blocks[i]
        rows, n = self.rows(), len(self.rows())
        pre = cfg.norm_placement == "pre"
        x = self.get(f"blocks.{i}.resid_pre")[0]
        mid = self.get(f"blocks.{i}.resid_mid")[0]
        post = self.get(f"blocks.{i}.resid_post")[0]
        feat = "features of d_model"
        norm = self.norm_text()
        code_norm = "rmsnorm" if cfg.norm == "rmsnorm" else "layernorm"
        add = "pre_norm" if pre else "post_norm"
        out = [_stage("resid_pre", "block", f"Block {i + 1}: input x", [1, n, d], "(batch, tokens, d_model)",
                      _matrix(x, rows, feat), add, "The residual stream entering this block.")]
        with torch.no_grad():
            if pre:
                out.append(_stage("norm1", "block", f"{norm} before attention", [1, n, d], "(batch, tokens, d_model)",
                                  _matrix(block.norm1(x[None])[0], rows, feat), code_norm,
                                  "Each token's vector rescaled (one vector at a time); the residual stream x itself "
                                  "is left as it is."))
            out += self.attention_block_stages("attn", rows, rows)
            attn_out = self.attention_output("attn")
            out.append(_stage("attn_out", "block", "Attention output (× W_O)", [1, n, d], "(batch, tokens, d_model)",
                              _matrix(attn_out, rows, feat), "w_o",
                              "The heads' results side by side (Concat), projected back to d_model by W_O."))
            out.append(_stage("resid_mid", "block", "Residual add" if pre else f"Residual add, then {norm}",
                              [1, n, d], "(batch, tokens, d_model)", _matrix(mid, rows, feat), add,
                              "x + MultiHead(Norm(x)): attention's output is added to the stream." if pre else
                              "Norm(x + MultiHead(x)): added to the stream, then normalised."))
            y = mid
            if self.cross:
                out += self.cross_block_stages(block, y)
                y = self.get(f"blocks.{i}.resid_cross")[0]
            out += self.ffn_stages(block, y, post, rows)
        return out

    def attention_output(self, attn: str) -> torch.Tensor:
        """Sum over heads of each head's W_O share (+ W_O's bias): the sublayer's output, (seq, d_model)."""
        module = getattr(self.stack.blocks[self.layer], "attn" if attn == "attn" else "cross_attn")
        out = self.get(f"blocks.{self.layer}.{attn}.head_out")[0].sum(0)
        return out + module.out.bias if module.out.bias is not None else out

    def attention_block_stages(self, attn: str, rows: list[str], cols: list[str]) -> list[dict[str, Any]]:
        cfg, i = self.cfg, self.layer
        q = self.get(f"blocks.{i}.{attn}.q")
        n_q, n_k = q.shape[2], self.get(f"blocks.{i}.{attn}.k").shape[2]
        h, g = cfg.n_heads, cfg.kv_heads
        group = h // g
        cross = attn == "cross_attn"
        d, dh = cfg.d_model, cfg.head_dim
        heads = {"kind": "heads", "n_heads": h, "kv_heads": g,
                 "matrices": [["W_Q", d, h * dh], ["W_K", d, g * dh], ["W_V", d, g * dh], ["W_O", h * dh, d]],
                 "groups": [list(range(k * group, (k + 1) * group)) for k in range(g)],
                 "d_head": cfg.head_dim, "note": f"{h} query heads; {g} K/V heads" + (
                     f", each shared by {group} query heads (grouped-query attention)" if g != h else "")}
        qkv_text = ("Queries from the target; keys and values from the encoder output E." if cross else
                    "Each token's vector times W_Q, W_K, W_V, split into heads of d_head features.")
        if g != h and not cross:
            qkv_text += f" Grouped-query attention: {g} K/V heads, each shared by {group} query heads."
        out = [_stage(f"{attn}.qkv", "block", "Cross-attention: Q, K, V" if cross else "Q, K, V per head",
                      [1, h, n_q, cfg.head_dim], "(batch, heads, tokens, d_head)", heads,
                      "cross_kv" if cross else "qkv_gqa" if g != h else "qkv", qkv_text)]
        weights = self.get(f"blocks.{i}.{attn}.weights")[0]  # (heads, q, k)
        maps = [_attention_map(weights[j], rows, cols, "attention weight") for j in range(h)]
        causal = not cross and self.stack.causal
        out.append(_stage(f"{attn}.weights", "block", "Every head's attention" if not cross else
                          "Every head's cross-attention", [1, h, n_q, n_k], "(batch, heads, query, key)",
                          {"kind": "heads_attention", "maps": maps, "unit": "attention weight",
                           "note": "rows: queries; columns: keys" + ("; above the diagonal: masked" if causal else "")},
                          "softmax", "softmax(Q K^T / √d_k" + (" + M" if causal else "") + ") for each head: who "
                          "each token reads from. Open one head to follow its arithmetic."))
        return out

    def cross_block_stages(self, block, y: torch.Tensor) -> list[dict[str, Any]]:
        cfg, i, d = self.cfg, self.layer, self.cfg.d_model
        rows, n = self.rows(), len(self.rows())
        out = []
        pre = cfg.norm_placement == "pre"
        if pre:
            out.append(_stage("norm_cross", "block", f"{self.norm_text()} before cross-attention", [1, n, d],
                              "(batch, tokens, d_model)", _matrix(block.norm_cross(y[None])[0], rows,
                                                                  "features of d_model"),
                              "rmsnorm" if cfg.norm == "rmsnorm" else "layernorm", "The target's vectors rescaled."))
        out += self.attention_block_stages("cross_attn", rows, self.tokens)
        out.append(_stage("cross_out", "block", "Cross-attention output (× W_O)", [1, n, d],
                          "(batch, tokens, d_model)", _matrix(self.attention_output("cross_attn"), rows,
                                                              "features of d_model"), "w_o",
                          "What each target token read from the source, projected by W_O."))
        out.append(_stage("resid_cross", "block", "Residual add" + ("" if pre else f", then {self.norm_text()}"),
                          [1, n, d], "(batch, tokens, d_model)",
                          _matrix(self.get(f"blocks.{i}.resid_cross")[0], rows, "features of d_model"), "cross",
                          "The source's information joins the target's residual stream."))
        return out

    def ffn_stages(self, block, y: torch.Tensor, post: torch.Tensor, rows: list[str]) -> list[dict[str, Any]]:
        cfg, i, d, ff = self.cfg, self.layer, self.cfg.d_model, self.cfg.d_ff
        n = len(rows)
        pre = cfg.norm_placement == "pre"
        norm = self.norm_text()
        hidden = self.get(f"blocks.{i}.ffn.hidden")[0]
        out = []
        if block.parallel:  # GPT-NeoX: the FFN reads the block's input, as attention did, not the stream after it
            y = self.get(f"blocks.{i}.resid_pre")[0]
        h_in = block.norm2(y[None])[0] if pre else y
        if pre:
            out.append(_stage("norm2", "block", f"{norm} before the feed-forward network", [1, n, d],
                              "(batch, tokens, d_model)", _matrix(h_in, rows, "features of d_model"),
                              "rmsnorm" if cfg.norm == "rmsnorm" else "layernorm", "Each vector rescaled again."))
        if cfg.gated:
            gate, up = block.ffn.up(h_in[None])[0].chunk(2, dim=-1)
            act = block.ffn.act(gate)
            out.append(_stage("ffn.gate", "block", f"FFN: gate act(x W_gate) ({cfg.activation})", [1, n, ff],
                              "(batch, tokens, d_ff)", _matrix(act, rows, "features of d_ff"), "ffn_gated",
                              "The first of three matrices, W_gate, then the activation: how far each feature's "
                              "gate is open."))
            out.append(_stage("ffn.up", "block", "FFN: x W_up", [1, n, ff], "(batch, tokens, d_ff)",
                              _matrix(up, rows, "features of d_ff"), "ffn_gated",
                              "The second matrix, W_up: the values the gate lets through."))
            out.append(_stage("ffn.hidden", "block", "FFN: gate ⊙ up", [1, n, ff], "(batch, tokens, d_ff)",
                              _matrix(hidden, rows, "features of d_ff"), "ffn_gated",
                              "Multiplied feature by feature: each position on its own, no mixing across tokens."))
        else:
            out.append(_stage("ffn.hidden", "block", f"FFN: act(x W_1 + b_1) ({cfg.activation})", [1, n, ff],
                              "(batch, tokens, d_ff)", _matrix(hidden, rows, "features of d_ff"), "ffn_plain",
                              f"Each position widened to d_ff = {ff} features and passed through the activation: "
                              "the same MLP for every token, no mixing across tokens."))
        down = block.ffn.down(hidden[None])[0]
        out.append(_stage("ffn.out", "block", "FFN: × W_2", [1, n, d], "(batch, tokens, d_model)",
                          _matrix(down, rows, "features of d_model"), "ffn_down",
                          ("The third matrix" if cfg.gated else "The second matrix") + ", W_2, back to d_model."))
        out.append(_stage("resid_post", "block", "Residual add" + ("" if pre else f", then {norm}"), [1, n, d],
                          "(batch, tokens, d_model)", _matrix(post, rows, "features of d_model"),
                          "pre_norm" if pre else "post_norm",
                          "The block's output: the stream with both sublayers' outputs added; the next block "
                          "reads it."))
        return out

    # ------------------------------------------------------------------ head level
    def head_stages(self) -> list[dict[str, Any]]:
        out = self.one_head("attn", self.rows(), self.rows())
        if self.cross:
            out += self.one_head("cross_attn", self.rows(), self.tokens)
        return out

    def one_head(self, attn: str, rows: list[str], cols: list[str]) -> list[dict[str, Any]]:
        cfg, i, j = self.cfg, self.layer, self.head
        cross = attn == "cross_attn"
        group = cfg.n_heads // cfg.kv_heads
        kv = j // group
        get = lambda leaf: self.get(f"blocks.{i}.{attn}.{leaf}")[0, j]  # noqa: E731
        q, k, v = get("q"), get("k"), get("v")
        dh = cfg.head_dim
        feat = "features of d_head"
        tag = "cross-attention " if cross else ""
        shared = (f" K/V head {kv + 1} of {cfg.kv_heads}, shared by query heads "
                  f"{', '.join(str(h + 1) for h in range(kv * group, (kv + 1) * group))}." if group > 1 else "")
        out = [_stage(f"{attn}.q", "head", f"Head {j + 1}: {tag}Q", [1, 1, len(rows), dh], "(batch, 1 head, tokens, "
                      "d_head)", _matrix(q, rows, feat), "cross_q" if cross else "qkv_gqa" if group > 1 else "qkv",
                      "What each token is looking for" + (" (from the target)." if cross else ".")),
               _stage(f"{attn}.k", "head", f"Head {j + 1}: {tag}K", [1, 1, len(cols), dh], "(batch, 1 head, tokens, "
                      "d_head)", _matrix(k, cols, feat), "cross_kv" if cross else "qkv_gqa" if group > 1 else "qkv",
                      "What each token offers to be found by" + (" (from the source)." if cross else ".") + shared),
               _stage(f"{attn}.v", "head", f"Head {j + 1}: {tag}V", [1, 1, len(cols), dh], "(batch, 1 head, tokens, "
                      "d_head)", _matrix(v, cols, feat), "cross_kv" if cross else "qkv_gqa" if group > 1 else "qkv",
                      "What each token hands over when it is read." + shared)]
        if cfg.position == "rope" and not cross:
            out.append(self.rope_stage(q, rows))
        raw = get("raw_scores")
        causal = not cross and self.stack.causal
        out.append(_stage(f"{attn}.raw_scores", "head", f"Head {j + 1}: scaled{', masked' if causal else ''} scores",
                          [1, 1, len(rows), len(cols)], "(batch, 1 head, query, key)",
                          _attention_map(raw, rows, cols, "score"), "mask" if causal else "scores",
                          f"Q K^T / √d_k with √d_k = √{dh} = {dh ** 0.5:.2f}" + (
                              ": a query may not see later keys; those get −∞ (blank cells)." if causal else
                              ": every token may see every token (no mask).")))
        out.append(_stage(f"{attn}.weights", "head", f"Head {j + 1}: softmax", [1, 1, len(rows), len(cols)],
                          "(batch, 1 head, query, key)", _attention_map(get("weights"), rows, cols,
                                                                       "attention weight"), "softmax",
                          "Each row turned into weights that sum to 1 (a masked key gets exactly 0)."))
        z = self.get(f"blocks.{i}.{attn}.z")[0, :, j]  # (seq, d_head)
        out.append(_stage(f"{attn}.z", "head", f"Head {j + 1}: weighted sum A V", [1, len(rows), 1, dh],
                          "(batch, tokens, 1 head, d_head)", _matrix(z, rows, feat), "weighted",
                          "Each token's mix of the values it attends to, by those weights."))
        head_out = self.get(f"blocks.{i}.{attn}.head_out")[0, j]  # (seq, d_model)
        out.append(_stage(f"{attn}.head_out", "head", f"Head {j + 1}: its share of × W_O", [1, 1, len(rows),
                          cfg.d_model], "(batch, 1 head, tokens, d_model)",
                          _matrix(head_out, rows, "features of d_model"), "head_out",
                          "This head's d_head columns of W_O: what it adds to the residual stream. The heads' "
                          "shares summed are the attention output."))
        return out

    def rope_stage(self, q_after: torch.Tensor, rows: list[str]) -> dict[str, Any]:
        """Q of this head before RoPE turned it (the block's own W_Q on its normed input) and after (recorded)."""
        cfg, i, j = self.cfg, self.layer, self.head
        block = self.stack.blocks[i]
        x = self.get(f"blocks.{i}.resid_pre")
        with torch.no_grad():
            h_in = block.norm1(x) if cfg.norm_placement == "pre" else x
            width = cfg.n_heads * cfg.head_dim
            q_before = block.attn.qkv(h_in)[..., :width].view(*x.shape[:2], cfg.n_heads, cfg.head_dim)
            if block.attn.q_norm is not None:  # Qwen3's per-head norm comes before the turn
                q_before = block.attn.q_norm(q_before)
            q_before = q_before[0, :, j]
        picture = _matrix(q_before, rows, "features of d_head")
        picture.update(kind="before_after", after=_r(q_after[:T_SHOWN, :D_SHOWN]),
                       captions=["Q before RoPE", "Q after RoPE (what the scores use)"])
        return _stage("attn.rope", "head", f"Head {self.head + 1}: RoPE turns Q (and K)", [1, 1, len(rows),
                      cfg.head_dim], "(batch, 1 head, tokens, d_head)", picture, "rope",
                      "Q before and after the turn: feature i and feature i + d_head/2 form a pair turned by "
                      "position × θ_i. The first token (position 0) is not turned; the length of each pair is kept.")


def forward_pass(lm: Loaded, text: str, layer: int = 0, head: int = 0, part: str | None = None) -> dict[str, Any]:
    """The stages of one forward of `text` (a ViT: MNIST sample 0) through `lm`, at the model level, inside block
    `layer` (of `part`: an encoder-decoder's "encoder" or "decoder") and inside its head `head`."""
    run = _Run(lm, text, part, layer, head)
    cfg = run.cfg
    with torch.no_grad():
        stages = run.model_stages() + run.block_stages() + run.head_stages()
    return {"model": lm.id, "topology": cfg.topology, "part": run.part,
            "parts": list(PARTS) if cfg.topology == "encoder-decoder" else [cfg.topology],
            "layer": run.layer, "head": run.head, "n_layers": len(run.stack.blocks), "n_heads": cfg.n_heads,
            "kv_heads": cfg.kv_heads, "d_model": cfg.d_model, "d_head": cfg.head_dim, "d_ff": cfg.d_ff,
            "tokens": run.rows(), "source_tokens": run.tokens, "stages": stages,
            "shown": {"features": D_SHOWN, "tokens": T_SHOWN, "top": TOP_K, "decimals": DECIMALS}}
