"""`attnlab train RECIPE [--config FILE] [--out DIR] [--resume | --overwrite] [key=value ...]`.

Settings come in three layers, later ones winning: the recipe's defaults, the config file (TOML; YAML when
pyyaml is installed), then key=value pairs on the command line. Any key the recipe does not know is refused
with the list of keys it does know. The same command runs under `torchrun --nproc_per_node=N -m attnlab train`
(only rank 0 prints). Ctrl-C saves the step under way and prints the command that resumes the run.
"""

from __future__ import annotations

import os
import shlex
import sys

from attnlab.cli import process

HELP = "train a named recipe (gpt-char, bert-mlm, translate-numbers, vit-mnist, clip-mnist, ...)"


def _description() -> str:
    """Called only when `attnlab train --help` is printed: the recipe list needs the training code."""
    from attnlab.training.recipes import describe

    return f"{HELP.split(' (')[0]}.\n\nrecipes:\n{describe()}\n\n{__doc__.split(chr(10) * 2, 1)[1].strip()}"


def add_arguments(p) -> None:
    p.description = _description  # a function: attnlab.cli.Parser calls it when the help is printed
    p.add_argument("recipe", help="the recipe's name (listed above)")
    p.add_argument("key_values", nargs="*", metavar="key=value", help="override any recipe or training key")
    p.add_argument("--config", help="TOML (or YAML) file of key = value settings")
    p.add_argument("--out", help="run directory (default runs/RECIPE)")
    start = p.add_mutually_exclusive_group()
    start.add_argument("--resume", action="store_true", help="continue the run in OUT from OUT/latest")
    start.add_argument("--overwrite", action="store_true",
                       help="start afresh in an OUT that holds an earlier run, removing that run's files")
    p.add_argument("--data", help=f"the text recipes' corpus (same as data=PATH): {DATA_FORMATS}")
    p.add_argument("--keys", action="store_true",
                   help="list the recipe's keys with their type, default and description, and exit")


# what --data reads: the formats attnlab.data.sources dispatches on (FORMATS there; a test keeps the two equal),
# written out here because the help is printed without importing the data code
DATA_FORMATS = ("a file or folder of .txt, .txt.gz, .jsonl, .jsonl.gz or .parquet (text_field= names the field), "
                "or a folder saved by the `datasets` library; any other single file is read as UTF-8 text")

# what the recipe-specific keys mean (the TrainSettings and ModelConfig keys are described by their own source)
RECIPE_KEYS = {
    "data": f"training text: {DATA_FORMATS}; empty = the CPython docs",
    "text_field": "the field holding the text in .jsonl / .parquet / `datasets` corpora",
    "dataset": "which data set the recipe reads", "images": "image files or folder for the vision recipes",
    "pairs": "a TSV file of source<TAB>target pairs; empty = the recipe's own",
    "seq_len": "tokens per training sequence (the model's max_len)",
    "val_fraction": "share of the tokens held out for evaluation", "test_fraction": "share held out as the test set",
    "test_size": "examples held out as the test set", "split_seed": "seed of the train/test split",
    "sample_tokens": "tokens of each sample text generated after training into samples.txt (0 = none)",
    "eval_windows": "validation windows of seq_len tokens scored at each evaluation, the same each time: N evenly "
                    "spaced over the split (gpt-char, gpt-bpe) or the first N (masked-LM recipes); 0 = the whole "
                    "split, which on a large corpus takes minutes per evaluation",
    "eval_examples": "held-out examples scored at each evaluation: the first N, the same each time (0 = all)",
    "val_every": "every val_every-th article is held out for evaluation",
    "wiki_share": "minilm-mlm with data=: the share of training windows drawn from the Wikipedia summaries' train "
                  "split instead (0 = none; the evaluation stays on data=)",
    "teacher": "minilm-mlm: distil this causal LM's next-word predictions into the head (smollm2; empty = none)",
    "teacher_weight": "minilm-mlm with teacher=: the KL term's share of the loss at masked words (the rest is the "
                      "true word's cross-entropy)",
    "teacher_k": "minilm-mlm with teacher=: the teacher's most likely whole words kept at each position",
    "rank": "smollm2-mlm: the LoRA rank r of each block matrix's pair (A is r x in, B is out x r)",
    "alpha": "smollm2-mlm: the LoRA scale's numerator: a matrix becomes W_0 + (alpha / rank) B A",
    "mask_prob": "share of tokens masked for masked-language modelling (of which 80/10/10 mask/random/kept)",
    "label_smoothing": "cross-entropy label smoothing", "max_number": "largest number in the translation data",
    "languages": "target languages of the translation data", "source_lang": "source language",
    "target_lang": "target language", "max_shift": "largest random shift of a training image, in pixels",
    "embed_dim": "width of the joint image-text space", "text_d_model": "d_model of the text tower",
    "text_layers": "layers of the text tower", "train_layers": "top layers trained (the rest stay frozen)",
    "layers": "blocks of the pretrained encoder kept under the head, from the bottom (0 = all of them)",
    "words_only": "mask only whole words of one piece (no ##pieces, punctuation or digits)",
    "init_from": "fine-tune: start from this model (a name from `attnlab models`, a checkpoint or run folder, a "
                 "Hugging Face directory, a .gguf file) and encode the data with its tokenizer; empty = a new model",
    "freeze": "with init_from=: keep the embeddings and the first N blocks as loaded (0 = train everything)",
    # keys whose field carries no comment in its source: the seeds' notation
    "steps": "optimizer steps", "seed": "seed of the weights, the data order and the sampling",
    "beta1": "AdamW beta1", "beta2": "AdamW beta2", "d_model": "d: width of the residual stream",
    "n_heads": "h: attention heads per layer", "n_layers": "N: Transformer blocks", "d_ff": "feed-forward width",
    "dropout": "dropout probability", "activation": "feed-forward activation (gelu, relu, swiglu, ...)",
    "norm": "layernorm or rmsnorm", "norm_placement": "pre (pre-LN) or post (post-LN, as Vaswani and BERT)",
    "position": "positions: learned, sinusoidal, rope, alibi, t5 or none", "vocab_size": "V: tokens in the vocabulary",
    "image_size": "image side in pixels", "patch_size": "ViT patch side in pixels",
}


