"""The everyday corpus minilm-mlm trains on (attnlab/data/everyday.py): which sentences are kept, that the cloze
test sentences can never be among them, and that batches assemble the same way whoever wrote them."""

import json
from pathlib import Path

import pytest

from attnlab.data import everyday
from attnlab.errors import ConfigError

CLOZE_FILE = Path(__file__).parent / "cloze_sentences.tsv"


def test_clean_sentences_keeps_plain_sentences_and_drops_the_rest():
    answer = ('Here is a short story about breakfast:\n\n1. Tom eats an egg every morning.\n'
              '2. "His sister drinks orange juice." She likes it cold! Tom eats an egg every morning.\n'
              'The caf\u00e9 opens at 8 am. Go now. It costs $5 today. Yes yes yes yes it is good.\n'
              'Do you want some toast, Anna? the dog barked.')
    seen = set()
    kept = everyday.clean_sentences(answer, seen)
    # by hand: the aside, the repeat, non-ASCII, digits, too short, a word 4 times and a lower-case start all go
    assert kept == ["Tom eats an egg every morning.", "His sister drinks orange juice.", "She likes it cold!",
                    "Do you want some toast, Anna?"]
    assert seen == {everyday.normalise(s) for s in kept}
    assert everyday.clean_sentences("Tom eats an egg every morning.", seen) == []  # seen in an earlier answer


def test_no_cloze_sentence_can_enter_the_corpus():
    """Each test sentence filled with each accepted answer, as a model might write it (capitalised, inside a
    longer sentence), is dropped; the same text passes when nothing is forbidden, so the check is what drops it."""
    forbidden = everyday.read_forbidden(CLOZE_FILE)
    lines = [line.split("\t") for line in CLOZE_FILE.read_text().splitlines() if line and not line.startswith("#")]
    assert len(forbidden) == sum(len(answers.split()) for _, answers in lines) >= 40
    for sentence, answers in lines:
        for answer in answers.split():
            filled = sentence.replace("[MASK]", answer).rstrip(".")
            text = f"Every day, {filled} with joy."
            assert everyday.clean_sentences(text, set(), forbidden) == [], text
            if all(ch.isalpha() or ch in " ,'" for ch in filled):  # those with digits or '?' are dropped anyway
                assert everyday.clean_sentences(text, set()) == [text], text


def test_assemble_joins_batches_in_order_and_drops_repeats(tmp_path):
    def batch(number, answers):
        (tmp_path / f"batch-{number:04d}.json").write_text(json.dumps({"batch": number, "answers": answers}))

    batch(1, ["The cat sleeps on the sofa.\nWe eat rice for lunch.", "Mum makes tea in the kitchen.", "Sure!"])
    batch(0, ["Here is a story. We eat rice for lunch. The bus is late again."])
    (tmp_path / "settings.json").write_text("{}")
    counts = everyday.assemble(tmp_path, tmp_path / "corpus.txt", forbidden=["mum makes tea"])
    assert (tmp_path / "corpus.txt").read_text() == ("We eat rice for lunch. The bus is late again.\n\n"
                                                     "The cat sleeps on the sofa.\n")
    assert counts == {"batches": 2, "paragraphs": 2, "sentences": 3}


def test_prompts_are_every_template_and_topic_in_a_fixed_order():
    first = everyday.prompts(0)
    assert first == everyday.prompts(0) != everyday.prompts(1)
    assert len(first) == len(set(first)) == len(everyday.TEMPLATES) * len(everyday.TOPICS)
    assert everyday.chat("Hi.").endswith("<|im_start|>user\nHi.<|im_end|>\n<|im_start|>assistant\n")


def test_a_batch_folder_made_with_other_settings_is_refused(tmp_path):
    everyday.generate_batches(tmp_path, [], batch_size=4)  # records the settings, loads no model
    assert json.loads((tmp_path / "settings.json").read_text())["batch_size"] == 4
    with pytest.raises(ConfigError, match="batch_size.: 4"):
        everyday.generate_batches(tmp_path, [], batch_size=8)
    with pytest.raises(ConfigError, match="dtype"):  # a bfloat16 corpus is another model's text: not mixed in
        everyday.generate_batches(tmp_path, [], batch_size=4, dtype="bfloat16")


def test_an_unknown_dtype_is_refused_naming_the_allowed_ones(tmp_path):
    with pytest.raises(ConfigError, match="'kept' or 'bfloat16'"):
        everyday.generate_batches(tmp_path, [], dtype="float16")
    assert not (tmp_path / "settings.json").exists()


def test_the_facts_style_asks_for_statements_on_the_same_topics_and_is_a_setting_of_the_folder(tmp_path):
    facts = everyday.prompts(0, "facts")
    assert len(facts) == len(set(facts)) == len(everyday.FACT_TEMPLATES) * len(everyday.TOPICS)
    assert not set(facts) & set(everyday.prompts(0))  # other requests, not the stories' again
    assert all(any(topic in f for topic in everyday.TOPICS) for f in facts)  # no topic of its own
    everyday.generate_batches(tmp_path / "stories", [], batch_size=4)
    assert "style" not in json.loads((tmp_path / "stories" / "settings.json").read_text())  # older folders continue
    everyday.generate_batches(tmp_path / "facts", [], batch_size=4, style="facts")
    with pytest.raises(ConfigError, match="style"):  # a stories run cannot continue a facts folder
        everyday.generate_batches(tmp_path / "facts", [], batch_size=4)
    with pytest.raises(ConfigError, match="'stories' or 'facts'"):
        everyday.generate_batches(tmp_path / "other", [], style="poems")
    assert not (tmp_path / "other").exists()
