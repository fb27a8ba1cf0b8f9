"""generate's arguments, checked once at its entry: the only place generation reads tensors back to the host
to validate them (id range, mask values, padding side). The steps after it call the model with validate=False.

Accepted prompt forms (a (batch, seq) tensor, one list of ids, lists of different lengths padded here), the
model's position limit, and the sliding window that lifts it for decoders (sliding_window=True).
"""

from __future__ import annotations

from dataclasses import replace

import torch

from attnlab.errors import InputError
from attnlab.generation.options import GenerationOptions
from attnlab.generation.request import Request
from attnlab.generation.stopping import Stopper
from attnlab.recording import active

FROM_CONFIG = object()  # "use the model config's value" (None means "none")
STEP_BYTES = 1024  # host memory a generated step keeps until the end (a Step, its time, its tokens per row: ~1 KB)
TOKEN_BYTES = 64  # ... and per row: a Python int in a list, beam bookkeeping
LOGIT_COPIES = 4  # a step's (rows, vocab) float32 logits, log-probs, scores, sort order alive at once
# forward_bytes matched torch 2.13's CPU allocator peak within 1%: the margin covers other versions and devices
ACTIVATION_MARGIN = 1.2
BEAM_ROW_BYTES = 512  # host lists of a beam step: 2 candidates per row (score, beam, token) and the chosen rows


def prepare(model, input_ids, attention_mask, decoder_input_ids, settings: dict, tokenizer, generator) -> Request:
    """Check every argument against the model; -> the Request to run (nothing has been computed yet)."""
    config = getattr(model, "config", None)
    topology = getattr(config, "topology", None)
    if topology not in ("decoder", "encoder-decoder"):
        raise InputError(f"generate needs a Decoder or an EncoderDecoder, got {type(model).__name__}"
                         f"{f' (topology={topology!r})' if topology else ''}")
    if topology == "decoder" and config.head != "lm":
        raise InputError(f"generate needs a language-model head, this decoder has head={config.head!r}")
    encoder_decoder = topology == "encoder-decoder"
    device = next(model.parameters()).device
    vocab = config.vocab_size

    options = _options(config, settings)
    options.validate(vocab)
    if options.compile and encoder_decoder:
        raise InputError("compile=True compiles a decoder's one-token step; for an encoder-decoder use compile=False")
    if options.compile and active() is not None:
        raise InputError("compile=True while a recording or an intervention is active: a compiled forward can do "
                         "neither; generate with compile=False inside attnlab.record / attnlab.intervene")
    if options.compile:
        from attnlab.generation.compiled import why_not

        if (reason := why_not(model)) is not None:
            raise InputError(f"compile=True cannot compile here: {reason}; use compile=None (compile where it "
                             "can) or compile=False")
    elif options.compile is None:  # where it pays and can (generation/compiled.py); eager otherwise
        wanted = not encoder_decoder and options.use_cache and active() is None
        if wanted:
            from attnlab.generation.compiled import auto

            wanted = auto(model)
        options = replace(options, compile=None if wanted else False)  # None: where it pays, never waiting for it
    stopper = Stopper(options.eos_token_ids, options.stop_strings, tokenizer)
    if generator is None and options.seed is not None:
        generator = torch.Generator(device=device).manual_seed(options.seed)

    ids, mask = _as_batch(input_ids, attention_mask, vocab, pad_left=not encoder_decoder,
                          pad_id=options.pad_token_id, name="input_ids", device=device)
    if encoder_decoder:
        source, source_mask = ids, mask
        _check_limit(model.encoder.seq_limit, source.shape[1], 0, config.position, "source")
        if decoder_input_ids is None:
            start = config.decoder_start_token_id
            start = start if start is not None else config.bos_token_id
            if start is None:
                raise InputError("this encoder-decoder's config has no decoder_start_token_id (nor bos_token_id); "
                                 "pass decoder_input_ids=[[start_id]]")
            prompt = torch.full((source.shape[0], 1), start, dtype=torch.long, device=device)
        else:
            prompt, _ = _as_batch(decoder_input_ids, None, vocab, pad_left=True,
                                  pad_id=options.pad_token_id, name="decoder_input_ids", device=device)
            if prompt.shape[0] != source.shape[0]:
                raise InputError(f"decoder_input_ids has {prompt.shape[0]} rows but the source has "
                                 f"{source.shape[0]}; give one decoder prompt per source")
        prompt_mask = None  # the target side is never padded: every row starts from the same ids
        limit = model.decoder.seq_limit
    else:
        source = source_mask = None
        prompt, prompt_mask = ids, mask
        limit = model.seq_limit
    # sliding window: past the limit each step reads the last `limit` tokens (stepper.py), so nothing is too long
    window = limit if options.sliding_window else None
    if window is None:
        _check_limit(limit, prompt.shape[1], options.max_new_tokens, config.position, "prompt")
    check_memory(model, options, prompt.shape[0], prompt.shape[1], window, padded=prompt_mask is not None,
                 source_len=source.shape[1] if source is not None else 0)
    return Request(model, options, stopper, generator, prompt, prompt_mask, source, source_mask, tokenizer,
                   window=window)


