"""What every Experiments route shares: the request bodies (each number with its range; the code view turns any
of them into Python, so they live together), the model by id with each text checked against the experiments' token
limit, and a long sweep streamed as a job.

Errors take the app's mapping (explorer/server/handlers.py: 404 unknown model, 400 bad input, 503 model
unavailable, 422 a value outside its range: the schema's, or a layer, head or position this model or text lacks;
a body field the schema does not have is a 422 too).
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Request
from pydantic import Field

from attnlab.errors import InputError
from attnlab.explorer.server.common import MAX_ID_CHARS, MAX_TEXT_CHARS, RequestBody, encode
from attnlab.explorer.server.jobs import job_stream
from attnlab.explorer.views.experiments.attribution import compute as attribution_grid
from attnlab.explorer.views.experiments.components import compute as components
from attnlab.explorer.views.experiments.meanings import compute as meanings
from attnlab.explorer.views.experiments.pairs import TOP
from attnlab.explorer.views.experiments.steering.compute import MAX_ALPHA, MAX_NEW_TOKENS, MAX_PROMPT_CHARS
from attnlab.explorer.views.experiments.toy import compute as toy

MAX_ID = 200
Matrix = list[list[float]]


class FlowRequest(RequestBody):
    model: str = Field(max_length=MAX_ID, description="model id from GET /api/models")
    text: str = Field(max_length=MAX_TEXT_CHARS)
    layer: int = Field(0, ge=0, le=10_000)
    token: int | None = Field(None, ge=0, le=100_000, description="query position (default: the last token)")
    head: int | None = Field(None, ge=0, le=10_000, description="head shown in detail (default: largest share)")


class ToyRequest(RequestBody):
    text: str = Field(max_length=400, description="a few of the toy's words")
    w_q: Matrix = Field(max_length=len(toy.DIMS), description="W_Q of one head: 8 rows x 4 numbers")
    w_k: Matrix = Field(max_length=len(toy.DIMS), description="W_K of one head: 8 rows x 4 numbers")
    query: int = Field(1, ge=0, le=100)


class NeighboursRequest(RequestBody):
    model: str = Field(max_length=MAX_ID)
    text: str = Field(max_length=200, description="a word (its first token is looked up)")
    k: int = Field(10, ge=1, le=meanings.MAX_NEIGHBOURS)


class SentencesRequest(RequestBody):
    model: str = Field("minilm", max_length=MAX_ID)
    sentences: list[Annotated[str, Field(max_length=2_000)]] | None = Field(None, max_length=meanings.MAX_SENTENCES,
                                        description="2 to 8 sentences (default: paraphrase pairs + unrelated)")


# ---------------------------------------------------------------------------------------------- interventions
MAX_EXPERIMENT_CHARS = 1_000  # a sentence to experiment on; the sweeps cost one forward per head or cell
MAX_EXPERIMENT_TOKENS = 64
MAX_HEAD_PAIRS = 1_024
JOB_ID = r"^[A-Za-z0-9_-]{1,40}$"
ExperimentText = Annotated[str, Field(max_length=MAX_EXPERIMENT_CHARS)]
Position = Annotated[int | None, Field(None, ge=0, le=MAX_EXPERIMENT_TOKENS - 1,
                                       description="where the prediction is read (default: a decoder's last "
                                                   "token, an MLM's first [MASK])")]
Target = Annotated[int | None, Field(None, ge=0, le=10_000_000, description="token id followed (default: the "
                                                                             "model's top prediction)")]


class AblationRequest(RequestBody):
    model: str = Field(max_length=MAX_ID)
    text: ExperimentText
    heads: list[Annotated[list[int], Field(min_length=2, max_length=2)]] = Field(
        min_length=1, max_length=MAX_HEAD_PAIRS, description="[[layer, head], ...] to switch off")
    mode: Literal["zero", "mean"] = "zero"
    position: Position = None
    target: Target = None


class SweepRequest(RequestBody):
    model: str = Field(max_length=MAX_ID)
    text: ExperimentText
    mode: Literal["zero", "mean"] = "zero"
    position: Position = None
    target: Target = None
    job: str | None = Field(None, pattern=JOB_ID, description="an id of the page's choosing: POST "
                            "/api/experiments/cancel with it stops the sweep")


class PatchRequest(RequestBody):
    model: str = Field(max_length=MAX_ID)
    clean: ExperimentText
    corrupted: ExperimentText
    site: Literal["resid_pre", "resid_post"] = "resid_pre"
    position: Position = None
    target: Target = None
    job: str | None = Field(None, pattern=JOB_ID)


class LensRequest(RequestBody):
    model: str = Field(max_length=MAX_ID)
    text: ExperimentText
    position: Position = None
    k: int = Field(TOP, ge=1, le=20)
    target: Target = None


class AttentionAblationRequest(RequestBody):
    model: str = Field(max_length=MAX_ID)
    text: ExperimentText
    layer: int = Field(0, ge=0, le=10_000)
    head: int = Field(0, ge=0, le=10_000)
    position: Position = None
    target: Target = None


class CancelRequest(RequestBody):
    job: str = Field(pattern=JOB_ID)


Top = Field(attribution_grid.TOP, ge=0, le=attribution_grid.MAX_TOP,
            description="cells checked exactly: the largest by |estimate|")
Extra = Field(attribution_grid.EXTRA, ge=0, le=attribution_grid.MAX_EXTRA,
              description="more cells checked exactly, drawn at random (fixed seed)")


class HeadAttributionRequest(SweepRequest):
    """The exact sweep's request, plus how many cells the estimate hands to exact ablation."""

    top: int = Top
    extra: int = Extra


