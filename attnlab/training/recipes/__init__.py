"""Named recipes: a model, its data, its loss and its evaluation, with defaults that meet the documented targets.

One module per family: text (gpt-char, gpt-bpe), masked (bert-mlm), translation (translate-numbers), vision
(vit-mnist), contrastive (clip-mnist); base holds the Recipe record and the text-data steps they share; registry
the table. Every recipe key (and every TrainSettings key) can be overridden from a config file or `key=value` on
the command line (attnlab.training.settings). Each recipe's build() returns a Task for the Trainer.

Data come from the general data layer (attnlab.data): corpora for text, tokenizers built there, a memory-mapped
TokenFile under OUT/data/ (tokenized once, reused by --resume) for the text recipes, MLMCollator's masking rule
for bert-mlm, MNIST-5k for the image recipes. Losses come from attnlab.objectives, text samples and translations
from attnlab.generation. Every random draw of a training batch uses the trainer's checkpointed generator, so a
resumed run continues with exactly the batches an uninterrupted one would draw.
"""

from attnlab.training.recipes.base import Recipe
from attnlab.training.recipes.contrastive import build_dual_encoder, load_dual_encoder
from attnlab.training.recipes.registry import RECIPES, describe, get_recipe, names

# build_dual_encoder / load_dual_encoder: what attnlab.loading and the explorer import today to build clip-mnist;
# they go once the dual encoder has its own config and build_model support
__all__ = ["Recipe", "RECIPES", "describe", "get_recipe", "names", "build_dual_encoder", "load_dual_encoder"]
