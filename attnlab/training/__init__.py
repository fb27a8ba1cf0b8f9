"""Training: one loop (trainer.py) for every recipe, with checkpoints that survive crashes and resume exactly."""

from attnlab.training.checkpoint import latest_checkpoint, load_checkpoint, save_checkpoint
from attnlab.training.optim import WarmupCosine, build_optimizer, build_scheduler, param_groups
from attnlab.training.settings import TrainSettings
from attnlab.training.trainer import NonFiniteLoss, Task, Trainer

__all__ = ["Trainer", "TrainSettings", "Task", "NonFiniteLoss", "build_optimizer", "build_scheduler",
           "param_groups", "WarmupCosine", "save_checkpoint", "load_checkpoint", "latest_checkpoint"]
