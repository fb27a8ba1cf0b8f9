"""The thread policy (attnlab.threads): the caller's thread count always comes back, the probe's cache is read,
written, re-measured when stale and survives a corrupt file, other processes' CPU use is counted from /proc/stat
snapshots without our own, --threads is validated, and generation under the policy gives the same tokens.

No test times anything: the probe's timer is replaced where a decision is checked."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import pytest
import torch
from cli_calls import run_cli

import attnlab
from attnlab import threads as T
from attnlab.cli import main
from attnlab.errors import InputError
from attnlab.files import CacheWarning

CHECKPOINT = "attnlab/assets/checkpoints/gpt-char"


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    """A private cache dir and memo; the test's torch thread count back afterwards whatever happens."""
    monkeypatch.setenv("ATTNLAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(T, "_MEMO", {})
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


@pytest.fixture()
def two_cores(monkeypatch):
    """A 2-core machine whose torch default is 2 threads (the policy only ever lowers the caller's count)."""
    monkeypatch.setattr(T, "allowed_cores", lambda: 2)
    torch.set_num_threads(2)


def _decoder():
    torch.manual_seed(0)
    return attnlab.build_model(attnlab.presets["tiny-decoder"])


# ------------------------------------------------------------------------------------------ the scope
def test_using_threads_restores_the_callers_count_also_on_error():
    torch.set_num_threads(2)
    with T.using_threads(1) as scope:
        assert torch.get_num_threads() == 1 and scope.threads == 1
        with T.using_threads(2):
            assert torch.get_num_threads() == 2
        assert torch.get_num_threads() == 1  # the inner scope gave back the outer one's count
        scope.retune(2)
        assert torch.get_num_threads() == 2
    assert torch.get_num_threads() == 2
    torch.set_num_threads(2)
    with pytest.raises(RuntimeError, match="inside"):
        with T.using_threads(1):
            raise RuntimeError("inside the scope")
    assert torch.get_num_threads() == 2
    assert not T._SCOPES  # no scope is left registered


@pytest.mark.parametrize("value, expected", [(None, None), (0, None), ("auto", None), ("0", None), (" AUTO ", None),
                                             (3, 3), ("4", 4)])
def test_check_threads_accepts_counts_and_auto(value, expected):
    assert T.check_threads(value) == expected


@pytest.mark.parametrize("value", [-1, "-2", "x", 2.5, True, "1.5", "", 10**9, "1000000000", 10**30])
def test_check_threads_refuses_the_rest_by_name(value):
    with pytest.raises(InputError, match=r"threads=.*allowed a positive integer .* 0 / 'auto'"):
        T.check_threads(value)


# ------------------------------------------------------------------------------------------ free cores
@pytest.fixture
def clock(monkeypatch) -> dict:
    """The sampler's clocks, set by hand: now (monotonic s), busy (all processes' CPU s on the allowed cores) and
    own (this process's CPU s); any sleep fails the test, since these answers must come without waiting."""
    clock = {"now": 100.0, "busy": 10.0, "own": 3.0}
    fake = SimpleNamespace(monotonic=lambda: clock["now"], process_time=lambda: clock["own"],
                           sleep=lambda s: pytest.fail("the sampler slept instead of answering at once"),
                           time=time.time)
    monkeypatch.setattr(T, "time", fake)
    monkeypatch.setattr(T, "_busy_seconds", lambda: clock["busy"])
    return clock


def test_other_processes_cpu_is_counted_without_our_own(monkeypatch, clock):
    """busy: all processes' CPU seconds on the allowed cores; own: this process's. Over 1 s, 1.5 s busy of which
    0.5 s ours leaves 1 core to others; a call within one window reuses the last answer without waiting."""
    sampler = T._Sampler()
    sampler.last = (99.0, 8.5, 2.5)
    assert sampler.others() == pytest.approx(1.0)  # (10 - 8.5) - (3 - 2.5) over 1 s
    clock["now"] += 0.001
    assert sampler.others() == pytest.approx(1.0)  # inside one window: the last answer
    clock.update(now=102.0, busy=12.0, own=5.0)  # 2 s, all of it ours
    assert sampler.others() == pytest.approx(0.0)
    monkeypatch.setattr(T, "_busy_seconds", lambda: None)  # off Linux: nothing known
    assert sampler.others() is None


def test_free_cores_subtract_other_processes_and_other_scopes(monkeypatch):
    monkeypatch.setattr(T, "allowed_cores", lambda: 4)
    monkeypatch.setattr(T._SAMPLER, "others", lambda window=T.WINDOW_S: 1.0)
    assert T.free_cores() == 3.0
    monkeypatch.setitem(T._SCOPES, -1, 2)  # a concurrent request in another thread holds 2 threads
    assert T.free_cores() == 1.0


def test_choose_never_exceeds_free_cores_or_the_callers_count(two_cores, monkeypatch):
    monkeypatch.setattr(T, "best_threads", lambda model, rows, up_to: pytest.fail("probed with one core free"))
    monkeypatch.setattr(T, "free_cores", lambda window=T.WINDOW_S: 0.3)  # another process holds both cores
    assert T.choose(model=_decoder(), rows=1) == 1
    assert T.choose(3) == 3  # an explicit count is taken as given
    monkeypatch.setattr(T, "free_cores", lambda window=T.WINDOW_S: 1.7)  # a little background noise
    assert T.choose() == 2
    torch.set_num_threads(1)
    assert T.choose() == 1  # the caller asked for one thread (OMP_NUM_THREADS=1): never raised
    assert T.choose(cap=2) == 2


def test_choose_takes_the_measured_best_for_a_decoding_shape(two_cores, monkeypatch):
    monkeypatch.setattr(T, "free_cores", lambda window=T.WINDOW_S: 2.0)
    monkeypatch.setattr(T, "time_decode", lambda model, rows, counts: {1: 1.0, 2: 1.5})
    model = _decoder()
    assert T.choose(model=model, rows=1) == 1
    assert T.choose() == 2  # no shape: free cores alone
    assert T.choose(model=model, rows=T.MAX_DECODE_ROWS + 1) == 2  # a prefill, not a decoding step


# ------------------------------------------------------------------------------------------ short requests
def _stale_sampler(monkeypatch):
    """A fresh sampler whose last snapshot is older than REUSE_S, and a clock whose sleep is counted."""
    sleeps = []
    fake = SimpleNamespace(monotonic=time.monotonic, process_time=time.process_time, perf_counter=time.perf_counter,
                           time=time.time, sleep=lambda s: sleeps.append(s))
    monkeypatch.setattr(T, "time", fake)
    sampler = T._Sampler()
    sampler.last = (time.monotonic() - 2 * T.REUSE_S, 0.0, 0.0)
    monkeypatch.setattr(T, "_SAMPLER", sampler)
    return sampler, sleeps


def test_a_short_generation_neither_probes_nor_waits_for_a_sample(two_cores, monkeypatch):
    """gpt-char, 56 tokens after 4 (a 25 ms request): the policy used to sleep 30 ms for a fresh sample of the
    other processes (no snapshot in the last REUSE_S) and time a 0.25-2 s probe when none was on file; now it does
    neither (counted, not timed) and runs at one thread, the count that cannot be the slow path."""
    probes = []
    monkeypatch.setattr(T, "time_decode", lambda model, rows, counts: probes.append(counts) or {1: 1.0, 2: 0.5})
    sampler, sleeps = _stale_sampler(monkeypatch)
    model, tokenizer = attnlab.load(CHECKPOINT)
    seen = []
    model.register_forward_hook(lambda *_: seen.append(torch.get_num_threads()))
    ids = tokenizer.encode("ROMEO: ")[:4]
    assert T.request_seconds(model, 1, len(ids) + 56) < T.SHORT_S
    for _ in range(2):  # the first finds the snapshot stale; the second a recent one, and no probe on file
        attnlab.generate(model, [ids], max_new_tokens=56, eos_token_id=None)
    assert sleeps == [] and probes == [] and set(seen) == {1}
    assert time.monotonic() - sampler.last[0] < T.REUSE_S  # the stale snapshot was replaced: the next one knows
    assert torch.get_num_threads() == 2


def test_a_short_request_takes_a_probe_on_file_and_a_long_one_probes(two_cores, monkeypatch):
    probes = []
    monkeypatch.setattr(T, "time_decode", lambda model, rows, counts: probes.append(counts) or {1: 1.0, 2: 0.5})
    monkeypatch.setattr(T, "free_cores", lambda window=T.WINDOW_S: 2.0)
    monkeypatch.setattr(T, "recent_free_cores", lambda window=T.WINDOW_S: 2.0)
    model = _decoder()
    short, long = 60, 10**5
    assert T.request_seconds(model, 1, short) < T.SHORT_S <= T.request_seconds(model, 1, long)
    assert T.choose(model=model, rows=1, steps=short) == 1 and probes == []  # nothing on file: one thread
    assert T.choose(model=model, rows=1, steps=long) == 2 and probes == [[1, 2]]  # worth its probe
    T._MEMO.clear()  # another process: the file answers the short request
    assert T.choose(model=model, rows=1, steps=short) == 2 and len(probes) == 1
    entry = json.loads(T.cache_file().read_text())
    for value in entry.values():
        value["measured"] -= 2 * T.MAX_AGE_S  # stale: a long request would time it again, a short one takes it
    T.cache_file().write_text(json.dumps(entry))
    T._MEMO.clear()
    assert T.choose(model=model, rows=1, steps=short) == 2 and len(probes) == 1
    monkeypatch.setattr(T, "recent_free_cores", lambda window=T.WINDOW_S: None)  # no recent snapshot
    assert T.choose(model=model, rows=1, steps=short) == 1
    monkeypatch.setattr(T, "recent_free_cores", lambda window=T.WINDOW_S: 0.3)  # the cores are taken
    assert T.choose(model=model, rows=1, steps=short) == 1


def test_the_sampler_without_waiting_restarts_a_stale_window(monkeypatch, clock):
    """recent(): a snapshot older than REUSE_S says nothing about now (None, and a new snapshot); a span shorter
    than one window keeps the last answer; a span between measures others' use, never sleeping."""
    sampler = T._Sampler()
    assert sampler.recent() is None  # nothing yet
    sampler.last, sampler.value = (100.0 - 2 * T.REUSE_S, 0.0, 0.0), 1.5
    assert sampler.recent() is None and sampler.last == (100.0, 10.0, 3.0) and sampler.value is None
    clock["now"] += T.WINDOW_S / 2
    assert sampler.recent() is None  # within one window of the restart: nothing measured yet
    clock.update(now=101.0, busy=11.5, own=3.5)  # 1 s: 1.5 s busy, 0.5 s of it ours
    assert sampler.recent() == pytest.approx(1.0)
    monkeypatch.setattr(T, "allowed_cores", lambda: 2)
    monkeypatch.setattr(T, "_SAMPLER", sampler)
    clock["now"] += T.WINDOW_S / 2
    assert T.recent_free_cores() == pytest.approx(1.0)  # the last answer within one window


# ------------------------------------------------------------------------------------------ the cache
def test_probe_is_cached_on_disk_and_reused(two_cores, monkeypatch):
    calls = []
    monkeypatch.setattr(T, "free_cores", lambda window=T.WINDOW_S: 2.0)
    monkeypatch.setattr(T, "time_decode", lambda model, rows, counts: calls.append(counts) or {1: 1.0, 2: 0.5})
    model = _decoder()
    assert T.best_threads(model, 1, 2) == 2
    assert calls == [[1, 2]]
    entry = json.loads(T.cache_file().read_text())[T.probe_key(model, T.decode_weights(model), 1)]
    assert entry["best"] == 2 and entry["quiet"] is True and entry["seconds"] == {"1": 1.0, "2": 0.5}
    T._MEMO.clear()  # a new process: read from the file, not timed again
    assert T.best_threads(model, 1, 2) == 2 and len(calls) == 1
    assert T.best_threads(model, 3, 2) == 2 and len(calls) == 2  # another row class is another key
    assert T.best_threads(model, 4, 2) == 2 and len(calls) == 2  # ... and 3 and 4 rows share one


def test_the_cache_keeps_the_newest_entries(two_cores, monkeypatch):
    monkeypatch.setattr(T, "MAX_ENTRIES", 3)
    old = {f"k{i}": {"best": 1, "seconds": {"1": 1.0}, "measured": float(i), "quiet": True} for i in range(3)}
    T.cache_file().parent.mkdir(parents=True)
    T.cache_file().write_text(json.dumps({**old, "junk": 5}))
    T._write_cache(T.cache_file(), "new", {"best": 2, "seconds": {"1": 1.0, "2": 0.5}, "measured": 10.0})
    assert sorted(json.loads(T.cache_file().read_text())) == ["k1", "k2", "new"]


def test_a_tie_goes_to_fewer_threads(two_cores, monkeypatch):
    monkeypatch.setattr(T, "free_cores", lambda window=T.WINDOW_S: 2.0)
    monkeypatch.setattr(T, "time_decode", lambda model, rows, counts: {1: 1.0, 2: 1.0 / (T.GAIN * 0.99)})
    assert T.best_threads(_decoder(), 1, 2) == 1


@pytest.mark.parametrize("age, quiet, timed_again", [
    (60.0, True, False), (T.MAX_AGE_S + 60, True, True),  # stale after MAX_AGE_S
    (60.0, False, False), (T.RETRY_BUSY_S + 60, False, True),  # a disturbed probe is retried sooner
])
def test_stale_entries_are_measured_again(two_cores, monkeypatch, age, quiet, timed_again):
    calls = []
    monkeypatch.setattr(T, "free_cores", lambda window=T.WINDOW_S: 2.0)
    monkeypatch.setattr(T, "time_decode", lambda model, rows, counts: calls.append(1) or {1: 1.0, 2: 0.5})
    model = _decoder()
    key = T.probe_key(model, T.decode_weights(model), 1)
    T.cache_file().parent.mkdir(parents=True)
    T.cache_file().write_text(json.dumps({key: {"best": 1, "seconds": {"1": 1.0, "2": 2.0},
                                                "measured": time.time() - age, "quiet": quiet}}))
    assert T.best_threads(model, 1, 2) == (2 if timed_again else 1)
    assert len(calls) == (1 if timed_again else 0)


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '{"%s": {"best": "x"}}', '{"%s": 7}'])
def test_a_corrupt_cache_is_measured_again_and_overwritten(two_cores, monkeypatch, text):
    monkeypatch.setattr(T, "free_cores", lambda window=T.WINDOW_S: 2.0)
    monkeypatch.setattr(T, "time_decode", lambda model, rows, counts: {1: 1.0, 2: 0.5})
    model = _decoder()
    key = T.probe_key(model, T.decode_weights(model), 1)
    T.cache_file().parent.mkdir(parents=True)
    T.cache_file().write_text(text.replace("%s", key) if "%s" in text else text)
    with pytest.warns(CacheWarning, match="threads.json.*measured again"):
        assert T.best_threads(model, 1, 2) == 2
    assert json.loads(T.cache_file().read_text())[key]["best"] == 2


