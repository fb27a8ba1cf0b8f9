"""Tiny random-weight attnlab models saved as checkpoints, so the explorer is tested on the same path as real ones.

Each is built from a preset with a fixed seed and saved into a directory that is then passed to the explorer
as a command-line PATH. The encoder gets a small word tokenizer with BERT's special tokens so the MLM views
have a [MASK]; the others read characters (no tokenizer), which the explorer supports too.
"""

from __future__ import annotations

from pathlib import Path

import torch

import attnlab
from attnlab.explorer.views.experiments.toy import compute as toy

WORDS = list(toy.WORDS)


def bert_tokenizer():
    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers import normalizers, pre_tokenizers, processors
    from tokenizers.models import WordLevel

    from attnlab.data.tokenizers import Tokenizer

    vocab = {w: i for i, w in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS)}
    hf = HFTokenizer(WordLevel(vocab, unk_token="[UNK]"))
    hf.normalizer = normalizers.Lowercase()
    hf.pre_tokenizer = pre_tokenizers.Whitespace()
    hf.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2),
                                                                                                ("[SEP]", 3)])
    return Tokenizer(hf, {"pad": "[PAD]", "unk": "[UNK]", "cls": "[CLS]", "sep": "[SEP]", "mask": "[MASK]"})


def build_all(root: Path) -> dict[str, Path]:
    """-> {"decoder": dir, "encoder": dir, "encoder-decoder": dir, "vit": dir}, each a saved attnlab checkpoint."""
    out = {}
    from attnlab.presets import get

    specs = {
        "decoder": get("tiny-decoder", vocab_size=256, d_model=32, d_ff=64, max_len=128),
        "encoder": get("tiny-encoder", vocab_size=len(WORDS) + 5, d_model=32, d_ff=64, max_len=64, pad_token_id=0),
        "encoder-decoder": get("tiny-encoder-decoder", vocab_size=256, d_model=32, d_ff=64, max_len=64),
        "vit": get("tiny-vit", d_model=32, d_ff=64),
    }
    for i, (name, config) in enumerate(specs.items()):
        torch.manual_seed(100 + i)
        model = attnlab.build_model(config).eval()
        tokenizer = bert_tokenizer() if name == "encoder" else None
        out[name] = model.save(root / name, tokenizer=tokenizer)
    return out
