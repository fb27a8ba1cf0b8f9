"""The hand-crafted toy of the seed, built as a real attnlab Encoder with hand-set weights. An ILLUSTRATION.

The registry offers it like any model (it is the machinery's: every tab shows it); the Experiments tab's toy view
(explorer/views/experiments/toy) lets a learner edit its W_Q and W_K.

Why a toy at all: in a trained model no embedding dimension has a name and no head has a stated job, so the
lesson "a head is just W_Q, W_K, W_V" is easiest to see where we chose the numbers ourselves. Here every word
is an 8-dimensional vector whose axes carry names (animate, noun, verb, ...), and each of the 4 heads
(d_head = 4) reads a couple of those axes:

  head 1  subject -> verb       W_Q: 2 x animate + 1 x subj   W_K: 2 x verb
  head 2  determiner -> noun    W_Q: 2 x det                  W_K: 2 x noun
  head 3  preposition -> place  W_Q: 2 x prep                 W_K: 2 x place
  head 4  adjective -> noun     W_Q: 2 x adj                  W_K: 2 x noun + 1 x animate

So "cat" (animate 0.9, subj 0.8) querying "sat" (verb 0.9) scores (2*0.9 + 0.8) * (2*0.9) / sqrt(4) = 2.34.
The toy view's `scores` recomputes one head with W_Q and W_K a learner edited (the Experiments tab), so the page
can show 2.34 move, or vanish when the verb weight of W_K goes to 0.

The weights go into an ordinary attnlab Encoder (1 layer, post-LN so attention reads the raw embeddings,
no positions, no biases), so the explorer shows the toy through exactly the code path it uses for real models.
"""

from __future__ import annotations

import torch

from attnlab.config import ModelConfig

DIMS = ("animate", "noun", "verb", "det", "prep", "place", "subj", "adj")
D_HEAD = 4
SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")

# word -> values on DIMS (animate, noun, verb, det, prep, place, subj, adj)
WORDS: dict[str, tuple[float, ...]] = {
    "the": (0.0, 0.0, 0.0, 0.9, 0.0, 0.0, 0.1, 0.0),
    "a": (0.0, 0.0, 0.0, 0.9, 0.0, 0.0, 0.1, 0.0),
    "cat": (0.9, 0.8, 0.0, 0.0, 0.0, 0.0, 0.8, 0.2),
    "dog": (0.9, 0.8, 0.0, 0.0, 0.0, 0.0, 0.7, 0.1),
    "man": (0.9, 0.8, 0.0, 0.0, 0.0, 0.0, 0.8, 0.0),
    "bird": (0.8, 0.8, 0.0, 0.0, 0.0, 0.0, 0.6, 0.1),
    "sat": (0.0, 0.0, 0.9, 0.0, 0.0, 0.0, 0.0, 0.0),
    "ran": (0.0, 0.0, 0.9, 0.0, 0.0, 0.0, 0.0, 0.0),
    "slept": (0.0, 0.0, 0.8, 0.0, 0.0, 0.0, 0.0, 0.0),
    "chased": (0.0, 0.0, 0.9, 0.0, 0.0, 0.0, 0.0, 0.0),
    "saw": (0.0, 0.0, 0.8, 0.0, 0.0, 0.0, 0.0, 0.0),
    "walked": (0.0, 0.0, 0.9, 0.0, 0.0, 0.0, 0.0, 0.0),
    "on": (0.0, 0.0, 0.0, 0.0, 0.9, 0.0, 0.0, 0.0),
    "in": (0.0, 0.0, 0.0, 0.0, 0.9, 0.0, 0.0, 0.0),
    "under": (0.0, 0.0, 0.0, 0.0, 0.9, 0.0, 0.0, 0.0),
    "near": (0.0, 0.0, 0.0, 0.0, 0.8, 0.0, 0.0, 0.1),
    "to": (0.0, 0.0, 0.0, 0.0, 0.7, 0.0, 0.0, 0.0),
    "mat": (0.0, 0.8, 0.0, 0.0, 0.0, 0.7, 0.1, 0.0),
    "park": (0.0, 0.8, 0.0, 0.0, 0.0, 0.9, 0.1, 0.0),
    "house": (0.0, 0.8, 0.0, 0.0, 0.0, 0.8, 0.1, 0.0),
    "river": (0.0, 0.8, 0.0, 0.0, 0.0, 0.9, 0.1, 0.0),
    "tree": (0.1, 0.8, 0.0, 0.0, 0.0, 0.6, 0.1, 0.0),
    "ball": (0.0, 0.8, 0.0, 0.0, 0.0, 0.1, 0.2, 0.0),
    "bone": (0.0, 0.8, 0.0, 0.0, 0.0, 0.0, 0.2, 0.0),
    "old": (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.9),
    "big": (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.9),
    "small": (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.9),
    "happy": (0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.8),
}

