"""What reads or changes a value inside the model's own forward, at the names that attnlab.record uses.

    with attnlab.intervene(model, {"blocks.1.attn.weights": lambda w, name: w * 0}):
        out = model(ids)                      # the plain forward, with that one value replaced

    with attnlab.intervene(model, attnlab.ablate_heads(model, {1: [0, 3]})):   # a helper builds the edits
        out = model(ids)

`edits` maps a name or glob pattern (`blocks.*.resid_post`, as in `record`) to a function `(tensor, name) ->
tensor` or to a tensor that replaces the value; a list of such mappings applies them in order. Every module
already hands each named value to the probe of the current context (attnlab.recording.Probe.keep) and continues
with what it returns, so an edit runs in the one forward: no copy of the model, no torch hook, no second pass.

How it stays local and free when off: the edits sit in the same ContextVar as a recording (one Probe holds
both), set on entering `intervene` and reset in `finally`. Another thread, or code after the `with` (also
after an exception inside it), sees no edit; a layer pays the one `active()` call it paid before. Attention
keeps its fused kernel unless an edit (or a recording) names one of its scores, weights, q, k or v; the
per-head outputs z and head_out are computed only when named.

With a recording: the recorded values are the edited ones (edits apply first). With generation: each decoding
step is the model's forward, so the edit applies at every step. Position-selective helpers (patch, steer with
`positions`) count absolute positions: a KV-cached step that holds only the newest token is edited there only
if that position is selected, so cached generation equals the full forward under the same edit (k and v are
edited as read from the cache, never written back). A plain function sees the step's own slice. Positions are
token positions: in a left-padded batch (attention_mask) a row's position p is its own p-th real token,
`cumsum(mask) - 1` as generation numbers them, not column p, so a row is edited the same in a batch as alone.

Sweeps put their variants on the batch dimension: `head_sweep` ablates one head per row of a repeated input,
`trace_residual` patches one (layer, position) per row: a few forwards, not one per cell.

The package's modules, one job each, in the order they build on each other:
- readouts: what the model predicts at a position, read from one forward (logprobs_at, clean_run, logit_lens);
- checks: the argument checks every entry point shares (one wording whichever a user calls);
- context: intervene, Edit, Editor (the edits in the forward's ContextVar);
- edits: the ready-made edits (ablate_heads, patch, steer);
- sweeps: before_after, head_sweep, trace_residual and their chunking;
- attribution: attribution patching (one forward and one backward estimate every cell) and exact patching grids;
- logit_attribution: each component's direct share of the answer's logit.
Every public name is importable from here and from `attnlab`.
"""

from attnlab.interventions.attribution import GRIDS, attribution_patch, exact_patch, site_names
from attnlab.interventions.checks import check_one_sentence, checked_index, checked_target
from attnlab.interventions.context import SEQ_AXIS, Edit, Editor, EditValue, check_edits, intervene
from attnlab.interventions.edits import CellPatch, HeadAblation, Patch, Steer, ablate_heads, head_means, patch, steer
from attnlab.interventions.logit_attribution import direct_logit_attribution
from attnlab.interventions.readouts import CleanRun, clean_run, logit_lens, logprobs_at
from attnlab.interventions.sweeps import (
    MIN_SPLIT,
    POSITION_GROUPS,
    Cancelled,
    before_after,
    head_sweep,
    layer_chunks,
    trace_residual,
)

__all__ = [
    "intervene", "check_edits", "Edit", "Editor", "EditValue", "SEQ_AXIS",
    "ablate_heads", "head_means", "HeadAblation", "patch", "Patch", "steer", "Steer", "CellPatch",
    "before_after", "head_sweep", "trace_residual", "layer_chunks", "Cancelled", "MIN_SPLIT", "POSITION_GROUPS",
    "check_one_sentence", "checked_index", "checked_target",
    "logprobs_at", "clean_run", "CleanRun", "logit_lens",
    "attribution_patch", "exact_patch", "site_names", "GRIDS", "direct_logit_attribution",
]