def test_the_probe_times_every_count_and_leaves_threads_mode_and_rng_alone(two_cores):
    torch.manual_seed(0)
    model = attnlab.build_model(attnlab.presets["tiny-decoder"].replace(dropout=0.1)).train()
    torch.manual_seed(1)
    expected = torch.rand(3)
    torch.manual_seed(1)
    seconds = T.time_decode(model, 1, [1, 2], budget_s=0.0)
    assert set(seconds) == {1, 2} and all(0 < s < 1 for s in seconds.values())
    assert torch.get_num_threads() == 2 and model.training
    assert torch.equal(torch.rand(3), expected)  # no dropout draw, no random inputs from the global stream
    encoder = attnlab.build_model(attnlab.presets["tiny-encoder"])  # not a decoder: the weight-matrix pass
    assert set(T.time_decode(encoder, 2, [1, 2], budget_s=0.0)) == {1, 2}


def test_no_probe_is_timed_or_kept_while_kernels_are_being_built(two_cores, monkeypatch):
    """A user's first `attnlab generate` runs torch's stand-ins for kernels a detached build is making
    (kernel_build.DEFERRED): the probe stops after the one-position forward that asked for them, takes every count
    it may, and writes nothing, so the next run (with the kernels) measures. The stand-in is simulated: the
    forward itself names a kernel as deferred, as kernel_build.load does under DEFER."""
    from attnlab.layers import kernel_build

    monkeypatch.setattr(T, "free_cores", lambda window=T.WINDOW_S: 2.0)
    monkeypatch.setattr(kernel_build, "DEFERRED", [])
    model = _decoder()
    forwards = []

    def deferring(module, args, kwargs):
        forwards.append(args[0].shape[1])
        kernel_build.DEFERRED.append("int4")

    handle = model.register_forward_pre_hook(deferring, with_kwargs=True)
    try:
        assert T.best_threads(model, 1, 2) == 2
    finally:
        handle.remove()
    assert forwards == [1], "only the one-position forward ran: no fill of the cache, no timed step"
    assert not T.cache_file().exists()
    kernel_build.DEFERRED.clear()  # the kernels are built: the next process probes and keeps its answer
    T._MEMO.clear()
    monkeypatch.setattr(T, "time_decode", lambda model, rows, counts: {1: 1.0, 2: 1.0})
    assert T.best_threads(model, 1, 2) == 1 and T.cache_file().exists()


