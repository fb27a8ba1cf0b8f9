"""The decoding view: one step of generation with the KV cache, timed with and without it.

A decoder's one-token cached step runs where `attnlab.generate` runs it by default: through the compiled step
(generation/compiled.py) when compiled.auto says so (a quantized model with its blocks kept, a C++ compiler,
ATTNLAB_COMPILE not 0). A learner never waits for the compile, and the other views never slow down for it: a step
that finds it not built yet in this process runs eagerly and asks for it to be built (loaded from disk, else
compiled) in a background thread at the lowest CPU priority, which in a server starts only once the explorer has
been idle for a while (explorer/server/idle_builds.py; `attnlab explore --no-compile`: never); the steps after
it use it once it is ready. The catch-up of several tokens, encoder-decoders and the full recompute stay
eager. The answer says which way the step ran ("step_path") and, when eager, why.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import torch

from attnlab.errors import InputError
from attnlab.explorer.server import idle_builds
from attnlab.explorer.server.common import (
    a_an,
    check_index,
    encode,
    param_count,
    rounded,
    text_model,
    token_limit,
    token_text,
    token_texts,
)
from attnlab.explorer.server.registry import Loaded
from attnlab.explorer.server.sessions import GenerationSession, GenerationSessions
from attnlab.explorer.views.generation.sampling import sampling_tables
from attnlab.recording import active, capture
from attnlab.threads import kernels_apart, kernels_only, using_threads


# ------------------------------------------------------------------------------------------- generation
def filtered_probs(logits: torch.Tensor, temperature: float, top_k: int, top_p: float) -> torch.Tensor:
    """Next-token probabilities after temperature, top-k and nucleus (top-p) filtering.

    The logits are shifted so their maximum is 0 before the division: the softmax is unchanged, and a tiny
    temperature (1e-39) gives -inf for the others instead of inf - inf = NaN. Nucleus filtering always keeps
    the most probable token, so a top_p that rounds to 0 in float32 still leaves one token to draw."""
    if temperature <= 0 or float(torch.tensor(temperature, dtype=logits.dtype)) == 0:  # 5e-324 is 0 in float32
        probs = torch.zeros_like(logits)
        probs[logits.argmax()] = 1.0
        return probs
    scaled = (logits - logits.max()) / temperature
    if 0 < top_k < scaled.numel():
        kth = scaled.topk(top_k).values[-1]
        scaled = scaled.masked_fill(scaled < kth, float("-inf"))
    probs = scaled.softmax(-1)
    if 0 < top_p < 1:
        sorted_p, order = probs.sort(descending=True)
        cumulative = sorted_p.cumsum(-1)
        drop = cumulative - sorted_p >= top_p  # keep the smallest prefix whose mass reaches top_p
        drop[0] = False
        sorted_p = sorted_p.masked_fill(drop, 0.0)
        probs = torch.zeros_like(probs).scatter(0, order, sorted_p)
        probs = probs / probs.sum()
    return probs


def _generator_seed(seed: int, step: int) -> int:
    """The sampling seed of step `step` (seed * 100003 + step, as before), folded into the 64-bit range that
    torch.Generator.manual_seed accepts when it would fall outside it."""
    value = seed * 100_003 + step
    return value if -(2**63) <= value < 2**64 else value % 2**64


def _timed(fn, repeats: int = 3) -> tuple[Any, float]:
    best, result = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = _finished(fn())
        best = min(best, time.perf_counter() - t0)
    return result, best * 1000


def _device(model) -> torch.device:
    """Where the model's weights are: its inputs are made there."""
    return next(model.parameters()).device


def _finished(t: torch.Tensor) -> torch.Tensor:
    """`t` once its device has computed it: a GPU returns before its kernels run, and a step is timed to its end."""
    if t.is_cuda:
        torch.cuda.synchronize(t.device)
    return t


@dataclass
class _StepPath:
    """How this request's one-token cached step runs: `call` (compiled.compiled_step's) where the compiled step
    serves it, with `apart` (kernels_only: torch at one thread, the kernels at the request's count, as
    generate's Stepper runs it); else None and `why` it runs eagerly."""

    call: Any = None
    apart: bool = False
    why: str | None = None


