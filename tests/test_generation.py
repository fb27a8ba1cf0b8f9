"""Generation: the cached path equals a full recompute, every strategy does what it promises, bad input is refused.

References are computed independently of the generation code: one plain forward pass over the finished
sequence (no cache), exhaustive search over every continuation of a tiny vocabulary, closed-form cache sizes.
Tolerances: logits within 1e-5 (float32).
"""

from __future__ import annotations

import itertools

import pytest
import torch

import attnlab
from attnlab.cache import KVCache
from attnlab.errors import InputError
from attnlab.generation import generate_stream
from attnlab.generation.sampling import filtered_logits

ATOL = 1e-5


def _randomize(model, std=0.08, seed=0):
    """Init std 0.02 makes random models repeat one token forever; larger weights give varied, peaked logits."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2 or name.endswith("rel_bias.weight"):
                p.copy_(torch.randn(p.shape, generator=gen) * std)
    return model.eval()


def _decoder(position: str, **overrides):
    config = attnlab.presets["tiny-decoder"].replace(**{"position": position, "n_kv_heads": 2, "vocab_size": 97,
                                                        "max_len": 64, **overrides})
    return _randomize(attnlab.build_model(config))


def _encoder_decoder(kind: str):
    if kind == "t5":
        config = attnlab.presets["tiny-t5"].replace(vocab_size=97)
    else:
        config = attnlab.presets["tiny-encoder-decoder"].replace(position=kind, vocab_size=97, n_kv_heads=2)
    return _randomize(attnlab.build_model(config))


PROMPTS = [[5, 17, 3, 44, 9, 12, 60], [21, 8], [33, 2, 71, 90]]  # different lengths: left-padded batch


def _left_padded(prompts, pad=0):
    width = max(len(p) for p in prompts)
    ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    return ids, mask


# ------------------------------------------------------------------------------------- cache == recompute
@pytest.mark.parametrize("position", ["learned", "sinusoidal", "rope", "alibi", "none"])
def test_decoder_cached_logits_equal_full_recompute_in_padded_batch(position):
    model = _decoder(position)
    ids, mask = _left_padded(PROMPTS)
    result = attnlab.generate(model, ids, attention_mask=mask, max_new_tokens=12, temperature=1.0, seed=1,
                              keep_logits=True)
    assert len(result.logits) == 12
    # reference: ONE plain forward over prompt + generated tokens, no cache, positions = cumsum(mask) - 1
    full_mask = torch.cat([mask, torch.ones(3, 12, dtype=torch.long)], dim=1)
    positions = (full_mask.cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        reference = model(result.sequences, attention_mask=full_mask, position_ids=positions).logits
    width = ids.shape[1]
    for step, logits in enumerate(result.logits):
        torch.testing.assert_close(logits, reference[:, width - 1 + step], atol=ATOL, rtol=0)
    # the uncached path (whole sequence re-run each step) gives the same numbers and so the same tokens
    slow = attnlab.generate(model, ids, attention_mask=mask, max_new_tokens=12, temperature=1.0, seed=1,
                            keep_logits=True, use_cache=False)
    assert torch.equal(slow.sequences, result.sequences)
    for fast, recomputed in zip(result.logits, slow.logits, strict=True):
        torch.testing.assert_close(fast, recomputed, atol=ATOL, rtol=0)


@pytest.mark.parametrize("kind", ["sinusoidal", "learned", "t5"])
def test_encoder_decoder_cached_logits_equal_full_recompute_in_padded_batch(kind):
    model = _encoder_decoder(kind)
    source, source_mask = _left_padded(PROMPTS)
    result = attnlab.generate(model, source, attention_mask=source_mask, max_new_tokens=10, temperature=1.0,
                              seed=2, keep_logits=True, eos_token_id=None)
    assert result.sequences.shape == (3, 11) and bool((result.sequences[:, 0] == model.config.decoder_start_token_id)
                                                      .all())
    with torch.no_grad():
        encoded = model.encode(source, source_mask)
        _, reference = model.decode(result.sequences, encoded, attention_mask=source_mask)
    for step, logits in enumerate(result.logits):
        torch.testing.assert_close(logits, reference[:, step], atol=ATOL, rtol=0)
    slow = attnlab.generate(model, source, attention_mask=source_mask, max_new_tokens=10, temperature=1.0, seed=2,
                            keep_logits=True, eos_token_id=None, use_cache=False)
    assert torch.equal(slow.sequences, result.sequences)


def test_encoder_runs_once_and_cross_kv_is_computed_once_per_layer(monkeypatch):
    model = _encoder_decoder("sinusoidal")
    calls = {"encode": 0, "project_kv": 0}
    encode, project = type(model).encode, type(model.decoder.blocks[0].cross_attn).project_kv

    def counting_encode(self, *a, **k):
        calls["encode"] += 1
        return encode(self, *a, **k)

    def counting_project(self, *a, **k):
        calls["project_kv"] += 1
        return project(self, *a, **k)

    monkeypatch.setattr(type(model), "encode", counting_encode)
    monkeypatch.setattr(type(model.decoder.blocks[0].cross_attn), "project_kv", counting_project)
    result = attnlab.generate(model, [[4, 5, 6]], max_new_tokens=8, eos_token_id=None)
    assert len(result.tokens[0]) == 8
    assert calls == {"encode": 1, "project_kv": model.config.decoder_layers}


def test_left_padding_does_not_change_a_prompts_tokens():
    """A prompt alone and the same prompt inside a padded batch get the same continuation."""
    for position in ("learned", "rope", "alibi"):
        model = _decoder(position)
        batch = attnlab.generate(model, PROMPTS, max_new_tokens=10, keep_logits=True)
        for row, prompt in enumerate(PROMPTS):
            alone = attnlab.generate(model, [prompt], max_new_tokens=10, keep_logits=True)
            assert alone.tokens[0] == batch.tokens[row], position
            torch.testing.assert_close(alone.logits[0][0], batch.logits[0][row], atol=ATOL, rtol=0)


def test_cache_is_written_in_place_and_reports_its_size():
    model = _decoder("rope")
    cache = KVCache.for_model(model, batch=2, capacity=20)
    pointers = [(layer.k.data_ptr(), layer.v.data_ptr()) for layer in cache.layers]
    ids = torch.tensor([[1, 2, 3], [4, 5, 6]])
    with torch.no_grad():
        model(ids, cache=cache)
        for _ in range(5):
            model(torch.tensor([[7], [8]]), cache=cache)
    assert [(layer.k.data_ptr(), layer.v.data_ptr()) for layer in cache.layers] == pointers
    c = model.config
    entries = 2 * 2 * c.kv_heads * 8 * c.head_dim * c.n_layers  # 2 (K, V) x batch x kv_heads x len x d_head x L
    assert cache.length == 8 and cache.entries == entries and cache.nbytes == entries * 4
    with pytest.raises(InputError, match="KV cache is full"):
        model(torch.ones(2, 13, dtype=torch.long), cache=cache)


# ------------------------------------------------------------------------------------- strategies
def test_seeded_sampling_reproduces_and_streaming_matches():
    model = _decoder("learned")
    kwargs = dict(max_new_tokens=15, temperature=0.9, top_k=40, top_p=0.95)
    first = attnlab.generate(model, PROMPTS, seed=7, **kwargs)
    again = attnlab.generate(model, PROMPTS, seed=7, **kwargs)
    other = attnlab.generate(model, PROMPTS, seed=8, **kwargs)
    assert torch.equal(first.sequences, again.sequences)
    assert not torch.equal(first.sequences, other.sequences)
    steps = list(generate_stream(model, PROMPTS, seed=7, **kwargs))
    assert len(steps) == 15 and [s.index for s in steps] == list(range(15))
    assert torch.equal(torch.stack([s.tokens for s in steps], dim=1), first.new_tokens)
    assert all(s.seconds > 0 for s in steps)


def test_top_k_1_and_tiny_top_p_equal_greedy():
    model = _decoder("alibi")
    greedy = attnlab.generate(model, PROMPTS, max_new_tokens=10)
    assert torch.equal(attnlab.generate(model, PROMPTS, max_new_tokens=10, temperature=1.5, top_k=1,
                                        seed=0).sequences, greedy.sequences)
    assert torch.equal(attnlab.generate(model, PROMPTS, max_new_tokens=10, temperature=1.5, top_p=1e-6,
                                        seed=0).sequences, greedy.sequences)


def test_filters_keep_exactly_the_closed_form_sets():
    logits = torch.tensor([[2.0, 1.0, 0.5, -1.0, 3.0]])
    top2 = filtered_logits(logits, 1.0, 2, None)
    assert torch.isfinite(top2).tolist() == [[True, False, False, False, True]]
    probs = logits.softmax(-1)[0]  # sorted: 3.0 (.61), 2.0 (.22), 1.0 (.08), ...
    nucleus = filtered_logits(logits, 1.0, None, float(probs[4] + probs[0]) - 1e-4)  # needs the two best
    assert torch.isfinite(nucleus).tolist() == [[True, False, False, False, True]]
    nucleus = filtered_logits(logits, 1.0, None, float(probs[4] + probs[0]) + 1e-4)  # needs a third
    assert torch.isfinite(nucleus).tolist() == [[True, True, False, False, True]]
    torch.testing.assert_close(filtered_logits(logits, 0.5, None, None), logits / 0.5)


def _nucleus_reference(scores: torch.Tensor, top_p: float) -> torch.Tensor:
    """The top-p set by a full sort in float64: a token stays when the tokens strictly better hold < top_p."""
    probs = scores.double().softmax(-1)
    sorted_probs, order = probs.sort(-1, descending=True)
    keep_sorted = (sorted_probs.cumsum(-1) - sorted_probs) < top_p
    keep_sorted[..., 0] = True
    return keep_sorted.scatter(-1, order, keep_sorted)


@pytest.mark.parametrize("spread", [1.0, 6.0])  # flat: the nucleus holds thousands (full sort); peaked: a few dozen
def test_nucleus_from_the_best_candidates_equals_the_full_sort(spread):
    """A 16,384-word vocabulary: the candidate path (peaked) and the full sort (flat) give the float64 sort's set."""
    from attnlab.generation import sampling

    scores = torch.randn(6, 16384, generator=torch.Generator().manual_seed(1)) * spread
    found = sampling.nucleus_candidates(scores, 0.9)
    assert (found is None) == (spread == 1.0)
    cut = filtered_logits(scores, 1.0, None, 0.9)
    kept = torch.isfinite(cut)
    assert torch.equal(kept, _nucleus_reference(scores, 0.9))
    if found is not None:
        best, order = found  # the candidates kept are exactly the cut's finite tokens, with their scores
        assert torch.equal(kept.gather(-1, order), torch.isfinite(best))
        assert torch.equal(cut[kept], scores[kept]) and 10 < int(kept.sum(-1).max()) < sampling.NUCLEUS_CANDIDATES


