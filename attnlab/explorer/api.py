"""Pure functions behind every view of the explorer: the server, the notebook view and the tests call these.

Each takes a `Loaded` model (registry.Loaded: model + tokenizer + label) and plain values, and returns plain
JSON-ready dicts and lists. Nothing here touches HTTP or files: the server maps errors to status codes, the
registry decides which files exist. Each view computes in its own package (explorer/views/<view>/compute.py;
the helpers they share in explorer/server/common.py); this module is their one front door.
"""

from attnlab.explorer.server.common import (
    MASKED,
    MAX_TEXT_CHARS,
    MAX_TOKENS,
    encode,
    token_limit,
    wrap,
)
from attnlab.explorer.views.architecture.compute import (
    FAMOUS,
    architecture,
    describe,
    famous_models,
    list_models,
    parameter_calculator,
    walkthrough,
)
from attnlab.explorer.views.architecture.forward_pass import forward_pass
from attnlab.explorer.views.attention.compute import attention, attention_grid, greedy_translation, mask_placement
from attnlab.explorer.views.cost.compute import cost
from attnlab.explorer.views.experiments.ablation.compute import ablation
from attnlab.explorer.views.experiments.attention_ablation.compute import attention_vs_ablation
from attnlab.explorer.views.experiments.lens.compute import logit_lens_top
from attnlab.explorer.views.experiments.sweeps.compute import head_sweep_grid, residual_patch_grid
from attnlab.explorer.views.generation.compute import filtered_probs, generation_step
from attnlab.explorer.views.lessons.scaling import projection_steps, scaling_statistics
from attnlab.explorer.views.selfsup.compute import causal_predictions, mlm_draw, mlm_predict
from attnlab.explorer.views.vision.compute import rollout, vision
from attnlab.explorer.views.vision.walk import vision_walk

__all__ = [
    "FAMOUS", "MASKED", "MAX_TEXT_CHARS", "MAX_TOKENS", "ablation", "architecture", "attention", "attention_grid",
    "attention_vs_ablation", "head_sweep_grid", "logit_lens_top", "residual_patch_grid",
    "causal_predictions", "cost", "describe", "encode", "famous_models", "forward_pass", "generation_step",
    "greedy_translation", "list_models", "mask_placement", "mlm_draw", "mlm_predict", "parameter_calculator",
    "projection_steps", "rollout", "scaling_statistics", "token_limit", "vision", "walkthrough",
    "wrap", "filtered_probs", "vision_walk",
]
