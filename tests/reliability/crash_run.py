"""A tiny training run for the crash tests, started as a subprocess: `python crash_run.py OUT STEPS SLOW_SAVE_S`.

Always resumes from OUT/latest when one exists. SLOW_SAVE_S > 0 sleeps inside every checkpoint write (after the
weights are in the temporary directory, before the rename), widening the window a SIGKILL can land in, and
marks the moment by writing OUT/saving (the step being saved).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from attnlab import ModelConfig, build_model
from attnlab.training import checkpoint as ckpt
from attnlab.training.trainer import Task, Trainer, TrainSettings

V, SEQ = 32, 9


class TinyLM(Task):
    def __init__(self):
        torch.manual_seed(0)
        config = ModelConfig(topology="decoder", vocab_size=V, d_model=16, n_heads=2, d_ff=32, n_layers=1,
                             max_len=16, dropout=0.1)  # dropout: the resumed run must restore the RNG too
        self.model = build_model(config)

    def train_batch(self, generator, batch_size):
        return {"ids": torch.randint(0, V, (batch_size, SEQ), generator=generator)}

    def loss(self, model, batch):
        ids = batch["ids"]
        logits = model(ids[:, :-1]).logits  # (batch, seq - 1, vocab)
        return F.cross_entropy(logits.reshape(-1, V), ids[:, 1:].reshape(-1)), ids[:, 1:].numel()


def main() -> None:
    out, steps, slow = Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    torch.set_num_threads(1)
    if slow > 0:
        original = ckpt.save_model

        def slow_save(model, directory, **kwargs):
            (out / "saving").write_text(str(directory))
            result = original(model, directory, **kwargs)
            time.sleep(slow)  # the step directory is half-built here: killed now, it must not count
            return result

        ckpt.save_model = slow_save
    settings = TrainSettings(steps=steps, batch_size=4, lr=3e-3, warmup=2, eval_every=0, log_every=1000,
                             save_every=1, keep=2, seed=0, plot=False)
    Trainer(TinyLM(), settings, out, quiet=True).fit(resume=True)
    print("finished", flush=True)


if __name__ == "__main__":
    main()
