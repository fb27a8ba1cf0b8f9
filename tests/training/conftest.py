"""A tiny causal-LM task on a fixed random token stream: fast enough to train for a few steps in every test."""

import pytest
import torch
import torch.nn.functional as F

from attnlab import ModelConfig, build_model
from attnlab.training import Task


class TinyLMTask(Task):
    def __init__(self, dropout: float = 0.0, seed: int = 0, nan_at_call: int | None = None):
        torch.manual_seed(seed)
        self.config = ModelConfig(topology="decoder", vocab_size=50, d_model=32, n_heads=4, d_ff=64, n_layers=2,
                                  max_len=16, dropout=dropout)
        self.model = build_model(self.config)
        self.stream = torch.randint(0, 50, (2000,), generator=torch.Generator().manual_seed(seed + 1))
        self.calls = 0
        self.nan_at_call = nan_at_call

    def train_batch(self, generator, batch_size):
        starts = torch.randint(0, len(self.stream) - 17, (batch_size,), generator=generator)
        return {"ids": torch.stack([self.stream[s: s + 17] for s in starts.tolist()])}

    def loss(self, model, batch):
        self.calls += 1
        ids = batch["ids"]
        logits = model(ids[:, :-1]).logits
        loss = F.cross_entropy(logits.flatten(0, 1), ids[:, 1:].flatten())
        if self.nan_at_call is not None and self.calls >= self.nan_at_call:
            loss = loss * float("nan")
        return loss, ids[:, 1:].numel()

    def evaluate(self, model):
        ids = self.stream[:17 * 8].view(8, 17)
        logits = model(ids[:, :-1]).logits
        return {"val_loss": float(F.cross_entropy(logits.flatten(0, 1), ids[:, 1:].flatten()))}


@pytest.fixture
def tiny_task():
    return TinyLMTask


@pytest.fixture(autouse=True)
def _one_thread(one_thread):
    """Every training test runs on one torch thread (tests/conftest.py says why)."""