def test_drawing_among_the_nucleus_candidates_follows_the_filtered_distribution():
    """choose_next's candidate path draws from the same distribution as softmax(filtered_logits): 12,800 draws over a
    16,384-word vocabulary (a nucleus of ~4 words) against the closed-form probabilities, each within 4.5 sigma."""
    from attnlab.generation.options import GenerationOptions
    from attnlab.generation.sampling import choose_next, nucleus_candidates

    logits = torch.full((16384,), -8.0)
    logits[[7, 900, 5000, 16000, 33]] = torch.tensor([3.0, 2.5, 2.0, 1.0, 0.0])
    options = GenerationOptions(temperature=0.7, top_p=0.9)
    probs = filtered_logits(logits[None], 0.7, None, 0.9).softmax(-1)[0]  # (vocab,) what sampling must follow
    assert nucleus_candidates(logits[None] / 0.7, 0.9) is not None  # so the candidate path is the one tested
    gen = torch.Generator().manual_seed(0)
    draws = torch.cat([choose_next(logits.expand(256, -1), options, gen) for _ in range(50)])
    counts = torch.bincount(draws, minlength=16384).double()
    assert set(draws.unique().tolist()) <= set(probs.nonzero().flatten().tolist())
    n = len(draws)
    sigma = (n * probs.double() * (1 - probs.double())).sqrt()
    assert ((counts - n * probs.double()).abs() <= 4.5 * sigma + 1e-9).all()


