"""HTTP routes of the Experiments tab: attention finished (per head through W_O), the editable toy, the training
timeline, nearby meanings, and the interventions (ablate, which heads matter, patch, logit lens, attention vs
ablation). The two sweeps stream progress lines and stop when cancelled (POST /api/experiments/cancel or the
client leaving; explorer/jobs.py).

An APIRouter the server includes (like explorer/lessons.py): each route validates its body with a schema whose
numbers have ranges, asks the app's registry for the model by id and runs the pure function (attention_flow,
toy, timeline, meanings) through the runner's `run` (explorer/runner.py): a model slot, the queue limit and the
work in a worker thread. Errors take the app's mapping (explorer/handlers.py: 404 unknown model, 400 bad input,
503 model unavailable, 422 a value outside its range: the schema's, or a layer, head or position this model or
text lacks, named with the model's own range in every view alike; a body field the schema does not have is a
422 too).
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from fastapi import Path as PathParam
from pydantic import Field

from attnlab.errors import InputError
from attnlab.explorer import attention_flow, experiments, meanings, timeline, toy
from attnlab.explorer.common import MAX_TEXT_CHARS, RequestBody, encode
from attnlab.explorer.jobs import job_stream, jobs
from attnlab.explorer.runner import run

router = APIRouter()
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


@router.post("/api/experiments/flow", summary="one token through one attention layer: per-head sum w.V, W_O, residual")
async def flow(req: FlowRequest, request: Request):
    registry = request.app.state.registry
    return await run(request, lambda: attention_flow.attention_flow(registry.get(req.model), req.text, req.layer,
                                                                    req.token, req.head))


@router.get("/api/experiments/toy/{head}", summary="the toy's W_Q and W_K of a head, as the page edits them")
async def toy_weights(request: Request, head: int = PathParam(ge=0, lt=len(toy.HEADS))):
    def work():
        w_q, w_k = toy.default_weights(head)
        return {"head": head, "name": toy.HEADS[head][0], "w_q": w_q, "w_k": w_k, "dims": list(toy.DIMS),
                "sentences": list(toy.SENTENCES)}

    return await run(request, work)


@router.post("/api/experiments/toy", summary="the toy's scores and softmax with edited W_Q and W_K")
async def toy_scores(req: ToyRequest, request: Request):
    return await run(request, lambda: toy.scores(req.text, req.w_q, req.w_k, req.query))


@router.get("/api/experiments/runs", summary="models served from a run folder that has a training probe")
async def runs(request: Request):
    registry = request.app.state.registry
    return await run(request, lambda: {"runs": timeline.runs(list(registry.entries.values()))})


@router.get("/api/experiments/timeline/{model_id}", summary="a head's probed attention over training, with the loss")
async def timeline_view(request: Request, model_id: str = PathParam(max_length=MAX_ID),
                        layer: int = Query(0, ge=0, le=10_000),
                        head: int | None = Query(None, ge=0, le=10_000, description="default: the head whose "
                                                 "previous-token score ends highest (its layer too)")):
    registry = request.app.state.registry
    return await run(request, lambda: timeline.timeline(registry.entry(model_id), layer, head))


@router.post("/api/experiments/neighbours", summary="nearest tokens in the input embedding table (cosine)")
async def neighbours(req: NeighboursRequest, request: Request):
    registry = request.app.state.registry
    return await run(request, lambda: meanings.nearest_tokens(registry.get(req.model), req.text, req.k))


@router.post("/api/experiments/sentences", summary="cosines of mean-pooled sentence vectors (MiniLM)")
async def sentences(req: SentencesRequest, request: Request):
    registry = request.app.state.registry
    return await run(request, lambda: meanings.sentence_similarity(registry.get(req.model), req.sentences))


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
    k: int = Field(experiments.TOP, ge=1, le=20)
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


def _model(request: Request, model_id: str, *texts: str):
    """The model by id (404 unknown), each text within MAX_EXPERIMENT_TOKENS tokens (400 naming the limit)."""
    lm = request.app.state.registry.get(model_id)
    for text in texts:
        n = len(encode(lm, text)[0])
        if n > MAX_EXPERIMENT_TOKENS:
            raise InputError(f"the text has {n} tokens; experiments accept at most {MAX_EXPERIMENT_TOKENS} "
                             "(each head or cell is one more forward)")
    return lm


@router.post("/api/experiments/ablation", summary="switch heads off: the prediction before and after")
async def ablation(req: AblationRequest, request: Request):
    return await run(request, lambda: experiments.ablation(_model(request, req.model, req.text), req.text,
                                                           req.heads, mode=req.mode, position=req.position,
                                                           target=req.target))


@router.post("/api/experiments/logit-lens", summary="the top-k tokens after the embeddings and after each block")
async def lens(req: LensRequest, request: Request):
    return await run(request, lambda: experiments.logit_lens_top(_model(request, req.model, req.text), req.text,
                                                                 position=req.position, k=req.k,
                                                                 target=req.target))


@router.post("/api/experiments/attention-ablation", summary="one head's attention weights beside the effect of "
             "knocking each weight out")
async def attention_ablation(req: AttentionAblationRequest, request: Request):
    return await run(request, lambda: experiments.attention_vs_ablation(
        _model(request, req.model, req.text), req.text, req.layer, req.head, position=req.position,
        target=req.target))


def _sweep_stream(request: Request, job_id: str | None, work):
    """A long sweep as application/x-ndjson (explorer/jobs.py): {"progress": done, "total": n} lines as batches
    finish, then one {"result": answer} line. `work(progress, cancelled)` reports each batch and checks, between
    batches, whether POST /api/experiments/cancel named its job or the client left (the page's Cancel does both)."""
    return job_stream(request, job_id, lambda job: work(job.report, job.cancelled))


@router.post("/api/experiments/head-sweep", summary="each head switched off in turn: the drop in log P(target), "
             "streamed with progress")
async def head_sweep(req: SweepRequest, request: Request):
    def work(progress, cancelled):
        lm = _model(request, req.model, req.text)
        return experiments.head_sweep_grid(lm, req.text, position=req.position, target=req.target, mode=req.mode,
                                           progress=progress, cancelled=cancelled)

    return await _sweep_stream(request, req.job, work)


@router.post("/api/experiments/patch", summary="causal tracing: clean residual stream copied into the corrupted "
             "run at each (layer, position), streamed with progress")
async def patch(req: PatchRequest, request: Request):
    def work(progress, cancelled):
        lm = _model(request, req.model, req.clean, req.corrupted)
        return experiments.residual_patch_grid(lm, req.clean, req.corrupted, position=req.position,
                                               target=req.target, site=req.site, progress=progress,
                                               cancelled=cancelled)

    return await _sweep_stream(request, req.job, work)


@router.post("/api/experiments/cancel", summary="stop a running head sweep or patch grid at its next batch")
async def cancel(req: CancelRequest, request: Request):
    job = jobs(request).get(req.job)
    if job is None:
        return {"job": req.job, "cancelled": False, "detail": "no running job by that id (it may have finished)"}
    job.stop.set()
    return {"job": req.job, "cancelled": True}