def _options(config, settings: dict) -> GenerationOptions:
    eos = settings.pop("eos_token_id")
    if eos is FROM_CONFIG:
        eos = config.eos_token_id
    if eos is None:
        eos_ids: tuple = ()
    elif isinstance(eos, (list, tuple)):
        eos_ids = tuple(eos)
    else:
        eos_ids = (eos,)
    pad = settings.pop("pad_token_id")
    if pad is None:
        pad = config.pad_token_id if config.pad_token_id is not None else (eos_ids[0] if eos_ids else 0)
    stop = settings.pop("stop_strings")
    stop_strings = () if stop is None else (stop,) if isinstance(stop, str) else tuple(stop)
    if settings["top_k"] == 0:
        settings["top_k"] = None
    return GenerationOptions(eos_token_ids=eos_ids, pad_token_id=pad, stop_strings=stop_strings, **settings)


def _as_batch(input_ids, attention_mask, vocab: int, *, pad_left: bool, pad_id: int, name: str, device):
    """Any accepted prompt form -> ((batch, seq) long tensor, (batch, seq) mask or None), checked."""
    if isinstance(input_ids, torch.Tensor):
        ids = input_ids
        if ids.dim() == 1:
            ids = ids[None]
    elif isinstance(input_ids, (list, tuple)):
        rows = list(input_ids)
        if not rows:
            raise InputError(f"{name} is empty: give at least one token")
        if all(isinstance(r, int) and not isinstance(r, bool) for r in rows):
            rows = [rows]
        if not all(isinstance(r, (list, tuple)) and all(isinstance(i, int) and not isinstance(i, bool) for i in r)
                   for r in rows):
            raise InputError(f"{name} must be a tensor, a list of token ids or a list of such lists")
        if attention_mask is None and len({len(r) for r in rows}) > 1:
            width = max(len(r) for r in rows)
            if min(len(r) for r in rows) == 0:
                raise InputError(f"{name} has an empty prompt at row {[len(r) for r in rows].index(0)}: "
                                 "give at least one token per prompt")
            padded = [([pad_id] * (width - len(r)) + list(r)) if pad_left else (list(r) + [pad_id] * (width - len(r)))
                      for r in rows]
            masks = [([0] * (width - len(r)) + [1] * len(r)) if pad_left else ([1] * len(r) + [0] * (width - len(r)))
                     for r in rows]
            ids, attention_mask = torch.tensor(padded), torch.tensor(masks)
        else:
            ids = torch.tensor(rows)
    else:
        raise InputError(f"{name} must be a torch.Tensor or a list of token ids, got {type(input_ids).__name__}")
    if ids.dtype not in (torch.long, torch.int32, torch.int16, torch.uint8, torch.int8) or ids.dim() != 2:
        raise InputError(f"{name} must be integer token ids of shape (batch, seq), got dtype {ids.dtype} and "
                         f"shape {tuple(ids.shape)}")
    if ids.shape[0] == 0 or ids.shape[1] == 0:
        raise InputError(f"{name} is empty (shape {tuple(ids.shape)}): give at least one token per prompt")
    low, high = int(ids.min()), int(ids.max())
    if low < 0 or high >= vocab:
        bad = low if low < 0 else high
        raise InputError(f"{name} holds token id {bad}, outside the vocabulary [0, vocab_size={vocab})")
    ids = ids.to(device=device, dtype=torch.long)
    if attention_mask is None:
        return ids, None
    mask = torch.as_tensor(attention_mask)
    if mask.shape != ids.shape:
        raise InputError(f"attention_mask has shape {tuple(mask.shape)}, expected {tuple(ids.shape)} like {name}")
    if not bool(((mask == 0) | (mask == 1)).all()):
        raise InputError("attention_mask must hold only 0 (padding) and 1 (real token)")
    mask = mask.to(device=device, dtype=torch.long)
    lengths = mask.sum(dim=1)
    if bool((lengths == 0).any()):
        row = int((lengths == 0).nonzero()[0])
        raise InputError(f"{name} row {row} is empty (its attention_mask is all 0): give at least one token")
    if pad_left and bool((mask[:, 1:] < mask[:, :-1]).any()):
        raise InputError("decoder prompts must be LEFT-padded (attention_mask rows like 0 0 1 1 1): the newest "
                         "token of every row must sit in the last column; pass lists of ids to have them padded")
    return ids, mask


