"""The `attnlab` command as a whole: help without torch, one-line refusals (exit 2, no traceback) for values the
library cannot take, generation lengths that fit the model, and an explorer that refuses before it announces."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from cli_calls import run_cli

import attnlab
from attnlab.cli import COMMANDS, main
from attnlab.cli import cost as cost_cli
from attnlab.cli.generate import DEFAULT_NEW_TOKENS, plan_length
from attnlab.data.tokenizers import char_tokenizer

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def short_decoder(tmp_path_factory) -> Path:
    """A decoder with 16 learned positions and a character tokenizer, saved as a checkpoint."""
    tokenizer = char_tokenizer("abcdefghijklmnopqrstuvwxyz ")
    torch.manual_seed(0)
    config = attnlab.presets["tiny-decoder"].replace(vocab_size=tokenizer.vocab_size, max_len=16)
    folder = tmp_path_factory.mktemp("ckpt") / "short"
    attnlab.build_model(config).save(folder, tokenizer=tokenizer)
    return folder


# ------------------------------------------------------------------------------------------ help
def test_help_of_every_command_but_train_imports_no_torch():
    """`attnlab --help` used to take 4 s importing torch; `attnlab train --help` may (its recipe list)."""
    script = ("import sys\nfrom attnlab.cli import main\n"
              f"for argv in ([], *[[name] for name in {sorted(set(COMMANDS) - {'train'})!r}]):\n"
              "    try:\n        main([*argv, '--help'])\n    except SystemExit:\n        pass\n"
              "print('torch loaded' if 'torch' in sys.modules else 'no torch')\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("no torch"), done.stdout[-300:]
    assert "attnlab: one clean Transformer" in done.stdout and "--max-new-tokens" in done.stdout
    # and the way users call it: every module imported on the way, as -X importtime lists them
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "attnlab", "--help"], capture_output=True,
                          text=True, cwd=REPO, timeout=120)
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time")}
    assert done.returncode == 0 and "attnlab.cli.generate" in imported and "torch" not in imported, done.stderr[-500:]


def test_train_help_lists_one_recipe_per_line(capsys):
    from attnlab.training.recipes import RECIPES

    code, out, _ = run_cli(["train", "--help"], capsys)
    assert code == 0
    starts = {line.split()[0] for line in out.splitlines() if line.startswith("  ") and line.strip()}
    assert set(RECIPES) <= starts, out


# ------------------------------------------------------------------------------------------ generate: refusals
BAD_GENERATE = [
    (["--seed", str(2**64)], "seed"), (["--seed", str(10**23)], "seed"), (["--seed", "-1"], "seed"),
    (["--temperature", "1e-300"], "temperature"), (["--temperature", "-1"], "temperature"),
    (["--temperature", "nan"], "temperature"), (["--temperature", "inf"], "temperature"),
    (["--top-p", "0"], "top_p"), (["--top-p", "1.5"], "top_p"), (["--top-p", "nan"], "top_p"),
    (["--max-new-tokens", "-1"], "max_new_tokens"), (["--max-new-tokens", "0"], "max_new_tokens"),
    (["--top-k", "-2"], "top_k"), (["--beams", "0"], "beams"),
]


@pytest.mark.parametrize("extra, word", BAD_GENERATE)
def test_generate_refuses_impossible_settings_in_one_line(short_decoder, extra, word, capsys):
    code, out, err = run_cli(["generate", str(short_decoder), "--prompt", "ab", *extra], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err and word in err and extra[1] in err, err


@pytest.mark.parametrize("ids", ["99999999999999999999", "27", "-1", "3 1 100"])
def test_generate_refuses_ids_outside_the_vocabulary(short_decoder, ids, capsys):
    code, _, err = run_cli(["generate", str(short_decoder), "--ids", ids], capsys)
    assert code == 2 and "vocab_size=27" in err and "Traceback" not in err, err


def test_generate_refusal_from_a_real_process(short_decoder):
    done = subprocess.run([sys.executable, "-m", "attnlab", "generate", str(short_decoder), "--prompt", "ab",
                           "--seed", str(10**23)], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("attnlab generate: error: seed=") and done.stderr.count("\n") == 1, done.stderr


# ------------------------------------------------------------------------------------------ generate: lengths
def test_plan_length_fits_the_model():
    dec = attnlab.presets["tiny-decoder"].replace(max_len=16)
    assert plan_length(dec, 4, None)[:2] == (12, False)  # the room left, not the default 64
    assert plan_length(dec, 4, 5) == (5, False, "")
    assert plan_length(dec, 4, 30)[:2] == (30, True)  # asked for more: sliding window
    with pytest.raises(attnlab.InputError, match="fill this model's 16 positions"):
        plan_length(dec, 16, None)
    seq2seq = attnlab.presets["tiny-encoder-decoder"].replace(max_len=13)
    assert plan_length(seq2seq, 5, None)[:2] == (12, False)  # one position holds the start token
    assert plan_length(seq2seq, 5, 40)[:2] == (12, False)  # encoder-decoders are cut, never slid
    rope = attnlab.presets["tiny-llama"]
    assert rope.seq_limit is None and plan_length(rope, 500, None) == (DEFAULT_NEW_TOKENS, False, "")


def test_generate_defaults_fit_a_short_model_and_say_so(short_decoder, capsys):
    code, out, err = run_cli(["generate", str(short_decoder), "--prompt", "abcd"], capsys)
    assert code == 0, err
    assert "generating up to 12 new tokens instead of the default 64" in err
    assert "[12 tokens in" in err  # greedy from random weights: no EOS in this vocabulary, so all 12 come


def test_shipped_checkpoints_generate_with_the_defaults(capsys):
    for name, prompt in (("gpt-char", "def "), ("translate-numbers", "forty two")):
        code, out, err = run_cli(["generate", str(REPO / "attnlab/assets/checkpoints" / name), "--prompt", prompt],
                              capsys)
        assert code == 0 and out.strip() and "instead of the default 64" in err, (name, err)


def test_generate_past_the_positions_slides_the_window(short_decoder, capsys):
    code, out, err = run_cli(["generate", str(short_decoder), "--prompt", "abcd", "--max-new-tokens", "30"], capsys)
    assert code == 0 and "sliding window" in err and "[30 tokens in" in err, err
    model, tokenizer = attnlab.load(short_decoder)
    expected = attnlab.generate(model, [tokenizer.encode("abcd")], max_new_tokens=30, sliding_window=True,
                                tokenizer=tokenizer).texts[0]
    assert out == "abcd" + expected + "\n"  # the prompt, then its continuation


# ------------------------------------------------------------------------------------------ explore
@pytest.mark.parametrize("argv, words", [
    (["/no/such/model"], ["/no/such/model", "no such file", ".gguf"]),
    (["--port", "99999"], ["--port 99999", "1..65535"]),
    (["--port", "-1"], ["--port -1", "1..65535"]),
    (["--host", "no-such-host.invalid"], ["no-such-host.invalid"]),
])
def test_explore_refuses_at_start_up(argv, words, monkeypatch, capsys):
    monkeypatch.setattr("uvicorn.run", lambda *a, **k: pytest.fail("the server must not start"))
    code, out, err = run_cli(["explore", *argv, "--no-browser"], capsys)
    assert code == 2 and "http://" not in out and "Traceback" not in err
    assert all(w in err for w in words), err


def test_explore_refuses_a_port_in_use_before_its_banner(monkeypatch, capsys):
    monkeypatch.setattr("uvicorn.run", lambda *a, **k: pytest.fail("the server must not start"))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, out, err = run_cli(["explore", "--port", str(port), "--no-browser"], capsys)
    assert code == 2 and out == "" and f"127.0.0.1:{port} is already in use" in err, err


def test_explore_lists_the_models_it_serves_without_paths(short_decoder, monkeypatch, capsys):
    seen = {}
    monkeypatch.setattr("uvicorn.run", lambda app, **kw: seen.update(kw))
    code, out, _ = run_cli(["explore", str(short_decoder), "--port", "0", "--no-browser"], capsys)
    assert code == 2  # port 0 is refused too (1..65535)
    with socket.socket() as probe:  # a port that was free a moment ago
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    code, out, _ = run_cli(["explore", str(short_decoder), "--port", str(port), "--no-browser"], capsys)
    assert code == 0 and seen["port"] == port
    lines = out.splitlines()
    assert lines[0].startswith(f"attnlab explorer: http://localhost:{port}/") and lines[1] == "models served:"
    assert any(line.split()[:2] == ["toy", "Toy:"] for line in lines)
    assert any(line.split()[:2] == ["path", "short"] for line in lines)
    assert str(short_decoder.parent) not in out


# ------------------------------------------------------------------------------------------ cost
def test_cost_measure_with_one_length_times_lengths_up_to_it(tmp_path, capsys):
    assert cost_cli.around(32) == [4, 8, 16, 32] and cost_cli.around(5) == [2, 5]
    code, out, err = run_cli(["cost", "tiny-decoder", "--seq", "16", "--measure", "--budget", "0.001",
                           "--out", str(tmp_path)], capsys)
    assert code == 0, err
    assert "timing n in [2, 4, 8, 16]" in out and "growth exponents" in out
    code, _, err = run_cli(["cost", "tiny-decoder", "--seq", "3", "--measure"], capsys)
    assert code == 2 and "at least two lengths" in err and "--seq 32,64,128" in err


# ------------------------------------------------------------------------------------------ train
def test_train_passes_overwrite_and_resume_to_run_train(monkeypatch, capsys):
    from attnlab.training import run as training_run

    calls = []

    def fake_run_train(recipe, **kwargs):
        calls.append((recipe, kwargs))
        return {"steps": 1}

    monkeypatch.setattr(training_run, "run_train", fake_run_train)
    assert main(["train", "gpt-char", "--out", "o", "--overwrite", "steps=3", "--data", "d.txt"]) == 0
    assert main(["train", "gpt-char", "--resume"]) == 0
    assert calls[0] == ("gpt-char", dict(config=None, out="o", resume=False, overrides={"steps": "3", "data": "d.txt"},
                                         overwrite=True))
    assert calls[1][1]["resume"] is True and not calls[1][1].get("overwrite")
    capsys.readouterr()
    code, _, err = run_cli(["train", "gpt-char", "--resume", "--overwrite"], capsys)
    assert code == 2 and "not allowed with argument" in err


# ------------------------------------------------------------------------------------------ issue 23.7
@pytest.mark.parametrize("content, words", [
    ("hello notes, not JSON\n", ["is not valid JSON", "expected a preset"]),
    ('{"vocab": 3}', ["unknown ModelConfig keys"]),
    (b"\xff\xfe binary", ["not UTF-8"]),
])
@pytest.mark.parametrize("command", ["params", "cost"])
def test_a_file_that_is_not_a_model_config_is_named(command, content, words, tmp_path, capsys):
    """`attnlab params notes.txt` said "config is not valid JSON" without naming the file; it never quotes it."""
    path = tmp_path / "notes.txt"
    path.write_bytes(content) if isinstance(content, bytes) else path.write_text(content)
    code, out, err = run_cli([command, str(path)], capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"attnlab {command}: error: {path}") and all(w in err for w in words), err
    assert "hello notes" not in err and "binary" not in err


def test_bench_refuses_an_unknown_benchmark_in_the_usual_line(capsys):
    """`bench --only forwrd` printed a Python list; now the usual error line, with the name it was close to."""
    code, out, err = run_cli(["bench", "--only", "train,forwrd"], capsys)
    assert code == 2 and out == "", err
    assert err.strip() == ("attnlab bench: error: --only 'forwrd': no such benchmark (did you mean 'forward'?); "
                           "available: " + ", ".join(_bench_names()))
    assert "[" not in err


def _bench_names() -> list[str]:
    from attnlab.benchmarks.run_all import OTHERS, OURS

    return [*OURS, *OTHERS]


@pytest.mark.parametrize("prompt, pieces", [("café ok", ["é"]), ("a € b € c", ["€"]), ("日本", ["日", "本"]),
                                            ("plain text", [])])
def test_generate_says_which_characters_become_unk(prompt, pieces, capsys):
    """gpt-char's character vocabulary has no 'é': the prompt's 'é' became [UNK] without a word."""
    code, out, err = run_cli(["generate", "attnlab/assets/checkpoints/gpt-char", "--prompt", prompt,
                           "--max-new-tokens", "2"], capsys)
    assert code == 0, err
    warned = [line for line in err.splitlines() if "warning" in line]
    if not pieces:
        assert warned == []
        return
    assert len(warned) == 1 and warned[0].startswith("attnlab generate: warning: "), err
    assert all(repr(p) in warned[0] for p in pieces) and "[UNK]" in warned[0], warned


def test_unknown_pieces_follow_the_tokenizers_own_unk_tokens():
    """Independent of the warning's wording: the pieces are exactly the spans the tokenizer encoded as [UNK]
    (words for a word vocabulary, characters for a character one); byte-level BPE has none."""
    from attnlab.data.tokenizers import train_bpe, word_tokenizer
    from attnlab.vocabulary import unknown_pieces

    words = word_tokenizer(["forty", "two"], ["[PAD]", "[UNK]"])
    assert unknown_pieces(words, "forty café two € café") == ["café", "€"]
    assert words.encode("forty café two €").count(words.unk_id) == 2
    chars = char_tokenizer("abc ", ["[UNK]"])
    assert unknown_pieces(chars, "abz a€z") == ["z", "€"]
    assert chars.encode("abz a€z").count(chars.unk_id) == 3
    assert unknown_pieces(char_tokenizer("abc "), "abz") == []  # no unknown token: encode() refuses instead
    bpe = train_bpe(["some text to learn from"], vocab_size=300)
    assert unknown_pieces(bpe, "日本 café €") == []


def test_a_prompt_a_vocabulary_without_unk_cannot_hold_names_its_characters(tmp_path, capsys):
    tokenizer = char_tokenizer("abc ")  # no [UNK]: encoding 'z' is impossible
    torch.manual_seed(0)
    folder = tmp_path / "no-unk"
    attnlab.build_model(attnlab.presets["tiny-decoder"].replace(vocab_size=tokenizer.vocab_size)).save(
        folder, tokenizer=tokenizer)
    code, out, err = run_cli(["generate", str(folder), "--prompt", "abzz€"], capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert "'z', '€'" in err and "no unknown token" in err, err


@pytest.mark.parametrize("argv, said", [
    (["genrate", "gpt-char"], "invalid choice: 'genrate' (choose from"),
    (["generate", "gpt-char", "--promt", "The "], "unrecognized option --promt (did you mean '--prompt'?)"),
    (["train", "gpt-char", "--ouput", "x"], "unrecognized option --ouput (did you mean '--out'?)"),
])
def test_a_mistyped_command_or_option_gets_did_you_mean(argv, said, capsys):
    """A typo is named with the closest real name (argparse suggests only from Python 3.14 on), and a mistyped
    option is reported as such, not as the required option it was meant to be ("one of --prompt --ids is
    required" hid `--promt`)."""
    code, out, err = run_cli(argv, capsys)
    assert code == 2 and said in err and "is required" not in err, err
    if argv[0] == "genrate":
        assert "(did you mean 'generate'?)" in err


def test_an_abbreviated_option_and_a_value_after_a_double_dash_still_work(capsys):
    """The typo check accepts what argparse accepts: an unambiguous prefix (`--max-new` for --max-new-tokens)."""
    code, out, err = run_cli(["generate", "gpt-char", "--prompt", "The ", "--max-new", "3"], capsys)
    assert code == 0, err


@pytest.mark.parametrize("argv", [["models"], ["generate", "gpt-char", "--prompt", "The ", "--max-new-tokens", "2"]])
def test_commands_that_load_a_model_import_no_compiler_stack(argv):
    """Checking a checkpoint's shapes on the meta device used to run nn.init, the RoPE and sinusoid tables and
    empty_like through torch._refs, which imports torch._dynamo and sympy: ~2-3 s of CPU in every command before
    any work. A fresh process now imports neither (counted, not timed)."""
    code = ("import atexit, sys, runpy; sys.argv = ['attnlab', *sys.argv[1:]]\n"  # at exit: generate ends by os._exit
            "atexit.register(lambda: print('LOADED', sorted(m for m in ('torch._dynamo', 'sympy', 'torch._inductor')"
            " if m in sys.modules)))\n"
            "runpy.run_module('attnlab', run_name='__main__')\n")
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "LOADED []" in done.stdout, done.stdout[-500:]


@pytest.mark.parametrize("flag, passed", [([], "absent"), (["--compile"], True), (["--no-compile"], False)])
def test_generate_compiles_where_it_pays_unless_told(flag, passed, monkeypatch, capsys):
    """Without a flag generate leaves the choice to attnlab.generate (compile=None: where it pays, see
    generation/compiled.py, which says itself when it makes the user wait); --compile and --no-compile decide
    (the generation itself is replaced here; only what it is asked is checked)."""
    import attnlab.generation

    seen = {}

    def fake_stream(model, ids, **kwargs):
        seen.update(kwargs)
        return iter(())

    monkeypatch.setattr(attnlab.generation, "generate_stream", fake_stream)
    code, out, err = run_cli(["generate", "gpt-char", "--prompt", "The ", *flag, "--max-new-tokens", "2"], capsys)
    assert code == 0, err
    assert seen.get("compile", "absent") == passed
