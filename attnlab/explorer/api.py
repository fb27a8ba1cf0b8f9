"""Pure functions behind every view of the explorer: the server, the notebook view and the tests call these.

Each takes a `Loaded` model (registry.Loaded: model + tokenizer + label) and plain values, and returns plain
JSON-ready dicts and lists. Nothing here touches HTTP or files: the server maps errors to status codes, the
registry decides which files exist. The views live in one module each (architecture, attention, selfsup,
vision, generation, cost; shared helpers in common); this module is their one front door.
"""

from attnlab.explorer.architecture import (
    FAMOUS,
    architecture,
    describe,
    famous_models,
    list_models,
    parameter_calculator,
    walkthrough,
)
from attnlab.explorer.attention import attention, attention_grid, greedy_translation, mask_placement
from attnlab.explorer.common import (
    MASKED,
    MAX_TEXT_CHARS,
    MAX_TOKENS,
    encode,
    token_limit,
    wrap,
)
from attnlab.explorer.cost import cost
from attnlab.explorer.generation import _filtered_probs, generation_step
from attnlab.explorer.scaling import projection_steps, scaling_statistics
from attnlab.explorer.selfsup import causal_predictions, mlm_draw, mlm_predict
from attnlab.explorer.vision import rollout, vision

__all__ = [
    "FAMOUS", "MASKED", "MAX_TEXT_CHARS", "MAX_TOKENS", "architecture", "attention", "attention_grid",
    "causal_predictions", "cost", "describe", "encode", "famous_models", "generation_step",
    "greedy_translation", "list_models", "mask_placement", "mlm_draw", "mlm_predict", "parameter_calculator",
    "projection_steps", "rollout", "scaling_statistics", "token_limit", "vision", "walkthrough",
    "wrap", "_filtered_probs",
]
