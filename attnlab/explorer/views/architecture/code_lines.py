"""Where each stage of a forward pass is computed: an equation in the seeds' notation beside the `path:line` of
attnlab that computes it (the rows of docs/architecture.md's equation-to-code table).

Why the line number is found at run time: the code moves as people edit it, and a number written here would go
stale silently. Each row names its file and the text of its line; `where` searches the installed file for that
text, so the page always points at the line as it is now (tests/explorer/test_forward_pass.py checks that every
row is found, and that it is the line docs/architecture.md quotes where the tour names it).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import NamedTuple

PACKAGE = Path(__file__).resolve().parents[3]  # the attnlab package folder


class Line(NamedTuple):
    equation: str  # in the seeds' notation
    start: str  # the start of the line of attnlab that computes it, stripped


# file under the repository root -> {stage: its equation and line in that file}
LINES: dict[str, dict[str, Line]] = {
    "attnlab/models/decoder.py": {
        "tokens": Line("x_i = W_E[token_i]  (a row of the V × d_model table)", "h = self.run(self.tokens(input_ids)"),
    },
    "attnlab/models/encoder.py": {
        "tokens_encoder": Line("x_i = W_E[token_i]  (a row of the V × d_model table)",
                               "h = self.run(self.tokens(input_ids)"),
    },
    "attnlab/models/encoder_decoder.py": {
        "tokens_target": Line("y_i = W_E[token_i]  (the target's rows of the shared table)",
                              "h = self.decoder.run(self.tokens(decoder_input_ids)"),
    },
    "attnlab/models/vit.py": {
        "patches": Line("x_p = flatten(patch_p) W_P + b_P  (a P × P patch as one token)",
                        "return self.proj(pixels).flatten(2).transpose(1, 2)"),
        "cls": Line("X = [x_CLS; x_1; …; x_n]", "x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1)"),
        "classifier": Line("logits = h_CLS W_C + b_C",
                           "logits = self.classifier(h[:, 0]) if self.classifier is not None else None"),
    },
    "attnlab/models/stack.py": {
        "scale": Line("x_i · √d_model", "x = x * self.embed_scale"),
        "learned": Line("X = token embedding + P[pos]  (P: a learned L × d_model table)", "x = x + self.positions("),
        "final_norm": Line("h = Norm(x_N)  (closes a pre-norm stack)", "x = self.final_norm(x)"),
    },
    "attnlab/layers/positions.py": {
        "sinusoidal": Line("PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(…)",
                           "angle = pos / torch.pow(10000.0, 2 * i / d_model)"),
        "rope": Line("(q_i, q_{i+d/2}) turned by the angle pos · θ_i, θ_i = base^(−2i/d_head); the same for k",
                     "return x * cos + rotated * sin"),
    },
    "attnlab/layers/norms.py": {
        "layernorm": Line("LayerNorm(x) = γ ⊙ (x − μ) / √(σ² + ε) + β",
                          "return nn.LayerNorm(config.d_model, eps=config.norm_eps)"),
        "rmsnorm": Line("RMSNorm(x) = γ ⊙ x / √(mean(x²) + ε)", "return RMSNorm(config.d_model, eps=config.norm_eps)"),
    },
    "attnlab/layers/attention.py": {
        "qkv": Line("Q = X W_Q, K = X W_K, V = X W_V  (one fused matmul, split into heads)",
                    "for t in self.qkv(x).split(self.q_width, dim=-1))"),
        "qkv_gqa": Line("Q = X W_Q (n_heads), K = X W_K, V = X W_V (n_kv_heads, each shared by a group of query heads)",
                        "heads = self.qkv(x).view(batch, q_len, h + 2 * g, self.d_head)"),
        "cross_q": Line("Q = Y W_Q  (queries from the target)", "q = self._heads(self.q(x), self.n_heads)"),
        "cross_kv": Line("K = E W_K, V = E W_V  (keys and values from the encoder output E)",
                         "k, v = self.kv(context).split(self.kv_width, dim=-1)"),
        "scores": Line("S = Q K^T / √d_k", "raw = (q @ k.transpose(-2, -1)) * self.scale"),
        "mask": Line("S = Q K^T / √d_k + M,  M_ij = −∞ where j > i  (look-ahead mask)",
                     "raw = raw.masked_fill(~keep, torch.finfo(raw.dtype).min)"),
        "softmax": Line("A = softmax(S)  (each row sums to 1)", "weights = raw.softmax(dim=-1)"),
        "weighted": Line("head_h = A V", "return weights @ v"),
        "concat": Line("Concat(head_1, …, head_h)", "out = out.transpose(1, 2).reshape(batch, q_len, self.q_width)"),
        "w_o": Line("MultiHead(X) = Concat(head_1, …, head_h) W_O", "return self.out(out)"),
        "head_out": Line("head_h W_O[h]  (this head's slice of W_O: its share of the output)",
                         "head_out = torch.einsum(\"bqhd,mhd->bhqm\", z, w_o)"),
    },
    "attnlab/layers/block.py": {
        "pre_norm": Line("x ← x + Sublayer(Norm(x))  (pre-norm)", "return x + self._drop(fn(norm(x)))"),
        "post_norm": Line("x ← Norm(x + Sublayer(x))  (post-norm)", "return norm(x + self._drop(fn(x)))"),
        "cross": Line("Y ← Y + CrossAttn(Norm(Y), E)",
                      "y = self._sublayer(y, self.norm_cross, lambda h: self.cross_attn("),
    },
    "attnlab/layers/feedforward.py": {
        "ffn_plain": Line("h = act(x W_1 + b_1)  (d_ff wide)", "h = self.act(h)"),
        "ffn_gated": Line("h = act(x W_gate) ⊙ (x W_up)  (d_ff wide)", "h = self.act(gate) * up"),
        "ffn_down": Line("FFN(x) = h W_2 + b_2", "return self.down(h)"),
    },
    "attnlab/models/heads.py": {
        "logits": Line("logits = h W_out + b  (W_out = W_E^T when tied)",
                       "return nn.functional.linear(h, weight, self.bias)"),
    },
    "attnlab/generation/sampling.py": {
        "probs": Line("P(next = w) = softmax(logits)_w", "probs = scores.softmax(dim=-1)"),
    },
}
# stage -> (equation, file, the start of its line)
CODE: dict[str, tuple[str, str, str]] = {stage: (line.equation, path, line.start) for path, stages in LINES.items()
                                         for stage, line in stages.items()}


@cache
def line_of(path: str, start: str) -> int | None:
    """The 1-based number of the first line of `path` (under the repository root) whose stripped text starts with
    `start`; None when the file or the line is not there (an install without the file: the page shows the path)."""
    try:
        lines = (PACKAGE.parent / path).read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    return next((i for i, line in enumerate(lines, 1) if line.strip().startswith(start)), None)


def where(stage: str) -> dict[str, str]:
    """{"equation": …, "code": "path:line"} of a stage of CODE (the path alone when its line is not found)."""
    equation, path, start = CODE[stage]
    line = line_of(path, start)
    return {"equation": equation, "code": f"{path}:{line}" if line else path}
