"""Reading files a stranger may have written: never block, never read without bound, never raise a raw error.

Every checkpoint reader (attnlab's own, Hugging Face directories, tokenizers, training runs) goes through these
few functions, so a FIFO named config.json, a symlink loop, a 5 GB "config", JSON nested 100,000 deep or a
file that is not UTF-8 all end as one CheckpointError that names the file and says what is wrong.
"""

from __future__ import annotations

import json
import math
import os
import stat
import warnings
from pathlib import Path
from typing import Any

from attnlab.errors import CheckpointError

MAX_JSON_BYTES = 64 * 2**20  # config.json / attnlab_tokenizer.json / index files; the largest real one is ~1 MB
MAX_TOKENIZER_BYTES = 256 * 2**20  # tokenizer.json of 256k-token vocabularies is ~20 MB
MAX_CACHE_BYTES = 2**20  # peak.json / threads.json: a few hundred entries of a few numbers are ~100 KB


class CacheWarning(UserWarning):
    """A cache attnlab keeps for itself (peak.json, threads.json) could not be used: it is ignored and measured
    again. A warning, not an error: a cache is an optimisation, and a bad one must never stop the work."""


def check_regular(path: str | Path, what: str = "file") -> os.stat_result:
    """stat `path` (following links) and refuse anything but a regular file: a FIFO or a device would block or
    never end, a directory is not a file, a symlink loop cannot be followed."""
    path = Path(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise CheckpointError(f"{path} is missing: expected a {what}") from None
    except OSError as exc:  # ELOOP (symlink loop), EACCES, ENAMETOOLONG ...
        raise CheckpointError(f"{path} cannot be opened ({exc.strerror or exc}); expected a {what}") from None
    if not stat.S_ISREG(info.st_mode):
        kind = ("a directory" if stat.S_ISDIR(info.st_mode) else "a FIFO (named pipe)" if stat.S_ISFIFO(info.st_mode)
                else "a device or socket")
        raise CheckpointError(f"{path} is {kind}, not a regular file; expected a {what}")
    return info


def is_regular(path: str | Path) -> bool:
    """True for a regular file (after links); False for anything else, a missing path or a symlink loop."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def read_bytes(path: str | Path, limit: int, what: str = "file") -> bytes:
    """The whole file, refused before reading when it is not a regular file or is larger than `limit` bytes."""
    path = Path(path)
    info = check_regular(path, what)
    if info.st_size > limit:
        raise CheckpointError(f"{path} is {info.st_size:,} bytes; a {what} may hold at most {limit:,}")
    try:
        # O_NONBLOCK: should the path be swapped for a FIFO after the check, open() still returns at once
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise CheckpointError(f"{path} cannot be opened ({exc.strerror or exc})") from None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise CheckpointError(f"{path} is not a regular file; expected a {what}")
        data = f.read(limit + 1)
    if len(data) > limit:
        raise CheckpointError(f"{path} grew past {limit:,} bytes while being read")
    return data


def read_text(path: str | Path, limit: int = MAX_JSON_BYTES, what: str = "text file") -> str:
    try:
        return read_bytes(path, limit, what).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CheckpointError(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def _refuse_constant(name: str):
    raise ValueError(name)


def read_json(path: str | Path, limit: int = MAX_JSON_BYTES, what: str = "JSON file", *,
              finite: bool = False) -> Any:
    """Parsed JSON; CheckpointError for every way the file can be wrong (missing, not regular, too large,
    not UTF-8, not JSON, nested too deeply for the parser). finite=True also refuses NaN / Infinity, which
    Python's parser accepts although JSON has no such numbers. The error never quotes the file's text."""
    text = read_text(path, limit, what)
    try:
        return json.loads(text, parse_constant=_refuse_constant) if finite else json.loads(text)
    except json.JSONDecodeError as exc:
        raise CheckpointError(f"{path} is not valid JSON: {exc}") from None
    except RecursionError:
        raise CheckpointError(f"{path} nests JSON arrays/objects too deeply to be a {what}") from None
    except ValueError as exc:  # parse_constant: NaN, Infinity, -Infinity
        raise CheckpointError(f"{path} holds {exc}, which is not a JSON number; a {what} holds finite numbers") \
            from None


def read_json_object(path: str | Path, limit: int = MAX_JSON_BYTES, what: str = "JSON file", *,
                     finite: bool = False) -> dict[str, Any]:
    data = read_json(path, limit, what, finite=finite)
    if not isinstance(data, dict):
        raise CheckpointError(f"{path} must hold a JSON object ({what}), got a JSON {type(data).__name__}")
    return data


def write_json_atomic(path: str | Path, data: Any, tag: str = "") -> bool:
    """Write `data` as JSON to path through a temporary file and a rename, so a concurrent reader sees the old or
    the new file, never half of one. False (nothing raised) when the folder cannot be written: a cache in a
    read-only home is just not kept. tag: makes the temporary name unique per writer (process, thread)."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}{tag}.tmp")
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
        os.replace(tmp, path)
    except OSError:
        return False
    return True


def read_cache(path: str | Path, what: str) -> dict[str, Any]:
    """A cache attnlab wrote for itself (peak.json, threads.json), read as the untrusted file it may be: another
    program, a full disk or a stranger may have left anything there. {} when it is absent; {} and one
    CacheWarning naming the file and what is wrong when it is not a regular file, larger than MAX_CACHE_BYTES
    (not read), not UTF-8, not JSON, nested too deeply, holds NaN / Infinity, or is not a JSON object. The caller
    then measures again and overwrites it; the values inside are still the caller's to check (finite_number)."""
    path = Path(path)
    if not os.path.lexists(path):
        return {}
    try:
        return read_json_object(path, MAX_CACHE_BYTES, what, finite=True)
    except CheckpointError as exc:
        warn_cache(f"{exc}; ignored, measured again")
        return {}


def warn_cache(message: str) -> None:
    """One CacheWarning line (the command line prints it as `attnlab CMD: warning: ...`)."""
    warnings.warn(message, CacheWarning, stacklevel=3)


def finite_number(value, low: float = 0.0) -> bool:
    """A JSON number (not a bool, not a string) that is finite and > low: what a cached measurement must be."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            and value > low)