def _check_limit(limit: int | None, prompt_len: int, max_new_tokens: int, position: str, what: str) -> None:
    if limit is None or prompt_len + max_new_tokens <= limit:
        return
    if max_new_tokens == 0:
        raise InputError(f"the {what} has {prompt_len} tokens, more than this model's limit of {limit} positions "
                         f"({position} positions); shorten it")
    raise InputError(
        f"{what} of {prompt_len} tokens + max_new_tokens={max_new_tokens} = {prompt_len + max_new_tokens} positions "
        f"exceeds this model's limit of {limit} ({position} positions have max_len={limit} rows); use "
        f"max_new_tokens <= {max(limit - prompt_len, 0)}, a shorter prompt, or sliding_window=True to continue on "
        "the last positions (rope, alibi, t5 and 'none' positions have no such limit)")


def generation_bytes(model, options: GenerationOptions, batch: int, prompt_len: int, window: int | None, *,
                     padded: bool = False, source_len: int = 0) -> dict[str, int]:
    """Bytes a request will hold at its peak, by part: what grows with the numbers a person types (the new
    tokens, the beams, the prompts), not the model's weights (loaded already).

    rows = batch x num_beams; total = prompt_len + max_new_tokens positions per row.
    - tokens: the (rows, total) int64 buffer the steps write into (+ mask and positions when padded: x3);
    - kv_cache: 2 (K, V) x layers x kv_heads x d_head x element size per position and row, for
      min(total, window) positions (+ the source's positions for cross-attention);
    - activations: the larger of the longest forward's live tensors (the prompt's prefill over all rows: without
      them `--beams 100000` was estimated at half its peak) and a decoding step's temporaries (LOGIT_COPIES
      (rows, vocab) float32 tensors, beam search's reordered copy of one layer's K/V), x ACTIVATION_MARGIN;
    - logits: every step's (batch, vocab) float32 logits with keep_logits;
    - steps: what each generated step leaves on the host until the end (STEP_BYTES, TOKEN_BYTES per row);
    - encoder_output: an encoder-decoder's encoder output, repeated for each beam.
    Against the allocator's measured peak (tests/reliability/test_inputs_fuzz.py): estimate / peak 1.10-1.17."""
    config = model.config
    rows, new = batch * options.num_beams, options.max_new_tokens
    total = prompt_len + new
    element = next(model.parameters()).element_size()
    encoder_decoder = config.topology == "encoder-decoder"
    layers = config.decoder_layers if encoder_decoder else config.n_layers
    per_position = 2 * layers * config.kv_heads * config.head_dim * element  # K and V of one token, every layer
    capacity = total if window is None else min(total, window)
    kv_cache = rows * (capacity + source_len) * per_position if options.use_cache else 0
    # the longest forward: the prompt once (cache), else every step recomputes up to total - 1 (or window) columns
    cached = options.use_cache and (window is None or total <= window)
    seq = prompt_len if cached else min(max(total - 1, prompt_len), window or total)
    logits = LOGIT_COPIES * rows * config.vocab_size * 4  # the last step's, alive through the next forward
    longest = forward_bytes(config, rows, seq, seq + (source_len if encoder_decoder else 0), element, padded)
    step = logits + (forward_bytes(config, rows, 1, capacity, element, padded) if cached else longest)
    if options.num_beams > 1:  # reorder: one layer's gathered K/V and the gathered token rows, then copied back
        step += (rows * capacity * per_position // layers if options.use_cache else 0) + rows * total * 8
        step += rows * BEAM_ROW_BYTES
    encoder = forward_bytes(config, batch, source_len, source_len, element, True) if source_len else 0
    return {
        "tokens": rows * total * 8 * (3 if padded else 1),
        "kv_cache": kv_cache,
        "activations": int(ACTIVATION_MARGIN * max(longest, step, encoder)),
        "logits": new * batch * config.vocab_size * 4 if options.keep_logits else 0,
        "steps": new * (STEP_BYTES + rows * TOKEN_BYTES),
        "encoder_output": rows * source_len * config.d_model * element,
    }


def forward_bytes(config, rows: int, seq: int, keys: int, element: int, padded: bool) -> int:
    """Bytes one forward over (rows, seq) tokens holds at once, beyond the weights and the KV cache: the block
    with the most live tensors, as attnlab's layers allocate them. No (rows, heads, seq, keys) scores: torch 2.13's
    CPU attention never builds them (measured with and without a mask and grouped-query heads; CUDA's fused kernels
    neither, where they apply); the additive mask does, once per forward, when rows are padded or positions are
    alibi / t5 biases. Checked against the allocator's peak by tests/reliability/test_inputs_fuzz.py."""
    d, heads, kv_heads, d_head, d_ff = (config.d_model, config.n_heads, config.kv_heads, config.head_dim,
                                        config.d_ff)
    rope = config.position == "rope"
    turned = (heads + kv_heads) * d_head if rope else 0  # rotated q and k beside the fused projection
    # per (row, position), in elements: the block's input x, its norm, the fused QKV, then the widest of: rotary's
    # temporaries, SDPA's output with its head-merged copy, the merged copy with the output projection
    attention = 2 * d + (heads + 2 * kv_heads) * d_head + max(4 * turned, turned + 2 * heads * d_head,
                                                              turned + heads * d_head + d)
    # x before and after attention, the norm, the up projection (gate and up when gated), the activation (x up)
    feedforward = 3 * d + (4 * d_ff if config.gated else 2 * d_ff)
    widest = max(attention, feedforward, 4 * d)  # 4 d: the residual sum with both inputs and the run's x
    cos_sin = 2 * d_head * 4 if rope else 0  # float32 rotary angles, alive for the whole forward
    bias_heads = heads if config.position in ("alibi", "t5") else 1
    bias_rows = rows if padded else 1
    bias = bias_rows * seq * keys * (bias_heads * element + 1) if padded or bias_heads > 1 else 0
    return rows * seq * (widest * element + cos_sin) + bias


def available_bytes(device: torch.device) -> int:
    """Memory free for a request now: the GPU's free memory on CUDA, the OS's MemAvailable otherwise."""
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    from attnlab.build import available_memory

    return int(available_memory())


def check_memory(model, options: GenerationOptions, batch: int, prompt_len: int, window: int | None, *,
                 padded: bool = False, source_len: int = 0, available: int | None = None) -> None:
    """Refuse, before anything is allocated, a request that cannot fit in the memory free now: max_new_tokens=10^12
    asked for an 8 TB buffer (a traceback), num_beams=10^6 grew to 22 GB before the kernel killed it. The error
    names the numbers, the estimate by part and the largest max_new_tokens that fits."""
    device = next(model.parameters()).device
    parts = generation_bytes(model, options, batch, prompt_len, window, padded=padded, source_len=source_len)
    need = sum(parts.values())
    free = available_bytes(device) if available is None else available
    if need <= free:
        return
    fits = _most_new_tokens(lambda n: sum(generation_bytes(
        model, replace(options, max_new_tokens=n), batch, prompt_len, window, padded=padded,
        source_len=source_len).values()), options.max_new_tokens, free)
    hint = (f"use max_new_tokens <= {fits:,}" if fits >= 1 else
            f"even one new token does not fit: use fewer beams or prompts (rows = {batch} x {options.num_beams})")
    detail = ", ".join(f"{k.replace('_', ' ')} {_gib(v)}" for k, v in parts.items() if v)
    raise InputError(f"max_new_tokens={options.max_new_tokens:,} with num_beams={options.num_beams:,} on {batch} "
                     f"prompt(s) of {prompt_len} tokens needs about {_gib(need)} ({detail}), more than "
                     f"the {_gib(free)} free on {device.type} now; {hint}"
                     f"{'' if options.num_beams == 1 else ', or fewer beams'}")


def _most_new_tokens(need, asked: int, free: int) -> int:
    """The largest max_new_tokens in [1, asked) whose need(n) fits in `free` bytes, 0 if none: a bisection, since
    the need grows with n but not in equal steps (the prefill's activations do not grow, the cache does)."""
    low, high = 0, asked - 1  # need(low) fits (or low = 0); every n > high is known not to fit
    while low < high:
        mid = (low + high + 1) // 2
        if need(mid) <= free:
            low = mid
        else:
            high = mid - 1
    return low


def _gib(n: int) -> str:
    return f"{n / 2**30:,.2f} GiB" if n >= 2**27 else f"{n / 2**20:,.1f} MiB"
