"""Contrastive image-text training (clip-mnist): a dual encoder matches MNIST images with their digit's name.

The image tower is a ViT, the text tower a small character-level encoder; captions are the digit names in
several languages (num2words). InfoNCE treats every caption of the same digit in a batch as a positive; the
evaluation is zero-shot classification: each test image takes the digit whose caption embedding is nearest.
"""

from __future__ import annotations

from pathlib import Path

import torch

from attnlab.build import build_model
from attnlab.config import DualEncoderConfig, ModelConfig
from attnlab.data import tokenizers
from attnlab.data.images import shift_images, split_images
from attnlab.data.pairs import digit_words
from attnlab.loading import load
from attnlab.objectives import info_nce
from attnlab.training.recipes.base import Recipe
from attnlab.training.recipes.vision import VIT_PARAMS, vit_config
from attnlab.training.trainer import Task


def build_dual_encoder(vit: ModelConfig, text: ModelConfig, embed_dim: int):
    """The one place clip-mnist's model is built: a DualEncoderConfig of a ViT and a text encoder."""
    return build_model(DualEncoderConfig(vit, text, embed_dim=embed_dim, pool="cls", name=vit.name))


def load_dual_encoder(directory: str | Path):
    """(DualEncoder, tokenizer) saved by clip-mnist: attnlab.load reads dual encoders like any model."""
    return load(directory)


class ClipMnistTask(Task):
    """Images vs their label written as words in several languages; InfoNCE where every caption of the same
    digit counts as a positive (a batch of 64 holds each digit several times)."""

    reports_val_loss = False  # zero-shot accuracy only: no checkpoint ranks as "best", no patience=

    def __init__(self, p, batch_size):
        self.p = p
        self.train_x, self.train_y, self.test_x, self.test_y = split_images(p["test_size"], p["split_seed"],
                                                                            batch_size)
        self.languages = [lang.strip() for lang in p["languages"].split(",") if lang.strip()]
        self.captions = [digit_words(lang) for lang in self.languages]  # [lang][digit]
        chars = sorted({c for row in self.captions for cap in row for c in cap})
        self.tokenizer = tokenizers.char_tokenizer("".join(chars), ["[UNK]", "[PAD]", "[CLS]"])
        self.pad, self.cls = self.tokenizer.pad_id, self.tokenizer.cls_id
        encoded = [[[self.cls, *self.tokenizer.encode(c, add_special_tokens=False)] for c in row]
                   for row in self.captions]
        self.text_len = max(len(c) for row in encoded for c in row)
        self.caption_ids = torch.full((len(self.languages), 10, self.text_len), self.pad, dtype=torch.long)
        for i, row in enumerate(encoded):
            for d, c in enumerate(row):
                self.caption_ids[i, d, : len(c)] = torch.tensor(c)
        vit = vit_config(p, "none", 0, "clip-mnist")
        text = ModelConfig(topology="encoder", vocab_size=self.tokenizer.vocab_size, d_model=p["text_d_model"],
                           n_heads=p["n_heads"], d_ff=2 * p["text_d_model"], n_layers=p["text_layers"],
                           max_len=self.text_len, position="learned", norm_placement="pre", head="none",
                           pad_token_id=self.pad, name="clip-mnist-text")
        self.model = build_dual_encoder(vit, text, p["embed_dim"])

    def train_batch(self, generator, batch_size):
        pick = torch.randint(0, len(self.train_y), (batch_size,), generator=generator)
        labels = self.train_y[pick]
        lang = torch.randint(0, len(self.languages), (batch_size,), generator=generator)
        return {"pixels": shift_images(self.train_x[pick], self.p["max_shift"], generator),
                "text": self.caption_ids[lang, labels], "labels": labels}

    def loss(self, model, batch):
        text = batch["text"]
        logits = model(batch["pixels"], text, None, (text != self.pad).long()).float()  # (batch, batch)
        return info_nce(logits, batch["labels"]), len(logits)  # same digit = positive

    def evaluate(self, model):
        device = next(model.parameters()).device
        images = torch.cat([model.embed_a(x.to(device)) for x in self.test_x.split(250)]).cpu()  # (n, embed)
        metrics = {}
        for i, lang in enumerate(self.languages):
            ids = self.caption_ids[i].to(device)
            text = model.embed_b(ids, (ids != self.pad).long()).cpu()  # (10, embed)
            metrics[f"zero_shot_{lang}"] = float(((images @ text.T).argmax(-1) == self.test_y).float().mean())
        metrics["zero_shot"] = sum(metrics.values()) / len(self.languages)  # mean over languages
        return metrics


def build_clip_mnist(p):
    return ClipMnistTask(p, p["batch_size"])


CLIP_MNIST = Recipe("clip-mnist", "dual encoder: MNIST images vs digit names in several languages, zero-shot accuracy",
                    build_clip_mnist,
                    dict(VIT_PARAMS, languages="en,fr,de,es,it", text_d_model=64, text_layers=2, embed_dim=64,
                         label_smoothing=0.0),
                    dict(steps=1500, batch_size=64, lr=3e-3, warmup=100, eval_every=500, weight_decay=0.05))
