"""attnlab's own checkpoint format: a directory with config.json and model.safetensors (+ tokenizer files).

safetensors holds only tensors (no code runs on load); tied matrices are stored once. Loading never trusts the
config.json: the model is built on the meta device (shapes only, no memory), every name and shape is checked
against the safetensors header, and only then is memory allocated, uninitialised, and filled tensor by tensor
from the file. A 1 KB config claiming a 3 GB model next to a 1 MB file is refused without allocating.

A checkpoint may sit on a base model installed as a Python package: its config.json's extra["base"] =
{"module": import name, "package": pip name, "folder": relative folder of a Hugging Face checkpoint in it,
"sha256": of that folder's model.safetensors}. Its model.safetensors then holds only what was trained on top (a
head, a fine-tuned block); every other tensor the config needs is read from the installed base (which must be
the very weights the head was trained on: the sha256 is checked), so the base's weights are never copied.

A quantized model (attnlab.quantize, or a GGUF file kept quantized) is saved with its codes and scales as they
are in memory, and config.json's extra["quantization"] = {module name: format} (attnlab.quantization.formats_of);
loading builds the float model on the meta device, swaps those modules for empty quantized ones (the tied
embedding shares its head's codes), and checks and fills it like any other: the same tensors, bit for bit.

This module also holds what the other storage and training code share: the one config.json reader
(`read_config`, defined in attnlab.checkpoint_config so that reading a config imports no torch), writing through
a temporary file (`atomic_write`), and finding a training run's newest step.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_model as _save_safetensors

from attnlab.build import allocate_empty, build_model, refuse_if_absurd
from attnlab.checkpoint_config import CONFIG_NAME, WEIGHTS_NAME, read_config
from attnlab.config import AnyConfig, DualEncoderConfig, ModelConfig
from attnlab.data.packages import package_folder
from attnlab.errors import CheckpointError
from attnlab.files import check_regular, is_regular, read_text
from attnlab.models.base import register_saver
from attnlab.quantization import check_finite, formats_of

LATEST = "latest"  # in a training run directory: one line naming the newest complete step directory
STEP_PREFIX = "step-"
STEP_NAME = re.compile(r"step-[0-9]{1,12}")  # what `latest` may hold: nothing else is ever quoted
_FLOAT_DTYPES = ("F16", "BF16", "F32", "F64")
_INT_DTYPES = {torch.int8: "I8", torch.uint8: "U8", torch.int16: "I16", torch.int32: "I32", torch.int64: "I64",
               torch.bool: "BOOL"}  # safetensors' names: integer tensors (quantized codes) must match exactly
QUANTIZATION = "quantization"  # config.json extra[QUANTIZATION]: {module name: format} of a quantized model


# ------------------------------------------------------------------------------------------------ writing
def _umask() -> int:
    """The process umask, read without changing it (os.umask can only be read by setting it, which races)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write(path: Path, write) -> None:
    """Write through a temporary file in the same directory, then rename: a crash leaves the old file whole.

    The file ends with the mode an ordinary open() would give it (0666 less the umask), not mkstemp's 0600."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def save_model(model, directory: str | Path, tokenizer=None) -> Path:
    """config.json + model.safetensors (+ the tokenizer's files) of an attnlab model, each written atomically."""
    directory = Path(directory)
    if not isinstance(getattr(model, "config", None), (ModelConfig, DualEncoderConfig)):
        raise CheckpointError("only attnlab models (with a ModelConfig or DualEncoderConfig) can be saved this way")
    config = _with_formats(model.config, formats_of(model))
    directory.mkdir(parents=True, exist_ok=True)
    atomic_write(directory / WEIGHTS_NAME, lambda tmp: _save_safetensors(model, tmp))
    atomic_write(directory / CONFIG_NAME, lambda tmp: Path(tmp).write_text(config.to_json() + "\n"))
    if tokenizer is not None:
        tokenizer.save(directory)
    return directory


register_saver("attnlab", save_model)


def _with_formats(config: AnyConfig, formats: dict[str, str]) -> AnyConfig:
    """The config to write: extra[QUANTIZATION] is the model's quantized modules and their formats (absent for a
    float model, whatever the in-memory config's extra said)."""
    extra = {k: v for k, v in config.extra.items() if k != QUANTIZATION}
    if formats:
        extra[QUANTIZATION] = dict(formats)
    return config if extra == config.extra else config.replace(extra=extra)


def split_formats(config: AnyConfig, source) -> tuple[AnyConfig, dict[str, str]]:
    """(the config without extra[QUANTIZATION], that table): a quantized checkpoint's config describes the float
    architecture; the table names the modules to swap for QuantizedLinear before its tensors are read."""
    if QUANTIZATION not in config.extra:
        return config, {}
    formats = config.extra[QUANTIZATION]
    if not isinstance(formats, dict):
        raise CheckpointError(f"{source}: extra[{QUANTIZATION!r}] must map module names to quantized formats")
    return config.replace(extra={k: v for k, v in config.extra.items() if k != QUANTIZATION}), formats


def build_for_checkpoint(config: AnyConfig, source):
    """The model (on the meta device, eval mode) whose state_dict a checkpoint with `config` holds: the float
    model, with the modules its extra[QUANTIZATION] names swapped for empty quantized ones (a tied embedding
    follows its head, sharing its codes); its config is the float one, as attnlab.quantize leaves it."""
    from attnlab.quantization import check_formats, replace

    config, formats = split_formats(config, source)
    model = build_model(config, device="meta").eval()
    if formats:
        try:
            check_formats(model, formats, source)
        except ValueError as exc:
            raise CheckpointError(str(exc)) from None
        replace(model, formats)
    return model


# ------------------------------------------------------------------------------------------------ config
def config_differences(saved: AnyConfig, ours: AnyConfig) -> list[str]:
    """Fields that differ between two configs ("field: checkpoint a vs now b"), name and extra (free-form
    notes) aside; a dual encoder's towers are compared field by field."""
    a, b = saved.to_dict(), ours.to_dict()
    ignore = {"name", "extra"}
    out = []
    for key in sorted(set(a) | set(b)):
        if key in ignore:
            continue
        if isinstance(a.get(key), dict) and isinstance(b.get(key), dict) and key.startswith("tower_"):
            sub = config_differences(ModelConfig.from_dict(a[key]), ModelConfig.from_dict(b[key]))
            out += [f"{key}.{d}" for d in sub]
        elif a.get(key) != b.get(key):
            out.append(f"{key}: checkpoint {a.get(key)!r} vs now {b.get(key)!r}")
    return out


# ------------------------------------------------------------------------------------------------ tensors
def read_header(path: str | Path) -> dict[str, tuple[tuple[int, ...], str]]:
    """name -> (shape, dtype) from a safetensors header, without reading any tensor."""
    path = Path(path)
    check_regular(path, "safetensors file")
    try:
        with safe_open(str(path), framework="pt") as f:
            return {name: (tuple(f.get_slice(name).get_shape()), f.get_slice(name).get_dtype()) for name in f.keys()}
    except (SafetensorError, OSError, ValueError, RuntimeError) as exc:
        raise CheckpointError(f"{path} cannot be read: truncated or not a safetensors file ({exc})") from None


def read_tensors(path: str | Path) -> dict[str, torch.Tensor]:
    """Every tensor of a safetensors file (checked to be a regular, readable file first)."""
    path = Path(path)
    read_header(path)
    try:
        with safe_open(str(path), framework="pt") as f:
            return {name: f.get_tensor(name) for name in f.keys()}
    except (SafetensorError, OSError, ValueError, RuntimeError) as exc:
        raise CheckpointError(f"{path} is truncated or corrupted ({exc})") from None


def _tied_aliases(model) -> dict[str, list[str]]:
    by_id: dict[int, list[str]] = {}
    for name, tensor in model.state_dict(keep_vars=True).items():
        by_id.setdefault(id(tensor), []).append(name)
    return {n: [m for m in names if m != n] for names in by_id.values() for n in names}


def check_shapes(model, shapes: dict[str, tuple[int, ...]], source, dtypes: dict[str, str] | None = None) -> None:
    """Refuse, by name, tensors the model lacks, the file lacks (a tied matrix may be stored under either of
    its names) or whose shapes differ. `model` may live on the meta device: nothing is read or allocated."""
    expected = model.state_dict(keep_vars=True)
    tied = _tied_aliases(model)
    missing = [n for n in expected if n not in shapes and not any(a in shapes for a in tied.get(n, ()))]
    unexpected = [n for n in shapes if n not in expected]
    wrong = [f"{n}: file {tuple(s)} vs model {tuple(expected[n].shape)}"
             for n, s in shapes.items() if n in expected and tuple(s) != tuple(expected[n].shape)]
    wrong += [f"{n}: file dtype {dtypes[n]}, a floating-point tensor expected" for n in shapes
              if dtypes and n in expected and expected[n].is_floating_point() and dtypes[n] not in _FLOAT_DTYPES]
    wrong += [f"{n}: file dtype {dtypes[n]}, {_INT_DTYPES[expected[n].dtype]} expected" for n in shapes
              if dtypes and n in expected and expected[n].dtype in _INT_DTYPES
              and dtypes[n] != _INT_DTYPES[expected[n].dtype]]
    if missing or unexpected or wrong:
        parts = []
        if missing:
            parts.append(f"missing tensors {missing[:8]}{' ...' if len(missing) > 8 else ''}")
        if unexpected:
            parts.append(f"unexpected tensors {unexpected[:8]}{' ...' if len(unexpected) > 8 else ''}")
        if wrong:
            parts.append(f"shape mismatches {wrong[:8]}{' ...' if len(wrong) > 8 else ''}")
        hint = ""
        if any(n.endswith(".qweight") for n in unexpected) and not any(n.endswith(".qweight") for n in expected):
            hint = (f" (the file holds quantized weights, but its config.json's extra[{QUANTIZATION!r}] does not "
                    "name the quantized modules: save the quantized model again with this attnlab)")
        raise CheckpointError(f"{source} does not match its config: " + "; ".join(parts) + hint)


def load_state(model, tensors: dict[str, torch.Tensor], source: str | Path) -> None:
    """Copy `tensors` into `model`, refusing missing, unexpected or mis-shaped tensors by name."""
    check_shapes(model, {n: tuple(t.shape) for n, t in tensors.items()}, source)
    expected = model.state_dict(keep_vars=True)
    with torch.no_grad():
        for name, tensor in tensors.items():
            expected[name].copy_(tensor)


def materialize(config: AnyConfig, tensors: dict[str, torch.Tensor], source, device=None):
    """The model `config` describes, holding exactly `tensors` (attnlab names): checked on the meta device,
    then allocated without random initialisation and filled. Used by every loader (HF, GGUF, attnlab)."""
    model = build_model(config, device="meta")
    check_shapes(model, {n: tuple(t.shape) for n, t in tensors.items()}, source)
    allocate_empty(model, device)
    load_state(model, tensors, source)
    return model.eval()


def base_directory(config: AnyConfig, source="config.json") -> Path | None:
    """The installed base checkpoint folder a config's extra["base"] names (None without one); a missing
    package is a MissingDataError with its pip command, a malformed entry a CheckpointError."""
    base = config.extra.get("base") if isinstance(config, ModelConfig) else None
    if base is None:
        return None
    keys = ("module", "package", "folder")
    if not isinstance(base, dict) or not all(isinstance(base.get(k), str) and base[k] for k in keys):
        raise CheckpointError(f"{source}: extra['base'] must name the base's module, package and folder (strings)")
    folder = Path(base["folder"])
    if folder.is_absolute() or ".." in folder.parts:
        raise CheckpointError(f"{source}: extra['base']['folder']={base['folder']!r} must be a relative folder "
                              "inside the package, without '..'")
    return package_folder(base["module"], base["package"]) / folder


def file_sha256(path: Path) -> str:
    """The hex sha256 of a file, read in 1 MiB chunks."""
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def load_attnlab(directory: str | Path, device=None):
    """An attnlab checkpoint directory -> model (eval mode). Names, shapes and dtypes are checked against the
    safetensors header before any memory is allocated; tensors are then copied in one at a time."""
    directory = Path(directory)
    config = read_config(directory)
    weights = directory / WEIGHTS_NAME
    header = read_header(weights)  # small files first: a 3 GB config beside a 1 MB file never allocates
    refuse_if_absurd(config, directory / CONFIG_NAME)  # ConfigError: more than the machine's memory
    if base_directory(config, directory / CONFIG_NAME) is not None:
        raise CheckpointError(f"{directory} holds only the tensors trained on top of a base model "
                              f"({config.extra['base'].get('package')}); load it with attnlab.load")
    model = build_for_checkpoint(config, directory / CONFIG_NAME)
    check_shapes(model, {n: s for n, (s, _) in header.items()}, weights, {n: d for n, (_, d) in header.items()})
    allocate_empty(model, device)
    targets = model.state_dict(keep_vars=True)
    try:
        with safe_open(str(weights), framework="pt") as f, torch.no_grad():
            for name in header:
                targets[name].copy_(f.get_tensor(name))
    except (SafetensorError, OSError, ValueError, RuntimeError) as exc:
        raise CheckpointError(f"{weights} is truncated or corrupted ({exc})") from None
    check_finite(model, weights)  # a quantized module's NaN / inf scales: refused by name
    return model.eval()


# ---------------------------------------------------------------------------------------- training runs
def where_inside(folder: Path, path: Path, loop: Callable[[], Exception],
                 outside: Callable[[], Exception]) -> Path | None:
    """Where `path` leads, every link followed, relative to `folder`; None when it is not there at all (not even
    a broken link).

    Why: a file of a run folder (`latest`, the metrics, the probe) may be a link a stranger made; it is judged by
    where it leads before it is opened. One that cannot be followed (a loop) raises `loop()`, one that leads out
    of `folder` (or to the folder itself) `outside()`: the caller's own errors, which never quote what it names.
    """
    if not os.path.lexists(path):
        return None
    try:
        home, target = folder.resolve(), path.resolve()
    except (OSError, RuntimeError):  # a symlink loop
        raise loop() from None
    if target == home or not target.is_relative_to(home):
        raise outside()
    return target.relative_to(home)


def is_run_directory(path: str | Path) -> bool:
    """A training run's output folder (`latest` + step-XXXXXXXX folders) rather than a checkpoint."""
    path = Path(path)
    return not is_regular(path / CONFIG_NAME) and (is_regular(path / LATEST) or any(
        p.is_dir() for p in path.glob(f"{STEP_PREFIX}*")))


def latest_step(run: str | Path) -> Path | None:
    """The step directory `run/latest` names, or None when the run has never saved. A `latest` that names a
    missing directory is an error (something deleted it), not a fresh start.

    `latest` is a file a stranger may have written or linked: one that leads outside the run folder (a link to
    /etc/passwd, to another folder, a name with ../) is refused by its own path, and its content is never
    quoted in an error unless it has the exact form of a step name (step-XXXXXXXX), so a link to a secret never
    ends up in a message, a log or the explorer's /api/models."""
    run = Path(run)
    pointer = run / LATEST

    def outside() -> CheckpointError:
        return CheckpointError(f"{pointer} leads outside {run} (a link to another place): refused; `latest` must be "
                               f"a file naming a step directory of the run (one line like {step_name(100)})")

    where = where_inside(run, pointer, lambda: CheckpointError(
        f"{pointer} is a link that cannot be followed (a loop?); it should be a file naming a step directory of {run}"),
        outside)
    if where is None:
        return None
    inside = len(where.parts) == 1 if os.path.isdir(pointer) else where == Path(LATEST)  # a step folder, or itself
    if not inside:
        raise outside()
    if os.path.isdir(pointer):  # `latest` made a link to (or copy of) the step directory
        return pointer
    name = read_text(pointer, limit=4096, what="pointer to the newest step").strip()
    if not STEP_NAME.fullmatch(name):
        raise CheckpointError(f"{pointer} does not name a step directory of {run}: it should hold one line like "
                              f"{step_name(100)} (its content is not shown)")
    path = run / name
    if not path.is_dir():
        raise CheckpointError(f"{pointer} names {name}, which is not a step directory in {run}")
    return path


def step_name(step: int) -> str:
    """The folder name of a training step's checkpoint: step-00000100."""
    return f"{STEP_PREFIX}{step:08d}"


def newest_checkpoint(path: str | Path) -> Path:
    """A checkpoint directory from what a user may point at: the directory itself, a training run folder (its
    newest step), or the run's `latest` pointer file."""
    path = Path(path)
    if path.name == LATEST and (is_regular(path) or path.is_symlink()):  # a link is checked by latest_step
        path = path.parent
    if not is_run_directory(path):
        return path
    step = latest_step(path)
    if step is None:
        steps = sorted(p for p in path.glob(f"{STEP_PREFIX}*") if p.is_dir())
        if not steps:
            raise CheckpointError(f"{path} is a training run without any saved step")
        step = steps[-1]
    return step