def test_beam_search_with_enough_beams_finds_the_exact_best_sequence():
    """With num_beams >= V^(n-1) nothing is pruned, so the answer must be the argmax over all V^n sequences."""
    config = attnlab.presets["tiny-decoder"].replace(vocab_size=6, max_len=16)
    model = _randomize(attnlab.build_model(config), std=0.3)
    prompt, n = [1, 4, 2], 3
    result = attnlab.generate(model, [prompt], max_new_tokens=n, num_beams=36, eos_token_id=None)
    candidates = torch.tensor([prompt + list(c) for c in itertools.product(range(6), repeat=n)])  # (216, 6)
    with torch.no_grad():
        log_probs = model(candidates).logits.log_softmax(-1)
    picked = log_probs[:, len(prompt) - 1 : -1].gather(-1, candidates[:, len(prompt):, None]).squeeze(-1)
    total = picked.sum(-1)  # (216,) exact log-probability of each continuation
    best = int(total.argmax())
    assert result.tokens[0] == candidates[best, len(prompt):].tolist()
    assert result.scores[0] == pytest.approx(float(total[best]) / n, abs=1e-5)  # length_penalty 1: mean log-prob


def test_beam_search_with_one_beam_is_greedy_and_beams_beat_greedy_score():
    model = _decoder("rope")
    greedy = attnlab.generate(model, PROMPTS, max_new_tokens=8, keep_logits=True)
    one = attnlab.generate(model, PROMPTS, max_new_tokens=8, num_beams=1)
    assert torch.equal(one.sequences, greedy.sequences)
    beams = attnlab.generate(model, PROMPTS, max_new_tokens=8, num_beams=4)
    greedy_score = torch.stack([step.log_softmax(-1).gather(-1, greedy.new_tokens[:, i, None]).squeeze(-1)
                                for i, step in enumerate(greedy.logits)], dim=1).mean(-1)
    for row in range(3):
        assert beams.scores[row] >= float(greedy_score[row]) - 1e-6
    assert torch.equal(attnlab.generate(model, PROMPTS, max_new_tokens=8, num_beams=4, use_cache=False).sequences,
                       beams.sequences)