def field_comments(cls) -> dict[str, str]:
    """{field: the comment on its line} of a dataclass, read from its source: the one place keys are described."""
    import inspect
    import re

    try:
        source = inspect.getsource(cls)
    except (OSError, TypeError):
        return {}
    found = re.findall(r"^\s+(\w+):[^=\n]*=[^#\n]*#\s*(.+)$", source, flags=re.MULTILINE)
    return dict(found)


def key_table(recipe) -> str:
    """`--keys`: each key with its type, its default for this recipe and what it means."""
    from attnlab.config import ModelConfig
    from attnlab.training.settings import TrainSettings

    described = {**RECIPE_KEYS, **field_comments(ModelConfig), **field_comments(TrainSettings)}
    rows = [(key, type(value).__name__, repr(value), described.get(key, ""))
            for key, value in sorted(recipe.defaults().items())]
    widths = [max(len(r[i]) for r in [("key", "type", "default", ""), *rows]) for i in range(3)]
    lines = [f"{'key':<{widths[0]}}  {'type':<{widths[1]}}  {'default':<{widths[2]}}  description"]
    lines += [f"{k:<{widths[0]}}  {t:<{widths[1]}}  {d:<{widths[2]}}  {what}".rstrip() for k, t, d, what in rows]
    return "\n".join(lines)


def check_names(recipe_name: str, overrides: dict) -> None:
    """An unknown recipe or key refused before any work, with the closest names ("did you mean")."""
    from attnlab.errors import ConfigError
    from attnlab.spelling import did_you_mean
    from attnlab.training.recipes import RECIPES

    if recipe_name not in RECIPES:
        raise ConfigError(f"unknown recipe {recipe_name!r}{did_you_mean(recipe_name, RECIPES)}; recipes: "
                          f"{', '.join(sorted(RECIPES))}")
    known = RECIPES[recipe_name].defaults()
    for key in overrides:
        if key not in known:
            raise ConfigError(f"unknown key {key!r} for recipe {recipe_name!r}{did_you_mean(key, known)}; valid "
                              f"keys: {', '.join(sorted(known))} (`attnlab train {recipe_name} --keys` describes "
                              "them)")


def _main_rank() -> bool:
    """Rank 0 under torchrun (RANK set by it), or a plain process."""
    return os.environ.get("RANK", "0") == "0"


CLEAR = "\r\x1b[K"  # carriage return, erase the line: a status line gives way to what comes next