def _why_eager(model, compiled) -> str:
    """Why compiled.auto(model) (or a recording) keeps this model's steps eager, in a few words for the page."""
    if compiled.switched_off():
        return "ATTNLAB_COMPILE=0"
    if not compiled.pays(model):
        return "float weights: eager is as fast" if not _quantized(model) else \
            "attnlab's quantized kernels do not run for these weights here: eager is as fast"
    reason = compiled.why_not(model)
    if reason:
        return reason
    return "a recording or an intervention is active"


def _step_path(model, enc_dec: bool, cache) -> _StepPath:
    """The compiled step for this request's one-token step where compiled.auto says so and it is built in this
    process; otherwise eager, and why. Never waits: a step not built yet is asked of idle_builds, which starts
    its build (compiled.build_in_background, at the thread counts the step will run with) at low priority when
    the server is idle, and this step runs eagerly."""
    if enc_dec:
        return _StepPath(why="an encoder-decoder's steps run eagerly")
    from attnlab.generation import compiled  # torch.compile's machinery: only for a decoder

    if not compiled.auto(model) or active() is not None:
        return _StepPath(why=_why_eager(model, compiled))
    apart, threads, dtype = kernels_only(model, 1, 1), torch.get_num_threads(), cache.layers[0].kv.dtype

    def start() -> None:  # in another thread: the counts are part of the step's key, those the call runs at
        with using_threads(threads), kernels_apart(apart):
            compiled.build_in_background(model, 1, dtype)

    key = (id(model), threads, apart, dtype)
    fresh = not idle_builds.BUILDS.was_started(key)  # this call starts it: the step runs eagerly, as a first one does
    waiting = idle_builds.BUILDS.ask(key, start)
    if waiting is not None:
        return _StepPath(why=waiting)
    with kernels_apart(apart):
        state = compiled.build_in_background(model, 1, dtype)
    if state == "ready" and not fresh:  # (a build thread may finish a small model's layers before this line)
        return _StepPath(compiled.compiled_step(model), apart)
    if state == "failed":
        return _StepPath(why="the step could not be compiled here")
    return _StepPath(why="compiling the step in the background at low priority (or loading it from disk); later "
                         "steps use it")


def _compiled_forward(path: _StepPath, token: int, cache) -> torch.Tensor:
    """One token after what `cache` holds, through the compiled step; -> its logits. The arguments are laid out as
    generate's Stepper lays them out, since the step's guards check strides too: the token a column of a
    (1, width) buffer, its position a column of one arange expanded to that width."""
    at, width = cache.length, cache.layers[0].capacity
    tokens = torch.zeros(1, width, dtype=torch.long)
    tokens[0, at] = token
    positions = torch.arange(width).expand(1, width)
    with kernels_apart(path.apart):
        return path.call(tokens[:, at:at + 1], None, positions[:, at:at + 1], cache)[0, -1]


def _sequence_forward(model, ids: list[int], cache, enc_dec: bool, encoder_hidden,
                      path: _StepPath | None = None) -> torch.Tensor:
    """Run `ids` after what `cache` holds, writing their keys and values into it; -> the last position's logits.

    Only the model's own forward with a KVCache: positions follow from cache.length. An encoder-decoder reads
    the encoder output until its cross-attention keys and values are cached (the first call). One token of a
    decoder goes through the compiled step where `path` has one (_step_path)."""
    if path is not None and path.call is not None and len(ids) == 1 and not enc_dec:
        return _compiled_forward(path, ids[0], cache)
    x = torch.tensor([ids], device=_device(model))  # (1, new)
    if enc_dec:
        cross_cached = cache.cross is not None and cache.cross[0].k is not None
        return model.decode(x, None if cross_cached else encoder_hidden, cache=cache, last_only=True)[1][0, -1]
    return model(x, cache=cache, last_only=True).logits[0, -1]


def _truncate(cache, length: int) -> None:
    """Forget positions from `length` on (their buffers are overwritten by the next tokens)."""
    for layer in cache.layers:
        layer.length = min(layer.length, length)


