"""Training: one loop (trainer.py) for every recipe, with checkpoints that survive crashes and resume exactly.

From Python, `run_train("gpt-char", out="runs/x", overrides={"steps": "200"})` does what `attnlab train` does
(a recipe, its data, the loop, the result); `Trainer(task, TrainSettings(...), out).fit()` runs the loop on a
task of your own (docs/training.md, "Train from Python").
"""

from attnlab.training.checkpoint import latest_checkpoint, load_checkpoint, save_checkpoint
from attnlab.training.optim import WarmupCosine, build_optimizer, build_scheduler, param_groups
from attnlab.training.run import run_train
from attnlab.training.settings import TrainSettings
from attnlab.training.trainer import NonFiniteLoss, Task, Trainer

__all__ = ["run_train", "Trainer", "TrainSettings", "Task", "NonFiniteLoss", "build_optimizer",
           "build_scheduler",
           "param_groups", "WarmupCosine", "save_checkpoint", "load_checkpoint", "latest_checkpoint"]
