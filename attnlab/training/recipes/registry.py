"""The table of named recipes: one entry per recipe, listed here explicitly (no registration by import)."""

from __future__ import annotations

from attnlab.errors import ConfigError
from attnlab.training.recipes.base import Recipe
from attnlab.training.recipes.contrastive import CLIP_MNIST
from attnlab.training.recipes.masked import BERT_MLM
from attnlab.training.recipes.minilm_mlm import MINILM_MLM
from attnlab.training.recipes.smollm2_mlm import SMOLLM2_MLM
from attnlab.training.recipes.text import GPT_BPE, GPT_CHAR
from attnlab.training.recipes.translation import TRANSLATE_NUMBERS
from attnlab.training.recipes.vision import VIT_MNIST

RECIPES: dict[str, Recipe] = {r.name: r for r in (GPT_CHAR, GPT_BPE, BERT_MLM, MINILM_MLM, SMOLLM2_MLM,
                                                  TRANSLATE_NUMBERS, VIT_MNIST, CLIP_MNIST)}


def names() -> list[str]:
    """The recipe names, sorted."""
    return sorted(RECIPES)


def get_recipe(name: str) -> Recipe:
    if name not in RECIPES:
        raise ConfigError(f"unknown recipe {name!r}; recipes: {', '.join(names())}")
    return RECIPES[name]


def describe() -> str:
    """One line per recipe: its name and what it trains."""
    return "\n".join(f"  {name:18s} {RECIPES[name].help}" for name in names())