def _room(model, session: GenerationSession, needed: int, limit: int) -> None:
    """Make the session's cache hold at least `needed` positions: allocated in steps of 32 (never beyond the
    model's limit) and copied over when it grows, so a session costs what it holds, not the model's maximum."""
    from attnlab.cache import KVCache

    cache = session.cache
    if cache is not None and cache.layers[0].capacity >= needed:
        return
    grown = KVCache.for_model(model, batch=1, capacity=min(max(needed + 32, 64), max(limit, needed)))
    if cache is not None:
        n = cache.length
        for old, new in zip(cache.layers, grown.layers, strict=True):
            new.k[:, :, :n] = old.k[:, :, :n]
            new.v[:, :, :n] = old.v[:, :, :n]
            new.length = n
        grown.cross = cache.cross
    session.cache = grown


def _check_settings(temperature, top_k, top_p, seed) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int) or not -(2**63) <= seed < 2**63:
        raise InputError(f"seed={seed!r}: allowed an integer from -2**63 to 2**63-1")
    if not isinstance(temperature, (int, float)) or not 0 <= temperature <= 10:
        raise InputError(f"temperature={temperature!r}: allowed 0 (greedy) to 10")
    if not isinstance(top_p, (int, float)) or not 0 < top_p <= 1:
        raise InputError(f"top_p={top_p!r}: allowed (0, 1]")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0:
        raise InputError(f"top_k={top_k!r}: allowed 0 (off) or a positive integer")


FLOAT_RELATIVE = 1e-4  # float32 weights: the two runs differ only in summation order (~1e-6 of the scale)
QUANTIZED_RELATIVE = 1e-3  # quantized weights through attnlab's kernels (~15-bit activations): see cache_tolerance
KERNEL_ROUNDING = 2.0 ** -15  # one product's input rounding in attnlab's kernels, relative to the row's range
FBGEMM_RELATIVE = 3e-2  # int8 weights through fbgemm (7- or 8-bit activations): see cache_tolerance


def _fbgemm(model) -> bool:
    """Does a one-row int8 product of this model go through fbgemm (attnlab's int8 kernel cannot run here)?"""
    from attnlab.layers import int8_kernel
    from attnlab.layers.quantized import QuantizedLinear

    return any(isinstance(m, QuantizedLinear) and m.format == "int8" for m in model.modules()) and not (
        QuantizedLinear.use_kernel and int8_kernel.available())


def _quantized(model) -> bool:
    from attnlab.layers.quantized import QuantizedLinear

    return any(isinstance(m, QuantizedLinear) for m in model.modules())


def cache_tolerance(model, logits: torch.Tensor) -> float:
    """How far the cached step's logits may be from a full recompute's and still count as the same, relative
    to the logits' own scale (max |logit|), because every error source here scales with it, not with each logit.

    Float32 weights: the runs differ in summation order only, so 1e-4 of the scale (plus 1e-4) is generous.
    Quantized weights (`--quantize int8/int4`, a GGUF kept quantized): the same codes both ways, but a one-row
    product (the cached step) runs attnlab's kernel, which rounds each activation row to ~15 bits (2^-15 of its
    range), while the full recompute multiplies by the dequantized float weight or runs the 4-bit kernel's tiles,
    which round other rows. That rounding reaches the logits through every layer, so the tolerance is 1e-3 of
    the scale (about 2^-10: 32 rounding steps), or 2^-15 per quantized product where a model has more than 32
    (relative_tolerance).
    Measured on gpt-char: int4 and int8 differ by 2.4e-4 at a scale of 9.5 (2.5e-5 relative); an elementwise
    1e-4 tolerance called that "NO" for every decoder.
    Where attnlab's int8 kernel cannot run, int8 products go through fbgemm, which rounds each row to 8 bits (7
    on CPUs without AVX-512 VNNI, layers/quantized.py fbgemm_levels) and multiplies the rounding residual of rows
    with outlier channels: gpt-char's int8 step then differed by 0.0675 at a scale of 9.4 (7e-3 relative, AMD
    Zen 3), so that path gets 3e-2 of the scale."""
    return FLOAT_RELATIVE + relative_tolerance(model) * float(logits.abs().max())


