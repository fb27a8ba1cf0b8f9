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

PACKAGE = Path(__file__).resolve().parents[3]  # the attnlab package folder

# stage -> (equation in the seeds' notation, file under the repository root, the start of its line, stripped)
CODE: dict[str, tuple[str, str, str]] = {
    "tokens": ("x_i = W_E[token_i]  (a row of the V × d_model table)", "attnlab/models/decoder.py",
               "h = self.run(self.tokens(input_ids)"),
    "tokens_encoder": ("x_i = W_E[token_i]  (a row of the V × d_model table)", "attnlab/models/encoder.py",
                       "h = self.run(self.tokens(input_ids)"),
    "tokens_target": ("y_i = W_E[token_i]  (the target's rows of the shared table)",
                      "attnlab/models/encoder_decoder.py", "h = self.decoder.run(self.tokens(decoder_input_ids)"),
    "patches": ("x_p = flatten(patch_p) W_P + b_P  (a P × P patch as one token)", "attnlab/models/vit.py",
                "return self.proj(pixels).flatten(2).transpose(1, 2)"),
    "cls": ("X = [x_CLS; x_1; …; x_n]", "attnlab/models/vit.py",
            "x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1)"),
    "scale": ("x_i · √d_model", "attnlab/models/stack.py", "x = x * self.embed_scale"),
    "learned": ("X = token embedding + P[pos]  (P: a learned L × d_model table)", "attnlab/models/stack.py",
                "x = x + self.positions("),
    "sinusoidal": ("PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(…)",
                   "attnlab/layers/positions.py", "angle = pos / torch.pow(10000.0, 2 * i / d_model)"),
    "rope": ("(q_i, q_{i+d/2}) turned by the angle pos · θ_i, θ_i = base^(−2i/d_head); the same for k",
             "attnlab/layers/positions.py", "return x * cos + rotated * sin"),
    "layernorm": ("LayerNorm(x) = γ ⊙ (x − μ) / √(σ² + ε) + β", "attnlab/layers/norms.py",
                  "return nn.LayerNorm(config.d_model, eps=config.norm_eps)"),
    "rmsnorm": ("RMSNorm(x) = γ ⊙ x / √(mean(x²) + ε)", "attnlab/layers/norms.py",
                "return RMSNorm(config.d_model, eps=config.norm_eps)"),
    "qkv": ("Q = X W_Q, K = X W_K, V = X W_V  (one fused matmul, split into heads)", "attnlab/layers/attention.py",
            "for t in self.qkv(x).split(self.q_width, dim=-1))"),
    "qkv_gqa": ("Q = X W_Q (n_heads), K = X W_K, V = X W_V (n_kv_heads, each shared by a group of query heads)",
                "attnlab/layers/attention.py", "heads = self.qkv(x).view(batch, q_len, h + 2 * g, self.d_head)"),
    "cross_q": ("Q = Y W_Q  (queries from the target)", "attnlab/layers/attention.py",
                "q = self._heads(self.q(x), self.n_heads)"),
    "cross_kv": ("K = E W_K, V = E W_V  (keys and values from the encoder output E)", "attnlab/layers/attention.py",
                 "k, v = self.kv(context).split(self.kv_width, dim=-1)"),
    "scores": ("S = Q K^T / √d_k", "attnlab/layers/attention.py", "raw = (q @ k.transpose(-2, -1)) * self.scale"),
    "mask": ("S = Q K^T / √d_k + M,  M_ij = −∞ where j > i  (look-ahead mask)", "attnlab/layers/attention.py",
             "raw = raw.masked_fill(~keep, torch.finfo(raw.dtype).min)"),
    "softmax": ("A = softmax(S)  (each row sums to 1)", "attnlab/layers/attention.py",
                "weights = raw.softmax(dim=-1)"),
    "weighted": ("head_h = A V", "attnlab/layers/attention.py", "return weights @ v"),
    "concat": ("Concat(head_1, …, head_h)", "attnlab/layers/attention.py",
               "out = out.transpose(1, 2).reshape(batch, q_len, self.q_width)"),
    "w_o": ("MultiHead(X) = Concat(head_1, …, head_h) W_O", "attnlab/layers/attention.py", "return self.out(out)"),
    "head_out": ("head_h W_O[h]  (this head's slice of W_O: its share of the output)",
                 "attnlab/layers/attention.py", "head_out = torch.einsum(\"bqhd,mhd->bhqm\", z, w_o)"),
    "pre_norm": ("x ← x + Sublayer(Norm(x))  (pre-norm)", "attnlab/layers/block.py",
                 "return x + self._drop(fn(norm(x)))"),
    "post_norm": ("x ← Norm(x + Sublayer(x))  (post-norm)", "attnlab/layers/block.py",
                  "return norm(x + self._drop(fn(x)))"),
    "cross": ("Y ← Y + CrossAttn(Norm(Y), E)", "attnlab/layers/block.py",
              "y = self._sublayer(y, self.norm_cross, lambda h: self.cross_attn("),
    "ffn_plain": ("h = act(x W_1 + b_1)  (d_ff wide)", "attnlab/layers/feedforward.py", "h = self.act(h)"),
    "ffn_gated": ("h = act(x W_gate) ⊙ (x W_up)  (d_ff wide)", "attnlab/layers/feedforward.py",
                  "h = self.act(gate) * up"),
    "ffn_down": ("FFN(x) = h W_2 + b_2", "attnlab/layers/feedforward.py", "return self.down(h)"),
    "final_norm": ("h = Norm(x_N)  (closes a pre-norm stack)", "attnlab/models/stack.py",
                   "x = self.final_norm(x)"),
    "logits": ("logits = h W_out + b  (W_out = W_E^T when tied)", "attnlab/models/heads.py",
               "return nn.functional.linear(h, weight, self.bias)"),
    "classifier": ("logits = h_CLS W_C + b_C", "attnlab/models/vit.py",
                   "logits = self.classifier(h[:, 0]) if self.classifier is not None else None"),
    "probs": ("P(next = w) = softmax(logits)_w", "attnlab/generation/sampling.py", "probs = scores.softmax(dim=-1)"),
}


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