def test_eos_stops_each_sequence_on_its_own():
    model = _decoder("learned")
    free = attnlab.generate(model, PROMPTS, max_new_tokens=10, eos_token_id=None)
    eos = free.tokens[0][3]  # row 0 emits this token at step 3 (maybe earlier too)
    stop = free.tokens[0].index(eos)
    result = attnlab.generate(model, PROMPTS, max_new_tokens=10, eos_token_id=eos, pad_token_id=0)
    assert result.tokens[0] == free.tokens[0][: stop + 1] and result.finished[0]
    assert result.new_tokens[0, stop + 1 :].eq(0).all()  # padded after its EOS
    for row in (1, 2):  # the other rows run on until their own EOS (or the end)
        expected = free.tokens[row]
        if eos in expected:
            expected = expected[: expected.index(eos) + 1]
        assert result.tokens[row] == expected
    all_stop = attnlab.generate(model, PROMPTS, max_new_tokens=10, eos_token_id=list(range(97)))
    assert all_stop.new_tokens.shape[1] == 1 and all(all_stop.finished)  # every row stops at once: loop ends


class LetterTokenizer:
    """Token i decodes to one letter: enough to test stop strings without a real vocabulary."""

    def decode(self, ids, skip_special_tokens=True):
        return "".join(chr(ord("a") + int(i) % 26) for i in ids)