def relative_tolerance(model) -> float:
    """cache_tolerance's share of the logits' scale. Through attnlab's kernels each quantized product rounds its
    input row once, to 2^-15 of its range; adding those roundings over the model's products bounds how far they
    can move the logits, so a deep model gets more room than 1e-3: SmolLM2 (211 products, 6.4e-3) differed by
    0.018 at a scale of 19.8 (9e-4) between its cached step and a full recompute, gpt-char by 2.5e-5."""
    if not _quantized(model):
        return FLOAT_RELATIVE
    if _fbgemm(model):
        return FBGEMM_RELATIVE
    from attnlab.layers.quantized import QuantizedLinear

    products = sum(isinstance(m, QuantizedLinear) for m in model.modules())
    return max(QUANTIZED_RELATIVE, products * KERNEL_ROUNDING)


SMALL_MODEL = 20_000_000  # parameters: below this a step is timed best of 3, and compared with a full recompute


def generation_step(lm: Loaded, prompt: str, generated: list[int] | None = None, temperature: float = 1.0,
                    top_k: int = 0, top_p: float = 1.0, seed: int = 0, bars: int = 10, *,
                    session: str | None = None, sessions: GenerationSessions | None = None,
                    compare: bool | None = None) -> dict[str, Any]:
    """One decoding step: the next-token distribution under the sampling settings, the sampled token, the
    KV cache after the step, and the step's time with the cache (one new token) and without (full recompute).

    `sessions` keeps each page's KV cache between steps (server-side; `session` is the id the page got back
    from its last step): a step then runs only the token sampled last time. Without a held session (none
    given, unknown, expired, another prompt) the earlier tokens are run first, untimed, and a new session is
    opened. The logits come from the cached run either way; `compare` also times a full recompute and checks
    that it gives the same logits (default: only for models under SMALL_MODEL parameters, where it is cheap).
    The cached one-token step of a decoder runs compiled where generate would compile it (see the module
    docstring): "step_path" says "compiled" or "eager", and "step_path_reason" why eager (None when compiled).
    """
    cfg = text_model(lm)
    if cfg.topology not in ("decoder", "encoder-decoder"):
        raise InputError(f"model {lm.id!r} is {a_an(cfg.topology)}; generation needs a decoder or an encoder-decoder")
    _check_settings(temperature, top_k, top_p, seed)
    generated = list(generated or [])
    for t in generated:
        check_index("generated token id", t, cfg.vocab_size)
    model = lm.device_model  # the CPU model, or its copy on `attnlab explore --device`
    source, _ = encode(lm, prompt)
    enc_dec = cfg.topology == "encoder-decoder"
    if enc_dec:
        start = cfg.decoder_start_token_id if cfg.decoder_start_token_id is not None else (cfg.bos_token_id or 0)
        seq = [start] + generated
    else:
        seq = source + generated
    limit = token_limit(lm)
    if len(seq) >= limit:
        raise InputError(f"the sequence is {len(seq)} tokens; model {lm.id!r} takes at most {limit}: "
                         "start again with a shorter prompt")
    small = param_count(model) < SMALL_MODEL  # a quantized matrix counts the weights it stands for
    repeats = 3 if small else 1  # best of 3 where a step is quick; one run where it already takes a while
    compare = small if compare is None else bool(compare)
    store = sessions if sessions is not None else GenerationSessions(max_sessions=1)
    state = store.open(session, lm, source)
    names = [f"decoder.blocks.{i}.cross_attn.weights" for i in range(cfg.decoder_layers)] if enc_dec else []
    # inference mode, as generate() decodes: the compiled step is traced there, and its guards check that the
    # cache and the inputs are inference tensors (so the session's cache is made and written in it too)
    with state.lock, torch.inference_mode():
        if enc_dec and state.encoder_hidden is None:
            state.encoder_hidden = model.encode(torch.tensor([source], device=_device(model)))
        enc = state.encoder_hidden
        try:
            held = state.seq if state.cache is not None else []
            shared = min(len(held), len(seq))
            common = next((i for i in range(shared) if held[i] != seq[i]), shared)
            reused = min(common, len(seq) - 1)  # the newest token always runs: its logits are the answer
            _room(model, state, len(seq), limit)
            cache = state.cache
            _truncate(cache, reused)
            state.seq = seq[:reused]
            if len(seq) - 1 > reused:  # catch up (a new session, or tokens the page has and the session lacks)
                _sequence_forward(model, seq[reused:-1], cache, enc_dec, enc)
            path = _step_path(model, enc_dec, cache)
            best, logits = float("inf"), None
            for _ in range(repeats):
                _truncate(cache, len(seq) - 1)
                t0 = time.perf_counter()
                logits = _finished(_sequence_forward(model, seq[-1:], cache, enc_dec, enc, path))
                best = min(best, time.perf_counter() - t0)
            step_path, step_why = "eager", path.why
            if path.call is not None:  # the compiled step ran unless its call fell back (its guards, the cache)
                from attnlab.generation.compiled import last_way

                step_path, step_why = last_way() or ("eager", "the compiled step did not run")
            if enc_dec:  # the new token's cross-attention, recorded on one more cached run of it
                _truncate(cache, len(seq) - 1)
                with capture(model, names) as cross:
                    _sequence_forward(model, seq[-1:], cache, enc_dec, enc)
            state.seq = list(seq)
        except BaseException:
            state.cache, state.seq = None, []  # a half-run step leaves nothing to trust: start afresh next time
            raise
        ms_cached = best * 1000
        positions, entries, nbytes, n_layers = cache.length, cache.entries, cache.nbytes, len(cache.layers)
        ms_full, matches, difference, tolerance = None, None, None, None
        if compare:
            x = torch.tensor([seq], device=_device(model))

            def full():
                if enc_dec:
                    return model.decode(x, enc, last_only=True)[1][0, -1]
                return model(x, last_only=True).logits[0, -1]

            logits_full, ms_full = _timed(full, repeats)
            difference = float((logits_full - logits).abs().max())
            tolerance = cache_tolerance(model, logits_full)
            matches = difference <= tolerance
    logits = logits.cpu()  # sampled with a CPU generator: the same seed picks the same token on every device
    if not bool(torch.isfinite(logits).all()):
        raise InputError(f"model {lm.id!r} gives logits that are not finite (NaN or infinity) for this prompt: its "
                         "weights are probably damaged, so there is nothing to sample from")
    probs = filtered_probs(logits.float(), float(temperature), int(top_k), float(top_p))
    gen = torch.Generator().manual_seed(_generator_seed(int(seed), len(generated)))
    token = int(torch.multinomial(probs, 1, generator=gen))
    raw_probs = logits.float().softmax(-1)
    top = probs.topk(min(bars, probs.numel()))
    bar_list = [{"token": token_text(lm, int(i)), "id": int(i), "prob": round(float(p), 6),
                 "raw_prob": round(float(raw_probs[int(i)]), 6)} for p, i in zip(top.values, top.indices, strict=True)]
    result = {"model": lm.id, "topology": cfg.topology, "step": len(generated) + 1, "bars": bar_list,
              "token": token_text(lm, token), "token_id": token, "generated": generated + [token],
              "text": token_texts(lm, seq + [token]),
              "cache": {"positions": positions, "entries": entries, "bytes": nbytes,
                        "formula": f"2 x {n_layers} layers x {cfg.kv_heads} kv heads x {positions} "
                                   f"positions x {cfg.head_dim} d_head"},
              "ms_with_cache": round(ms_cached, 4),
              "ms_without_cache": round(ms_full, 4) if ms_full is not None else None,
              "cache_matches": matches,
              "cache_difference": None if difference is None else float(f"{difference:.3g}"),
              "cache_tolerance": None if tolerance is None else float(f"{tolerance:.3g}"),
              "cache_tolerance_relative": None if tolerance is None else float(f"{relative_tolerance(model):.2g}"),
              "quantized_weights": _quantized(model) if compare else None,
              "session": state.id if sessions is not None else None, "reused_positions": reused,
              "step_path": step_path, "step_path_reason": step_why,
              "finished": cfg.eos_token_id is not None and token == cfg.eos_token_id}
    # the best logits and the sums that let the page redraw temperature, top-k and top-p at once, exactly
    result["sampling"] = sampling_tables(logits, lambda i: token_text(lm, i), chosen=token)
    if enc_dec:
        result["source"] = [token_text(lm, i) for i in source]
        # each layer's cross-attention of the newest target position over the source, averaged over heads
        result["cross_attention"] = [rounded(cross[nm][0, :, -1].mean(0), 5) for nm in names]
    return result