# head -> (query weights per dim, key weights per dim); only the first of the d_head columns is used
HEADS: tuple[tuple[str, dict[str, float], dict[str, float]], ...] = (
    ("subject -> verb", {"animate": 2.0, "subj": 1.0}, {"verb": 2.0}),
    ("determiner -> noun", {"det": 2.0}, {"noun": 2.0}),
    ("preposition -> place", {"prep": 2.0}, {"place": 2.0}),
    ("adjective -> noun", {"adj": 2.0}, {"noun": 2.0, "animate": 1.0}),
)

SENTENCES = ("the cat sat on the mat", "a dog chased the ball in the park", "the old man walked to the river")


def vocabulary() -> list[str]:
    return list(SPECIALS) + list(WORDS)


def config() -> ModelConfig:
    return ModelConfig(
        topology="encoder", vocab_size=len(vocabulary()), d_model=len(DIMS), n_heads=len(HEADS), d_head=D_HEAD,
        d_ff=len(DIMS), n_layers=1, max_len=64, position="none", activation="relu", norm_placement="post",
        bias=False, head="none", tie_embeddings=False, pad_token_id=0, name="toy (hand-crafted illustration)",
        extra={"illustration": True, "dims": list(DIMS), "heads": [h[0] for h in HEADS]},
    )


def embedding_table() -> torch.Tensor:
    """(vocab_size, 8): special tokens are zero vectors, every word its hand-set row."""
    rows = [[0.0] * len(DIMS) for _ in SPECIALS] + [list(v) for v in WORDS.values()]
    return torch.tensor(rows)


def projections() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """W_Q, W_K, W_V as (heads, d_model, d_head): token vector @ W[h] = that head's q, k or v."""
    n, d = len(HEADS), len(DIMS)
    w_q, w_k, w_v = torch.zeros(n, d, D_HEAD), torch.zeros(n, d, D_HEAD), torch.zeros(n, d, D_HEAD)
    for h, (_, q_reads, k_reads) in enumerate(HEADS):
        for dim, weight in q_reads.items():
            w_q[h, DIMS.index(dim), 0] = weight
        for dim, weight in k_reads.items():
            w_k[h, DIMS.index(dim), 0] = weight
        # values: head h returns 4 of the 8 named dims unchanged (heads 1, 3: first half; 2, 4: second half)
        first = 4 * (h % 2)
        for j in range(D_HEAD):
            w_v[h, first + j, j] = 1.0
    return w_q, w_k, w_v


def build():
    """-> (attnlab Encoder with the hand-set weights, attnlab Tokenizer over the toy's word list)."""
    from attnlab.build import build_model

    cfg = config()
    model = build_model(cfg)
    w_q, w_k, w_v = projections()
    n, d = len(HEADS), len(DIMS)
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
        model.tokens.weight.copy_(embedding_table())
        qkv = model.blocks[0].attn.qkv.weight  # (3 * heads * d_head, d_model): rows of W_Q, then W_K, then W_V
        for i, w in enumerate((w_q, w_k, w_v)):
            # nn.Linear computes x @ weight.T, so weight rows for head h are W[h].T
            qkv[i * n * D_HEAD:(i + 1) * n * D_HEAD] = w.transpose(1, 2).reshape(n * D_HEAD, d)
        # W_O puts each head's 4 values back on the dims they came from, averaged over the 2 heads sharing them
        out = model.blocks[0].attn.out.weight  # (d_model, heads * d_head)
        for h in range(n):
            first = 4 * (h % 2)
            for j in range(D_HEAD):
                out[first + j, h * D_HEAD + j] = 0.5
        for module in model.modules():  # LayerNorm gains back to 1 (zeroed above)
            if isinstance(module, torch.nn.LayerNorm):
                module.weight.fill_(1.0)
    model.eval()
    return model, tokenizer()


def tokenizer():
    """Whitespace word tokenizer over the toy's vocabulary (lower-cased; unknown words -> [UNK])."""
    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers import normalizers, pre_tokenizers
    from tokenizers.models import WordLevel

    from attnlab.data.tokenizers import Tokenizer

    vocab = {w: i for i, w in enumerate(vocabulary())}
    hf = HFTokenizer(WordLevel(vocab, unk_token="[UNK]"))
    hf.normalizer = normalizers.Lowercase()
    hf.pre_tokenizer = pre_tokenizers.Whitespace()
    return Tokenizer(hf, {"pad": "[PAD]", "unk": "[UNK]", "cls": "[CLS]", "sep": "[SEP]", "mask": "[MASK]"})
