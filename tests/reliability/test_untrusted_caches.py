"""Caches are untrusted input (issue 23.5): peak.json (the matmul peak MFU is quoted against) and threads.json
(the measured best thread count) may be left by another program, a full disk or a stranger. Each bad file is
ignored with ONE CacheWarning naming the file, measured again and overwritten; a file over the cap is not read.

Cheap: the measurements themselves are replaced by fixed numbers (the point is what is done with the file)."""

from __future__ import annotations

import json
import os
import warnings

import pytest
import torch

import attnlab
from attnlab import threads as T
from attnlab.cost import peak
from attnlab.files import MAX_CACHE_BYTES, CacheWarning

MEASURED_PEAK = 2.5e9  # what the replaced matmul timing "measures"


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


# (label, file text or bytes with %s where the entry's key goes, what the warning says)
BAD_FILES = [
    ("not-utf8", b"\xff\xfe{\x00}", "not UTF-8"),
    ("deeply-nested", '{"%s": ' + _nested(100_000) + "}", "too deeply"),
    ("not-an-object", "[1, 2]", "JSON object"),
    ("infinity", '{"%s": Infinity}', "Infinity"),
    ("nan", '{"%s": NaN}', "NaN"),
]


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNLAB_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(T, "_MEMO", {})
    return tmp_path


def _write(path, content, key: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content.replace("%s", key))


def _one_warning(caught, *words) -> str:
    cache = [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]
    assert len(cache) == 1, cache
    assert all(word in cache[0] for word in words), cache[0]
    return cache[0]


# ------------------------------------------------------------------------------------------ peak.json
def _peak_key() -> str:
    return peak.device_key("cpu", torch.float32)


def _measure(monkeypatch):
    calls = []
    monkeypatch.setattr(peak, "time_matmul", lambda size, device, dtype: calls.append(size) or MEASURED_PEAK)
    return calls


@pytest.mark.parametrize("label, content, words", BAD_FILES + [
    ("string", '{"%s": "1e12"}', "FLOP/s"), ("true", '{"%s": true}', "FLOP/s"), ("one", '{"%s": 1}', "FLOP/s"),
    ("negative", '{"%s": -5e9}', "FLOP/s")], ids=lambda v: v if isinstance(v, str) and len(v) < 20 else "")
def test_a_bad_peak_cache_is_ignored_with_one_warning_and_measured_again(cache_dir, monkeypatch, label, content,
                                                                        words):
    """`true` or `1` where the peak belongs was read as 1 FLOP/s: every MFU a billion. Now MFU is against the
    peak measured again, and the file holds that measurement afterwards."""
    calls = _measure(monkeypatch)
    _write(cache_dir / "peak.json", content, _peak_key())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert peak.mfu(MEASURED_PEAK / 4, "cpu", torch.float32) == pytest.approx(0.25)
    message = _one_warning(caught, "peak.json", "measured again", words)
    assert "hunter2" not in message and len(calls) == 1
    assert json.loads((cache_dir / "peak.json").read_text())[_peak_key()] == MEASURED_PEAK
    with warnings.catch_warnings(record=True) as caught:  # the rewritten file answers quietly
        warnings.simplefilter("always")
        assert peak.measured_peak_flops("cpu", torch.float32) == MEASURED_PEAK
    assert not caught and len(calls) == 1


def test_a_huge_peak_cache_is_not_read(cache_dir, monkeypatch):
    """A 300 MB file (sparse: no disk used) is refused by its size before a byte is read."""
    calls = _measure(monkeypatch)
    with open(cache_dir / "peak.json", "wb") as f:
        f.truncate(300 * 2**20)
    real_open = os.open

    def no_read(path, *args, **kwargs):
        assert not str(path).endswith("peak.json"), "a file over the cap was opened"
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", no_read)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert peak.measured_peak_flops("cpu", torch.float32) == MEASURED_PEAK
    _one_warning(caught, "peak.json", f"{MAX_CACHE_BYTES:,}")
    assert len(calls) == 1