def test_stop_strings_end_a_sequence_when_its_text_contains_them():
    model = _decoder("rope")
    tok = LetterTokenizer()
    free = attnlab.generate(model, PROMPTS, max_new_tokens=10, eos_token_id=None, tokenizer=tok)
    text = free.texts[1]
    stop = text[4:6]
    cut = text.index(stop) + len(stop)
    result = attnlab.generate(model, PROMPTS, max_new_tokens=10, eos_token_id=None, tokenizer=tok,
                              stop_strings=[stop])
    assert result.texts[1] == text[:cut] and result.finished[1]
    beams = attnlab.generate(model, PROMPTS, max_new_tokens=10, eos_token_id=None, tokenizer=tok,
                             stop_strings=[stop], num_beams=3)
    for text in beams.texts:  # a hypothesis ends the moment its text contains the stop string
        assert stop not in text or text.index(stop) + len(stop) == len(text)
    with pytest.raises(InputError, match="tokenizer"):
        attnlab.generate(model, PROMPTS, max_new_tokens=3, stop_strings=["x"])


def test_rope_model_generates_past_max_len_while_learned_refuses():
    config = attnlab.presets["tiny-llama"].replace(max_len=16)
    model = _randomize(attnlab.build_model(config))
    assert len(attnlab.generate(model, [[1, 2, 3]], max_new_tokens=20, eos_token_id=None).tokens[0]) == 20
    with pytest.raises(InputError, match=r"limit of 64.*max_new_tokens <= 61.*rope"):
        attnlab.generate(_decoder("learned"), [[1, 2, 3]], max_new_tokens=62)
    with pytest.raises(InputError, match="limit of 64"):
        attnlab.generate(_decoder("sinusoidal"), [[1] * 70], max_new_tokens=1)


# ------------------------------------------------------------------------------------- sliding window
def _greedy_on_window(model, row_tokens, limit, encoder_hidden=None):
    """The reference: one plain forward over the row's last `limit` tokens alone (no cache, no padding)."""
    window = torch.tensor([row_tokens[-limit:]])
    with torch.no_grad():
        if encoder_hidden is None:
            logits = model(window).logits
        else:
            _, logits = model.decode(window, encoder_hidden)
    return int(logits[0, -1].argmax())


@pytest.mark.parametrize("position, use_cache", [("learned", True), ("sinusoidal", True), ("learned", False)])
def test_sliding_window_continues_past_the_limit_as_fresh_steps_on_the_last_tokens(position, use_cache):
    limit, new = 12, 14
    model = _decoder(position, max_len=limit)
    prompts = [[5, 17, 3, 44, 9, 12, 60], [21, 8, 40], [33, 2, 71, 90, 11]]  # left-padded to 7 columns
    with pytest.raises(InputError, match="sliding_window=True"):
        attnlab.generate(model, prompts, max_new_tokens=new)
    slid = attnlab.generate(model, prompts, max_new_tokens=new, eos_token_id=None, use_cache=use_cache,
                            sliding_window=True)
    assert [len(t) for t in slid.tokens] == [new] * 3
    fits = limit - 7  # new tokens before the 7 padded columns + new ones exceed the limit
    plain = attnlab.generate(model, prompts, max_new_tokens=fits, eos_token_id=None)
    assert [t[:fits] for t in slid.tokens] == plain.tokens
    for prompt, tokens in zip(prompts, slid.tokens, strict=True):
        for step, token in enumerate(tokens):
            assert token == _greedy_on_window(model, prompt + tokens[:step], limit), (prompt, step)