class PatchAttributionRequest(RequestBody):
    model: str = Field(max_length=MAX_ID)
    clean: ExperimentText
    corrupted: ExperimentText
    position: Position = None
    target: Target = None
    top: int = Top
    extra: int = Extra
    job: str | None = Field(None, pattern=JOB_ID)


Contrast = Field(None, ge=0, le=10_000_000, description="token id the answer is compared with (default: the "
                 "corrupted sentence's top prediction, else the clean one's second)")


class ComponentRequest(RequestBody):
    model: str = Field(max_length=MAX_ID)
    clean: ExperimentText
    corrupted: ExperimentText | None = Field(None, description="same token count; needed by mode 'resample'")
    mode: Literal["zero", "mean", "resample"] = "resample"
    method: Literal["attribution", "exact"] = "attribution"
    grids: list[Literal["attn", "mlp", "head"]] = Field(list(components.GRIDS), min_length=1, max_length=3)
    position: Position = None
    target: Target = None
    contrast: int | None = Contrast
    job: str | None = Field(None, pattern=JOB_ID)


class LogitAttributionRequest(RequestBody):
    model: str = Field(max_length=MAX_ID)
    text: ExperimentText
    position: Position = None
    target: Target = None
    contrast: int | None = Contrast




class SteerRequest(RequestBody):
    model: str = Field(max_length=MAX_ID_CHARS, description="model id from GET /api/models (a decoder)")
    prompt: str = Field(max_length=MAX_PROMPT_CHARS, description="the text both continuations start from")
    positive: str = Field(max_length=MAX_PROMPT_CHARS, description="the direction points towards this text ...")
    negative: str = Field(max_length=MAX_PROMPT_CHARS, description="... and away from this one")
    layer: int = Field(0, ge=0, le=10_000, description="block whose incoming residual stream is steered")
    alpha: float = Field(4.0, ge=-MAX_ALPHA, le=MAX_ALPHA, description="strength: alpha x the direction is added")
    tokens: int = Field(20, ge=1, le=MAX_NEW_TOKENS, description="new tokens generated (greedy)")


def experiment_model(request: Request, model_id: str, *texts: str):
    """The model by id (404 unknown), each text within MAX_EXPERIMENT_TOKENS tokens (400 naming the limit)."""
    lm = request.app.state.registry.get(model_id)
    for text in texts:
        n = len(encode(lm, text)[0])
        if n > MAX_EXPERIMENT_TOKENS:
            raise InputError(f"the text has {n} tokens; experiments accept at most {MAX_EXPERIMENT_TOKENS} "
                             "(each head or cell is one more forward)")
    return lm


def sweep_stream(request: Request, job_id: str | None, work):
    """A long sweep as application/x-ndjson (explorer/server/jobs.py): {"progress": done, "total": n} lines as batches
    finish, then one {"result": answer} line. `work(progress, cancelled)` reports each batch and checks, between
    batches, whether POST /api/experiments/cancel named its job or the client left (the page's Cancel does both)."""
    return job_stream(request, job_id, lambda job: work(job.report, job.cancelled))
