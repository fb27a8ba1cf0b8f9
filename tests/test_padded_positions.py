"""A left-padded batch: each row gets the positions it has alone (cumsum of the mask - 1) when none are given.

The reference is the same row run alone, unpadded: with absolute positions (learned, sinusoidal) a row that took
its columns' positions would add the wrong embedding to every token (0.5 in logits here); RoPE only rotates by
relative angles, so it is checked too, as a scheme the derived positions must not disturb.
"""

from __future__ import annotations

import pytest
import torch

import attnlab
from attnlab.cache import KVCache

TOL = 1e-5  # float32 logits of size ~0.6 through 2 layers, summed in another order: 2e-7 seen


def _model(position: str):
    torch.manual_seed(0)
    preset = "tiny-llama" if position == "rope" else "tiny-decoder"
    return attnlab.build_model(attnlab.presets[preset].replace(position=position)).eval()


def _batch(short: torch.Tensor, long: torch.Tensor):
    """(ids, mask) of two prompts, the short one left-padded with 3 pad columns."""
    width = long.shape[1]
    ids = torch.zeros(2, width, dtype=torch.long)
    ids[0, width - short.shape[1]:], ids[1] = short[0], long[0]
    mask = torch.ones(2, width, dtype=torch.long)
    mask[0, : width - short.shape[1]] = 0
    return ids, mask


def _prompts(model):
    g = torch.Generator().manual_seed(1)
    vocab = model.config.vocab_size
    return torch.randint(0, vocab, (1, 5), generator=g), torch.randint(0, vocab, (1, 8), generator=g)


@pytest.mark.parametrize("position", ["learned", "sinusoidal", "rope"])
def test_a_left_padded_row_gives_the_logits_it_gives_alone(position):
    model = _model(position)
    short, long = _prompts(model)
    ids, mask = _batch(short, long)
    with torch.no_grad():
        batch = model(ids, attention_mask=mask).logits
        alone = model(short).logits[0], model(long).logits[0]
    assert (batch[0, 3:] - alone[0]).abs().max() < TOL
    assert (batch[1] - alone[1]).abs().max() < TOL


@pytest.mark.parametrize("position", ["learned", "rope"])
def test_a_cached_step_on_a_left_padded_batch_continues_each_rows_positions(position):
    """Prefill into a KV cache, then one new token per row given only the mask: positions 5 and 8, not 8 and 8."""
    model = _model(position)
    short, long = _prompts(model)
    ids, mask = _batch(short, long)
    new = torch.tensor([[7], [11]])
    cache = KVCache.for_model(model, batch=2, capacity=9)
    with torch.no_grad():
        model(ids, attention_mask=mask, cache=cache)
        step = model(new, attention_mask=torch.cat([mask, torch.ones(2, 1, dtype=torch.long)], dim=1),
                     cache=cache).logits[:, -1]
        alone = (model(torch.cat([short, new[:1]], dim=1)).logits[0, -1],
                 model(torch.cat([long, new[1:]], dim=1)).logits[0, -1])
    assert (step[0] - alone[0]).abs().max() < TOL
    assert (step[1] - alone[1]).abs().max() < TOL


@pytest.mark.parametrize("use_cache", [True, False])
def test_generate_on_a_left_padded_batch_gives_each_row_its_own_logits(use_cache):
    model = _model("learned")
    short, long = _prompts(model)
    both = attnlab.generate(model, [short[0].tolist(), long[0].tolist()], max_new_tokens=4, keep_logits=True,
                            use_cache=use_cache, compile=False)
    for row, prompt in enumerate((short, long)):
        alone = attnlab.generate(model, prompt, max_new_tokens=4, keep_logits=True, use_cache=use_cache,
                                 compile=False)
        assert both.tokens[row] == alone.tokens[0]
        for got, want in zip(both.logits, alone.logits, strict=True):
            assert (got[row] - want[0]).abs().max() < TOL
