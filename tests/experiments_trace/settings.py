"""Numbers the pages print that are settings or names, not results, told apart by what stands around them.

Two lists, each of (a pattern on the text just before the number, one just after it, why): REFERENCES are tried
before any results value (a section number or a machine's load is never a result, even where it equals one);
SETTINGS only after the results and derived values found nothing (the shape of a model, a batch size, a count of
windows: values the runs were given, which a results file may or may not record).
"""

from __future__ import annotations

import re

REFERENCES: list[tuple[str, str, str]] = [
    (r"^(##|\|) $", "", "the section's or row's own number"),
    (r"\b(sections?|rows?|statements?|items?|figure|issue)\s+(\d+\s*(-|,|and|to|/|or)\s*)*$", "",
     "a reference to a section, row, statement or item"),
    (r"(load average( about)?|load|nice -n|Zen|torch|python|Python)\s*(\d+\s*-\s*)?$", "",
     "the machine, its load or a version (not a result)"),
    (r"", r"^-core", "the machine's cores (not a result)"),
    (r"", r"^(th|st|nd|rd)\b", "a percentile (how a spread is summarised)"),
    (r"\b(middle|the) $", r"^% of", "a percentile (how a spread is summarised)"),
    (r"", r"^\s?(n²|nd²|d²|d\b|·)", "a constant of a formula (arithmetic)"),
    (r"·\s?$", "", "a constant of a formula (arithmetic)"),
    (r"(·|\+ |- |\(|, )$", r"^(\)?/\d|\s*-\s*[a-z]\b|·)", "a constant of a formula (arithmetic)"),
    (r"(\b[kp] \+ |\b1 in |chance 1/|\b\d/|\(\d+ - i\)/)$", "", "a constant of a formula (arithmetic)"),
]

RUN_SETTING = "a setting of the runs (the model's shape, the data, the schedule)"
SETTINGS: list[tuple[str, str, str]] = [
    (r"", r"^( CPU)? (min|minutes)\b", "how long a rerun takes, roughly (a guide, not a result)"),
    (r"\b(d_model|d_ff|d_head|d_k|n_layers|n_heads|hidden|width|kernel|batch|vocabulary|eval_every|steps|lr|warmup"
     r"|seed|seeds|patch|k|n|d|h|p|w|shifts of up to|channels|embedding of|length|windows? of|positions?|step"
     r"|cut to|last of|of|widths?|layers?|p >=|at|x|split width \(|in units of|past|than|by|to)"
     r"[ =]*(\d+\s*(-|,|/|x|and|or|to|\+)\s*)*$", "", RUN_SETTING),
    (r"", r"^((,| and| or| /| x|-)\s*\d+)*\s*(-| )?(layers?|heads?|steps?|windows?|characters?|chars|tokens?|seeds?"
     r"|images|pixels|keys|dimensions|channels|warmups?|rounds|calls|texts|sentences|values|threads?|runs?"
     r"|x \d+|px|-px|-character|-step"
     r"|-token|-layer|-head|-thread|-dimensional|-D|validation|Wikipedia|random|residual|cells|x\d|k vocabulary"
     r"|k-parameter|-parameter|one-thread|million|minutes of wall|-\d+ s wall|-\d+ minutes of wall|chars|- and)\b",
     RUN_SETTING),
]


def _match(rules: list[tuple[str, str, str]], text: str, start: int, end: int) -> str:
    before, after = text[max(0, start - 60):start].replace("\n", " "), text[end:end + 30].replace("\n", " ")
    for pattern_before, pattern_after, why in rules:
        if re.search(pattern_before + ("" if pattern_before.endswith("$") else "$"), before, re.I) and \
                re.search(pattern_after, after):
            return why
    return ""


def reference(text: str, start: int, end: int, shown: str) -> str:
    """Why a number is a name, a date or a reference and no result; "" where it may be a result."""
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", shown):
        return "a date (when it was run)"
    if ":" in shown:
        return "a time of day (when it was run)"
    if re.fullmatch(r"[0-9a-f]{7,40}", shown) and not shown.isdigit():
        return "a commit of the code"
    if "." in shown or "," in shown:
        return ""
    if re.fullmatch(r"00\d", shown):
        return "a seed text's number (000-004)"
    if re.fullmatch(r"(19|20)\d\d", shown) and re.search(r"(al\.|\(|\bin) ?$", text[max(0, start - 5):start]):
        return "a year"
    return _match(REFERENCES, text, start, end)


COUNT = re.compile(r"(?<!/ )\b\d+ (of|/) (the )?\d+\b(?! /| char)")  # "11 of 12", "24 / 24": counts, never settings


def is_count(text: str, start: int, end: int) -> bool:
    """Is the number at start one side of a count such as "11 of 12" or "24 / 24"?"""
    return any(m.start() <= start < m.end() for m in COUNT.finditer(text, max(0, start - 20), end + 20))


def setting(text: str, start: int, end: int, shown: str) -> str:
    """Why an integer no results value gives is a setting of the runs; "" where none of the patterns fits."""
    if "." in shown or "," in shown:
        return ""
    if is_count(text, start, end):
        return ""
    return _match(SETTINGS, text, start, end)