def _on_terminal() -> bool:
    """Rank 0 (under torchrun) writing to a terminal: where a status line rewritten in place makes sense."""
    return _main_rank() and sys.stderr.isatty()


def _starting(text: str) -> None:
    """On a terminal, a first line at once: importing torch and the training code takes seconds before anything
    else can speak. The next line replaces it (attnlab.training.progress.Console starts each line clearing it).
    A log file gets no such line: there the summary comes a few seconds later, and an error stays one line."""
    if _on_terminal():
        sys.stderr.write(CLEAR + text)
        sys.stderr.flush()


def resume_command(args) -> str:
    """The command that continues this run: the same recipe, settings and folder, with --resume."""
    from attnlab.training.run import run_folder

    words = ["attnlab", "train", args.recipe, "--out", str(run_folder(args.recipe, args.out))]
    if args.config:
        words += ["--config", args.config]
    if args.data is not None:
        words += ["--data", args.data]
    return shlex.join([*words, *args.key_values, "--resume"])


def more_command(args, steps: int) -> str:
    """The command that trains this run on to `steps` (resume_command with steps= in place of steps= / epochs=:
    given together they are refused)."""
    from attnlab.training.run import run_folder

    words = ["attnlab", "train", args.recipe, "--out", str(run_folder(args.recipe, args.out))]
    if args.config:
        words += ["--config", args.config]
    if args.data is not None:
        words += ["--data", args.data]
    kept = [kv for kv in args.key_values if kv.split("=", 1)[0].strip() not in ("steps", "epochs")]
    return shlex.join([*words, *kept, f"steps={steps}", "--resume"])


def _interrupted(args, exc: KeyboardInterrupt) -> int:
    """Ctrl-C: where the newest checkpoint is and how to continue from it, or how much of the data preparation was
    kept (rank 0 only), exit status 130."""
    if not _main_rank():
        return 130
    from attnlab.training.checkpoint import latest_checkpoint
    from attnlab.training.run import interruption_message, run_folder

    line = interruption_message(exc)
    if line is not None:
        print(f"\nattnlab train: {line}", file=sys.stderr)
        return 130
    out = run_folder(args.recipe, args.out)
    try:
        latest = latest_checkpoint(out) if out.is_dir() else None
    except Exception:  # noqa: BLE001 - a damaged `latest` must not hide the interruption itself
        latest = None
    if latest is None:
        print(f"\nattnlab train: interrupted; no checkpoint saved in {out} yet, so there is nothing to resume",
              file=sys.stderr)
    else:
        print(f"\nattnlab train: interrupted; last checkpoint {latest}\n  resume with: {resume_command(args)}",
              file=sys.stderr)
    return 130


def run(args) -> int:
    if not args.keys:
        _starting(f"attnlab train {args.recipe}: loading torch and the training code ...")
    try:
        from attnlab.training.recipes import get_recipe
        from attnlab.training.settings import parse_overrides

        overrides = parse_overrides(args.key_values)
        check_names(args.recipe, overrides)
        if args.keys:
            print(key_table(get_recipe(args.recipe)))
            return 0
        from attnlab.training.run import run_train

        if args.data is not None:
            overrides["data"] = args.data
        result = run_train(args.recipe, config=args.config, out=args.out, resume=args.resume,
                           overwrite=args.overwrite, overrides=overrides)
    except KeyboardInterrupt as exc:
        return _interrupted(args, exc)
    except BaseException:
        if _on_terminal():  # the error line (printed by attnlab.cli) replaces a status line still showing
            sys.stderr.write(CLEAR)
        raise
    if result and _main_rank():  # words for a person; the JSON is in OUT/result.json
        from attnlab.training.final_summary import final_summary

        print("\n".join(final_summary(result, more=more_command(args, 2 * int(result.get("step", 0))))))
        for s in result.get("samples", [])[:2]:
            print("---\n" + s, file=sys.stdout)
    # The run is written and the process group left: the process may end at once (cli/process.py). Under torchrun
    # a rank that finished before rank 0's report sometimes aborted in the interpreter's teardown ("terminate called
    # without an active exception", exit -6, no Python frame left): about one run in six of
    # tests/training/test_distributed.py's FSDP resume with the other core busy, none in 20 since (2026-11-28).
    process.QUICK[0] = True
    return 0