# ------------------------------------------------------------------------------------------ generation, CLI
def test_generate_under_the_policy_gives_the_same_tokens_and_restores_threads(two_cores, monkeypatch):
    model, tokenizer = attnlab.load(CHECKPOINT)
    ids = tokenizer.encode("ROMEO: ")
    seen = []
    model.register_forward_hook(lambda *_: seen.append(torch.get_num_threads()))
    reference = attnlab.generate(model, [ids], max_new_tokens=12, threads=1).tokens
    assert set(seen) == {1} and torch.get_num_threads() == 2
    monkeypatch.setattr(T, "free_cores", lambda window=T.WINDOW_S: 2.0)
    monkeypatch.setattr(T, "recent_free_cores", lambda window=T.WINDOW_S: 2.0)  # a short request's view
    for best in (1, 2):
        monkeypatch.setattr(T, "best_threads", lambda model, rows, up_to, best=best, **_: best)
        seen.clear()
        assert attnlab.generate(model, [ids], max_new_tokens=12).tokens == reference
        assert set(seen) == {best} and torch.get_num_threads() == 2
        seen.clear()
        streamed = []
        for step in attnlab.generate(model, [ids], max_new_tokens=12, stream=True):
            assert torch.get_num_threads() == 2  # the caller's count between steps
            streamed.append(int(step.tokens[0]))
        assert [streamed] == reference and set(seen) == {best}
    monkeypatch.setattr(T, "free_cores", lambda window=T.WINDOW_S: 0.0)
    monkeypatch.setattr(T, "recent_free_cores", lambda window=T.WINDOW_S: 0.0)
    seen.clear()
    assert attnlab.generate(model, [ids], max_new_tokens=4, num_beams=2).tokens
    assert set(seen) == {1}
    with pytest.raises(InputError, match="threads=-1"):
        attnlab.generate(model, [ids], threads=-1)