def test_sliding_window_reads_a_prompt_longer_than_the_limit_through_its_last_tokens():
    limit = 10
    model = _decoder("learned", max_len=limit)
    prompt = [(7 * i + 3) % 97 for i in range(15)]
    slid = attnlab.generate(model, [prompt], max_new_tokens=5, eos_token_id=None, sliding_window=True)
    for step, token in enumerate(slid.tokens[0]):
        assert token == _greedy_on_window(model, prompt + slid.tokens[0][:step], limit)
    assert slid.cache_bytes == 0  # the prompt fills the window: no step could use a cache


def test_sliding_window_for_an_encoder_decoder_target():
    limit = 6
    config = attnlab.presets["tiny-encoder-decoder"].replace(position="learned", vocab_size=97, max_len=limit)
    model = _randomize(attnlab.build_model(config))
    source = [[5, 17, 3, 44, 9]]
    slid = attnlab.generate(model, source, max_new_tokens=10, eos_token_id=None, sliding_window=True)
    with torch.no_grad():
        encoder_hidden = model.encode(torch.tensor(source))
    target = slid.sequences[0].tolist()  # decoder start id, then the new tokens
    for step in range(10):
        assert target[1 + step] == _greedy_on_window(model, target[: 1 + step], limit, encoder_hidden)


def test_sliding_window_changes_nothing_within_the_limit_or_without_one():
    learned = _decoder("learned")
    for model in (learned, _decoder("rope")):
        a = attnlab.generate(model, PROMPTS, max_new_tokens=6, eos_token_id=None)
        b = attnlab.generate(model, PROMPTS, max_new_tokens=6, eos_token_id=None, sliding_window=True)
        assert torch.equal(a.sequences, b.sequences) and a.cache_bytes == b.cache_bytes > 0
    with pytest.raises(InputError, match="sliding_window='yes'"):
        attnlab.generate(learned, PROMPTS, sliding_window="yes")


# ------------------------------------------------------------------------------------- bad input
BAD = [
    (dict(input_ids=[]), "empty"),
    (dict(input_ids=torch.zeros(1, 0, dtype=torch.long)), "empty"),
    (dict(input_ids=[[1, 2], []]), "empty"),
    (dict(input_ids=[[1, 2, 97]]), "outside the vocabulary"),
    (dict(input_ids=[[-1, 2]]), "outside the vocabulary"),
    (dict(top_p=0.0), "top_p"),
    (dict(top_p=1.5), "top_p"),
    (dict(temperature=-0.5), "temperature"),
    (dict(num_beams=0), "num_beams"),
    (dict(max_new_tokens=0), "max_new_tokens"),
    (dict(top_k=-3), "top_k"),
    (dict(num_beams=2, temperature=1.0), "beam search"),
    (dict(input_ids=torch.tensor([[1, 2, 0]]), attention_mask=torch.tensor([[1, 1, 0]])), "LEFT-padded"),
    (dict(eos_token_id=500), "eos_token_id"),
    (dict(stream=True, num_beams=2), "stream"),
]


@pytest.mark.parametrize(("kwargs", "message"), BAD, ids=[m + str(i) for i, (_, m) in enumerate(BAD)])
def test_bad_input_raises_input_error_naming_it(kwargs, message):
    model = _decoder("learned")
    kwargs = {"input_ids": [[1, 2, 3]], **kwargs}
    with pytest.raises(InputError, match=message):
        attnlab.generate(model, max_new_tokens=kwargs.pop("max_new_tokens", 4), **kwargs)


def test_only_generative_models_are_accepted():
    encoder = attnlab.build_model(attnlab.presets["tiny-encoder"])
    with pytest.raises(InputError, match="Decoder or an EncoderDecoder"):
        attnlab.generate(encoder, [[1, 2]])


def test_model_generate_method_and_mode_restored():
    model = _decoder("learned").train()
    out = model.generate(torch.tensor([[1, 2, 3]]), max_new_tokens=3)
    assert out.new_tokens.shape == (1, 3) and model.training