def test_a_peak_cache_that_is_a_fifo_or_a_folder_is_ignored(cache_dir, monkeypatch):
    calls = _measure(monkeypatch)
    os.mkfifo(cache_dir / "peak.json")  # reading it would block forever
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert peak.measured_peak_flops("cpu", torch.float32) == MEASURED_PEAK
    _one_warning(caught, "peak.json", "FIFO")
    assert len(calls) == 1


# ------------------------------------------------------------------------------------------ threads.json
@pytest.fixture()
def decoder(monkeypatch):
    monkeypatch.setattr(T, "allowed_cores", lambda: 2)
    monkeypatch.setattr(T, "free_cores", lambda window=T.WINDOW_S: 2.0)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    torch.manual_seed(0)
    yield attnlab.build_model(attnlab.presets["tiny-decoder"])
    torch.set_num_threads(before)


def _good(**change) -> dict:
    import time

    return {"best": 1, "seconds": {"1": 1.0, "2": 2.0}, "measured": time.time() - 60, "quiet": True, **change}


@pytest.mark.parametrize("label, content, words", BAD_FILES + [
    ("best-string", {"best": "2"}, "thread count"), ("best-true", {"best": True}, "thread count"),
    ("best-billion", {"best": 10**9}, "thread count"), ("seconds-string", {"seconds": {"1": "fast"}}, "thread count"),
    ("measured-string", {"measured": "yesterday"}, "thread count"),
    ("count-billion", {"seconds": {"1": 1.0, str(10**9): 0.1}}, "thread count"),
    ("entry-number", 7, "thread count")], ids=lambda v: v if isinstance(v, str) and len(v) < 20 else "")
def test_a_bad_threads_cache_is_ignored_with_one_warning_and_measured_again(decoder, monkeypatch, label, content,
                                                                           words):
    """The decoding step is timed again (its answer: 2 threads), where a bad entry used to crash generation
    (int(Infinity), a billion threads) or be read as the answer."""
    calls = []
    monkeypatch.setattr(T, "time_decode", lambda model, rows, counts: calls.append(counts) or {1: 1.0, 2: 0.5})
    key = T.probe_key(decoder, T.decode_weights(decoder), 1)
    if isinstance(content, (dict, int)):
        content = json.dumps({key: _good(**content) if isinstance(content, dict) else content})
    _write(T.cache_file(), content, key)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert T.choose(model=decoder, rows=1) == 2
    _one_warning(caught, "threads.json", "measured again", words)
    assert calls == [[1, 2]]
    assert json.loads(T.cache_file().read_text())[key]["best"] == 2


def test_a_huge_threads_cache_is_not_read(decoder, monkeypatch):
    monkeypatch.setattr(T, "time_decode", lambda model, rows, counts: {1: 1.0, 2: 0.5})
    T.cache_file().parent.mkdir(parents=True, exist_ok=True)
    with open(T.cache_file(), "wb") as f:
        f.truncate(MAX_CACHE_BYTES + 1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert T.choose(model=decoder, rows=1) == 2
    _one_warning(caught, "threads.json", "at most")


def test_the_command_line_prints_a_cache_warning_in_one_line(cache_dir, monkeypatch, capsys):
    """`attnlab generate` with a bad threads.json: the text comes out, and stderr has one warning line."""
    from attnlab.cli import main

    monkeypatch.setattr(T, "allowed_cores", lambda: 2)
    monkeypatch.setattr(T, "free_cores", lambda window=T.WINDOW_S: 2.0)
    monkeypatch.setattr(T, "recent_free_cores", lambda window=T.WINDOW_S: 2.0)  # a short request reads the file too
    monkeypatch.setattr(T, "time_decode", lambda model, rows, counts: {1: 1.0, 2: 0.5})
    (cache_dir / "threads.json").write_text('{"a": Infinity}')
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        code = main(["generate", "attnlab/assets/checkpoints/gpt-char", "--prompt", "ab", "--max-new-tokens", "2"])
    finally:
        torch.set_num_threads(before)
    err = capsys.readouterr().err
    assert code == 0, err
    lines = [line for line in err.splitlines() if "threads.json" in line]
    assert len(lines) == 1 and lines[0].startswith("attnlab generate: warning: "), err