@pytest.mark.parametrize("command", [["generate", CHECKPOINT, "--prompt", "a"], ["explore", "--no-browser"]])
@pytest.mark.parametrize("bad", ["-1", "two", "1.5"])
def test_threads_option_is_validated_in_one_line(command, bad, capsys):
    code, _, err = run_cli([*command, "--threads", bad], capsys)
    assert code == 2 and f"--threads={bad!r}" in err and "positive integer" in err and "Traceback" not in err


@pytest.mark.parametrize("command", [["generate", CHECKPOINT, "--prompt", "a"], ["explore", "--no-browser"],
                                     ["cost", "tiny-decoder", "--measure"]])
def test_a_billion_threads_is_one_line_before_anything_runs(command, capsys):
    """--threads 1000000000 aborted inside libgomp; now refused with the bound this machine allows."""
    code = main([*command, "--threads", "1000000000"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "--threads=1000000000" in err and f"up to {T.thread_limit()}" in err


def test_generate_command_takes_a_thread_count(capsys):
    torch.set_num_threads(2)
    assert main(["generate", CHECKPOINT, "--prompt", "ROMEO:", "--max-new-tokens", "3", "--threads", "1"]) == 0
    assert torch.get_num_threads() == 2


def test_explorer_requests_run_with_the_given_threads():
    from fastapi.testclient import TestClient

    from attnlab.explorer.server.app import create_app

    with pytest.raises(InputError, match="threads=0.5"):
        create_app(threads=0.5)
    torch.set_num_threads(2)
    app = create_app(threads=1)
    seen = []
    model = app.state.registry.get("gpt-char").model
    model.register_forward_hook(lambda *_: seen.append(torch.get_num_threads()))
    with TestClient(app, base_url="http://localhost") as client:
        r = client.post("/api/generate/step", json={"model": "gpt-char", "prompt": "ROMEO:", "compare": False})
        assert r.status_code == 200, r.text
    assert seen and set(seen) == {1}


# ------------------------------------------------------------------------------------------ training
class _CountingTask:
    """A tiny decoder on random tokens whose loss notes the torch thread count of each step."""

    tokenizer = None

    def __init__(self):
        self.model = _decoder()
        self.threads: list[int] = []

    def train_batch(self, generator, batch_size):
        return {"ids": torch.randint(0, 100, (batch_size, 9), generator=generator)}

    def loss(self, model, batch):
        self.threads.append(torch.get_num_threads())
        ids = batch["ids"]
        logits = model(ids[:, :-1]).logits
        return torch.nn.functional.cross_entropy(logits.flatten(0, 1), ids[:, 1:].flatten()), ids[:, 1:].numel()

    def evaluate(self, model):
        return {}

    def flops_per_item(self):
        return None


@pytest.mark.parametrize("threads, free, expected", [(0, [2.0, 2.0, 0.2, 2.0], [2, 1, 2]), (1, [], [1, 1, 1])])
def test_training_threads_auto_follow_the_free_cores_and_come_back(two_cores, monkeypatch, tmp_path, threads, free,
                                                                   expected):
    """threads=0: the free cores at the start and at every re-check (here: before every step); threads=N: N
    throughout, the free cores never looked at; the caller's count after fit either way."""
    from attnlab.training.settings import TrainSettings
    from attnlab.training.trainer import Trainer

    answers = iter(free)
    monkeypatch.setattr(T, "free_cores", lambda window=T.WINDOW_S: next(answers))
    monkeypatch.setattr(Trainer, "RECHECK_S", 0.0)
    task = _CountingTask()
    settings = TrainSettings(steps=3, batch_size=2, warmup=1, eval_every=0, log_every=1, plot=False, threads=threads)
    Trainer(task, settings, tmp_path, quiet=True).fit()
    assert task.threads == expected
    assert torch.get_num_threads() == 2


def test_a_decoder_with_quantized_weights_is_probed_too(two_cores, monkeypatch):
    """A model whose matrices are all quantized (a GGUF's kept blocks, attnlab.quantize int4) has no float Linear
    weight left; the probe used to skip it and give every free core to its kernels, although a second thread ran
    SmolLM2's step no faster (48.2 vs 46.0 tokens/s at 1 and 2). Its cached decoding step is timed like any
    decoder's, and the shapes and formats name its cache entry."""
    calls = []
    monkeypatch.setattr(T, "free_cores", lambda window=T.WINDOW_S: 2.0)
    monkeypatch.setattr(T, "time_decode", lambda model, rows, counts: calls.append(counts) or {1: 1.0, 2: 1.5})
    model = attnlab.quantize(_decoder().eval(), "int4")
    assert T.best_threads(model, 1, 2) == 1 and calls == [[1, 2]]
    key = T.probe_key(model, T.decode_weights(model), 1)
    assert ":int4*" in key and key != T.probe_key(_decoder(), T.decode_weights(_decoder()), 1)
    T._decoding_step(model, 1)()  # the step the real probe times runs through the quantized products


def test_a_kernels_only_generation_runs_torch_at_one_thread_and_the_kernels_at_its_count(two_cores, monkeypatch):
    """A decoder whose matrices are all quantized generates with torch's pool at one thread and the kernels' pool
    at the request's count, prompt and steps alike (torch's pool waiting on the second core took all the kernels
    gained there); the caller's count comes back after, and the tokens are those of one thread (each output row
    is computed whole by one thread, whatever the split)."""
    from attnlab.layers import kernel_threads
    from attnlab.layers.quantized import QuantizedLinear

    model = attnlab.quantize(_decoder().eval(), "int4")
    layers = [m for m in model.modules() if isinstance(m, QuantizedLinear)]
    if not all(m.runs_kernel(1) and m.runs_kernel(5) for m in layers):
        pytest.skip("attnlab's kernels do not run on this CPU")
    assert T.kernels_only(model, 1) and T.kernels_only(model, 5, 1)
    assert not T.kernels_only(model, QuantizedLinear.MANY_ROWS + 1, 1)  # dequantized products: torch's pool
    assert not T.kernels_only(_decoder(), 1)  # float matrices: torch's pool does the products
    seen = []
    real = kernel_threads.count
    monkeypatch.setattr(kernel_threads, "count", lambda: seen.append((real(), torch.get_num_threads())) or real())
    ids = torch.tensor([[3, 1, 4, 1, 5]])
    two = attnlab.generate(model, ids, max_new_tokens=4, eos_token_id=None, threads=2).sequences
    assert torch.get_num_threads() == 2
    assert len(seen) >= len(layers) * 4 and set(seen) == {(2, 1)}  # the prompt's forward and three steps
    seen.clear()
    one = attnlab.generate(model, ids, max_new_tokens=4, eos_token_id=None, threads=1).sequences
    assert set(seen) == {(1, 1)} and torch.equal(one, two)


def test_kernel_threads_apart_restores_both_counts_also_on_error():
    from attnlab.layers import kernel_threads

    torch.set_num_threads(2)
    with pytest.raises(RuntimeError, match="inside"), kernel_threads.apart(2):
        assert (kernel_threads.count(), torch.get_num_threads()) == (2, 1)
        raise RuntimeError("inside")
    assert (kernel_threads.count(), torch.get_num_threads()) == (2, 2)
    torch.set_num_threads(1)
    assert kernel_threads.count() == 1  # outside a step the kernels follow torch's count
