"""Image classification (vit-mnist): a Vision Transformer on MNIST-5k, a user image folder or sklearn's digits.

MNIST keeps its fixed split (test_size images held out) and MNIST's pixel statistics; a user folder
(images=FOLDER) or scikit-learn's digits (dataset=digits) are split by class and normalised with their own
training statistics, which the checkpoint keeps (extra.pixel_mean / pixel_std) with the class names.
"""

from __future__ import annotations

from typing import Any

import torch

from attnlab.build import build_model
from attnlab.config import ModelConfig
from attnlab.data.images import MNIST_MEAN, MNIST_STD, shift_images, split_images, user_images
from attnlab.errors import ConfigError
from attnlab.objectives import classification_loss
from attnlab.training.recipes.base import Recipe
from attnlab.training.trainer import Task

IMAGE_DATASETS = ("mnist", "digits")


def vit_config(p, head: str, n_classes: int, name: str, image_size: int = 28, n_channels: int = 1,
               extra: dict[str, Any] | None = None) -> ModelConfig:
    return ModelConfig(topology="vit", image_size=image_size, patch_size=p["patch_size"], n_channels=n_channels,
                       d_model=p["d_model"], n_heads=p["n_heads"], d_ff=p["d_ff"], n_layers=p["n_layers"],
                       position="learned", activation="gelu", norm_placement="pre", head=head,
                       n_classes=n_classes, vocab_size=1, dropout=p["dropout"], name=name, extra=extra or {})


def check_patch_size(patch: int, side: int) -> None:
    """A ViT cuts the image into whole patches: patch_size must divide the image side."""
    if patch < 1:
        raise ConfigError(f"patch_size={patch}: must be a positive divisor of the image size")
    if side % patch:
        allowed = [d for d in range(1, side + 1) if side % d == 0]
        raise ConfigError(f"patch_size={patch} does not divide the {side}x{side} images; allowed patch sizes: "
                          f"{', '.join(map(str, allowed))} (or set image_size to a multiple of {patch})")


class VitMnistTask(Task):
    """A ViT classifier on MNIST-5k by default; on a user folder (images=) or scikit-learn's digits
    (dataset=digits) the image size, channels and classes come from the data and the class names are saved in
    the checkpoint's config (extra.labels, with extra.pixel_mean / pixel_std) for attnlab.load and the explorer."""

    def __init__(self, p, batch_size):
        self.p = p
        dataset = p.get("dataset", "mnist")
        if dataset not in IMAGE_DATASETS:
            raise ConfigError(f"dataset={dataset!r}: allowed {', '.join(IMAGE_DATASETS)} "
                              "(or images=FOLDER for your own images)")
        if p.get("images") and dataset != "mnist":
            raise ConfigError(f"images={p['images']} and dataset={dataset}: give one of them")
        self.fill = -MNIST_MEAN / MNIST_STD
        if not p.get("images") and dataset == "mnist":  # the shipped checkpoint's path, unchanged
            if p.get("image_size", 0) not in (0, 28):
                raise ConfigError(f"image_size={p['image_size']}: MNIST images are 28x28 (leave image_size=0)")
            self.train_x, self.train_y, self.test_x, self.test_y = split_images(p["test_size"], p["split_seed"],
                                                                                batch_size)
            self.model = build_model(vit_config(p, "classifier", 10, "vit-mnist"))
            return
        if p["image_size"] < 0:
            raise ConfigError(f"image_size={p['image_size']}: give a positive size, or 0 to keep the data's own size")
        if p["patch_size"] < 1:
            check_patch_size(p["patch_size"], 1)
        data = user_images(p["images"], p["image_size"], p["test_fraction"], p["split_seed"], batch_size)
        check_patch_size(p["patch_size"], data.train_x.shape[-1])
        self.train_x, self.train_y, self.test_x, self.test_y = data.train_x, data.train_y, data.test_x, data.test_y
        self.labels, self.fill = data.labels, None
        extra = {"labels": data.labels, "pixel_mean": data.mean, "pixel_std": data.std, "data": data.source}
        self.model = build_model(vit_config(p, "classifier", len(data.labels), f"vit-{data.source}",
                                            image_size=self.train_x.shape[-1], n_channels=self.train_x.shape[1],
                                            extra=extra))

    def train_batch(self, generator, batch_size):
        pick = torch.randint(0, len(self.train_y), (batch_size,), generator=generator)
        return {"pixels": shift_images(self.train_x[pick], self.p["max_shift"], generator, self.fill),
                "labels": self.train_y[pick]}

    def loss(self, model, batch):
        logits = model(batch["pixels"]).logits.float()  # (batch, classes) from the [CLS] output
        return classification_loss(logits, batch["labels"], label_smoothing=self.p["label_smoothing"]), len(logits)

    def evaluate(self, model):
        device = next(model.parameters()).device
        correct, loss = 0, 0.0
        for i, (x, y) in enumerate(zip(self.test_x.split(250), self.test_y.split(250), strict=False)):
            logits = model(x.to(device)).logits.float().cpu()
            loss += float(classification_loss(logits, y, reduction="sum"))
            correct += int((logits.argmax(-1) == y).sum())
            self.evaluated(min(len(self.test_y), 250 * (i + 1)), len(self.test_y), "images")
        metrics = {"val_loss": loss / len(self.test_y), "accuracy": correct / len(self.test_y)}
        if self.fill is None:  # user data: say how many images the accuracy is over
            metrics["test_images"] = len(self.test_y)
        return metrics


VIT_PARAMS = dict(patch_size=7, d_model=64, n_heads=4, d_ff=128, n_layers=4, dropout=0.0, max_shift=1,
                  test_size=1000, split_seed=0, label_smoothing=0.0)


def build_vit_mnist(p):
    return VitMnistTask(p, p["batch_size"])


VIT_MNIST = Recipe("vit-mnist", "ViT on MNIST-5k (4000 train / 1000 test images), or images=FOLDER / dataset=digits",
                   build_vit_mnist, dict(VIT_PARAMS, images="", dataset="mnist", image_size=0, test_fraction=0.2),
                   dict(steps=6000, batch_size=64, lr=3e-3, warmup=100, eval_every=500, weight_decay=0.05))