def test_every_module_runs_in_eval_mode_and_gets_its_own_mode_back():
    """A mix of modes (a frozen block left in eval mode inside a training model) comes back as it was."""
    model = _decoder("learned").train()
    model.blocks[0].eval()
    before = {name: m.training for name, m in model.named_modules()}
    seen = []
    hook = model.blocks[1].ffn.register_forward_pre_hook(lambda m, args: seen.append(
        any(sub.training for sub in model.modules())))
    model.generate(torch.tensor([[1, 2, 3]]), max_new_tokens=2)
    hook.remove()
    assert seen and not any(seen)  # nothing was in training mode while it generated
    assert {name: m.training for name, m in model.named_modules()} == before


# ------------------------------------------------------------------------------------- command line
def test_cli_streams_the_same_text_as_generate(tmp_path, capsys):
    from attnlab.cli import main
    from attnlab.data.tokenizers import char_tokenizer

    tokenizer = char_tokenizer("abcdefghijklmnopqrstuvwxyz .,")
    config = attnlab.presets["tiny-decoder"].replace(vocab_size=tokenizer.vocab_size)
    model = _randomize(attnlab.build_model(config))
    model.save(tmp_path / "ckpt", tokenizer=tokenizer)
    expected = attnlab.generate(model, [tokenizer.encode("hello")], max_new_tokens=12, tokenizer=tokenizer).texts[0]
    sampled = attnlab.generate(model, [tokenizer.encode("hello")], max_new_tokens=12, tokenizer=tokenizer,
                               temperature=0.8, top_k=10, seed=3).texts[0]
    assert main(["generate", str(tmp_path / "ckpt"), "--prompt", "hello", "--max-new-tokens", "12"]) == 0
    assert capsys.readouterr().out == "hello" + expected + "\n"  # the prompt is echoed first
    assert main(["generate", str(tmp_path / "ckpt"), "--prompt", "hello", "--max-new-tokens", "12",
                 "--no-cache"]) == 0
    assert capsys.readouterr().out == "hello" + expected + "\n"  # the prompt is echoed first
    assert main(["generate", str(tmp_path / "ckpt"), "--prompt", "hello", "--max-new-tokens", "12",
                 "--temperature", "0.8", "--top-k", "10", "--seed", "3"]) == 0
    assert capsys.readouterr().out == "hello" + sampled + "\n"
    assert main(["generate", str(tmp_path / "ckpt"), "--prompt", "hello", "--top-p", "1.5",
                 "--temperature", "1"]) == 2
    assert "top_p=1.5" in capsys.readouterr().err
    # more than the 128 positions hold: the command goes on with a sliding window (tests/test_command_line.py)


def test_decode_head_follows_in_place_weight_updates():
    """Generation keeps a transposed copy of the LM head weight; an in-place update must not leave it stale."""
    model = _decoder("learned")
    ids = torch.tensor([PROMPTS[0]])
    attnlab.generate(model, ids, max_new_tokens=2)
    with torch.no_grad():
        model.lm_head.proj.weight.mul_(-1.5)
    result = attnlab.generate(model, ids, max_new_tokens=1, keep_logits=True)
    with torch.no_grad():
        reference = model(ids).logits[:, -1]
    torch.testing.assert_close(result.logits[0], reference, atol=ATOL, rtol=0)


def test_outputs_are_ordinary_tensors_usable_for_training():
    model = _decoder("learned").train()
    result = attnlab.generate(model, PROMPTS, max_new_tokens=3)
    step = next(iter(generate_stream(model, PROMPTS, max_new_tokens=3)))
    assert not result.sequences.is_inference() and not step.tokens.is_inference()
    loss = model(result.sequences).logits.logsumexp(-1).mean()  # autograd saves the ids for backward
    loss.backward()
    assert model.tokens.weight.grad is not None
