"""The training probe and its timeline: `attnlab train` keeps the probe lines a tiny run should (step 1, every
log_every, the last), each line's weights are the saved checkpoint's own attention on the probe input, a
resumed run continues the file, and the explorer reads it back with previous-token scores computed here."""

import json

import numpy as np
import pytest
import torch
from tiny_runs import train_gpt_char, with_corpus

import attnlab
from attnlab.errors import InputError
from attnlab.explorer.server.registry import UnknownItem, build_registry
from attnlab.explorer.views.experiments.timeline.compute import previous_token_score, timeline
from attnlab.presets import get
from attnlab.training import probe
from attnlab.training.run import run_train

KEYS = {"steps": "5", "eval_every": "0", "log_every": "2", "plot": "false", "warmup": "1", "threads": "1",
        "d_model": "16", "n_heads": "2", "d_ff": "32", "n_layers": "2", "seq_len": "16", "batch_size": "2",
        "sample_tokens": "1", "save_every": "0"}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("probe-run")
    return train_gpt_char(root, KEYS), with_corpus(root, KEYS)


def test_probe_lines_are_the_checkpoints_attention(run):
    out, _ = run
    header, lines = probe.read(out / "probe.jsonl")
    assert [line["step"] for line in lines] == [1, 2, 4, 5]  # step 1, every 2nd, and the last
    assert header["n_layers"] == 2 and header["n_heads"] == 2
    assert len(header["ids"]) == 16  # the probe sentence cut to the model's seq_len
    losses = {json.loads(x)["step"]: json.loads(x)["loss"] for x in (out / "metrics.jsonl").read_text().splitlines()}
    assert [line["loss"] for line in lines] == pytest.approx([losses[s] for s in (1, 2, 4, 5)], abs=1e-5)
    model, _ = attnlab.load(out)  # the last checkpoint (step 5)
    rec = attnlab.record(model, torch.tensor([header["ids"]]), names="blocks.*.attn.weights")
    for layer in range(2):
        np.testing.assert_allclose(lines[-1]["weights"][layer], rec[f"blocks.{layer}.attn.weights"][0].numpy(),
                                   atol=5e-4 + 1e-6)  # 3 decimals kept
    first = np.array(lines[0]["weights"])  # (layers, heads, n, n): causal rows summing to 1
    np.testing.assert_allclose(first.sum(-1), 1.0, atol=16 * 5e-4)
    assert np.triu(first, 1).max() == 0


def test_resume_continues_the_probe(tmp_path, run):
    _, keys = run
    out = tmp_path / "run"
    run_train("gpt-char", out=str(out), quiet=True, overrides={**keys, "steps": "3", "save_every": "3"})
    run_train("gpt-char", out=str(out), resume=True, quiet=True, overrides={**keys, "steps": "6"})
    _, lines = probe.read(out / "probe.jsonl")
    assert [line["step"] for line in lines] == [1, 2, 3, 4, 6]


def test_timeline_reads_the_run_folder(run):
    out, _ = run
    registry = build_registry([out], shipped=False, pretrained=False)
    entry = registry.entry("path")
    _, lines = probe.read(out / "probe.jsonl")
    r = timeline(entry, 1, 0)
    assert r["steps"] == [1, 2, 4, 5] and r["layer"] == 1 and r["head"] == 0
    assert r["weights"] == [line["weights"][1][0] for line in lines]
    for i in range(2):
        for h in range(2):
            for s, line in enumerate(lines):
                w = np.array(line["weights"][i][h])
                expected = np.mean([w[j, j - 1] for j in range(1, len(w))])
                assert r["previous_token"][i][h][s] == pytest.approx(expected, abs=1e-4)
    best = timeline(entry)  # no head named: the one whose last previous-token score is highest
    finals = {(i, h): r["previous_token"][i][h][-1] for i in range(2) for h in range(2)}
    assert finals[(best["layer"], best["head"])] == max(finals.values())
    assert [p["step"] for p in r["curve"]] == [1, 2, 3, 4, 5]
    with pytest.raises(UnknownItem, match="head 2 does not exist"):
        timeline(entry, 0, 2)


def test_no_probe_and_a_broken_probe(tmp_path, run):
    out, _ = run
    registry = build_registry([tmp_path], shipped=False, pretrained=True)
    with pytest.raises(UnknownItem, match="has no training probe"):
        timeline(registry.entry("toy"))
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "probe.jsonl").write_text("not json\n")
    with pytest.raises(InputError, match="not an attnlab training probe"):
        timeline(build_registry([broken], shipped=False, pretrained=False).entry("path"))
    assert previous_token_score([[1.0, 0.0], [1.0, 0.0]]) == 1.0


def test_a_fresh_run_without_a_probe_removes_an_older_probe(tmp_path):
    """A run whose task keeps no probe (no tokenizer: a ViT) must not leave an earlier run's probe.jsonl to be
    shown as its own."""
    (tmp_path / "probe.jsonl").write_text('{"kind": "attnlab-probe"}\n')

    class Info:
        is_main, world = True, 1

    class Task:
        tokenizer = None

    class FakeTrainer:  # what after_step reads of a Trainer
        info, task, out, step = Info(), Task(), tmp_path, 1
        model = attnlab.build_model(get("tiny-decoder", vocab_size=16, d_model=16, d_ff=32))

    probe.after_step(FakeTrainer(), {"loss": 1.0})
    assert not (tmp_path / "probe.jsonl").exists()


def test_a_probe_that_grows_is_read_again(tmp_path, run):
    """Parsed probes are cached by (path, size, mtime): a run still training appends lines, and the next view
    shows them."""
    out, _ = run
    folder = tmp_path / "growing"
    folder.mkdir()
    rows = (out / "probe.jsonl").read_text().splitlines()
    (folder / "probe.jsonl").write_text("\n".join(rows) + "\n")
    entry = build_registry([folder], shipped=False, pretrained=False).entry("path")
    assert timeline(entry, 0, 0)["steps"] == [1, 2, 4, 5]
    last = json.loads(rows[-1])
    last["step"] = 7
    with open(folder / "probe.jsonl", "a") as f:
        f.write(json.dumps(last) + "\n")
    assert timeline(entry, 0, 0)["steps"] == [1, 2, 4, 5, 7]
