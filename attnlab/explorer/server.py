"""The explorer's HTTP face: a FastAPI app over explorer.api, plus the static page served from the package.

Every endpoint is a thin adapter: parse the request, ask the registry for the model by id, call the pure
function in api.py, return its dict. Errors become answers, never crashes: unknown model/layer/head -> 404,
a model that cannot be loaded -> 503, bad input (text beyond the limit, non-images, ...) -> 400, malformed
JSON -> 422, oversize bodies -> 413; each with a {"detail": message} that says what was wrong and what is allowed.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, Field

from attnlab.errors import AttnlabError
from attnlab.explorer import api, images, lessons
from attnlab.explorer.registry import ModelUnavailable, Registry, UnknownItem, build_registry

STATIC = Path(__file__).resolve().parent / "static"
MAX_BODY_BYTES = 4 * 1024 * 1024
MAX_CONCURRENT = 1  # model code at once: attnlab.recording keeps its recorder process-wide, so one at a time;
#                    the others wait in line (asyncio, no thread held); torch still uses every core per request
QUEUE_SECONDS = 120  # a request still waiting after this long is answered 503 "busy"


class TextRequest(BaseModel):
    model: str = Field(description="model id from GET /api/models")
    text: str = Field(max_length=api.MAX_TEXT_CHARS, description="the sentence to run")


class AttentionRequest(TextRequest):
    layer: int = 0
    head: int = 0
    part: str | None = Field(None, description="self; or encoder | decoder | cross for encoder-decoders")
    target: str | None = Field(None, description="encoder-decoders: target text (default: greedy translation)")


class GridRequest(TextRequest):
    part: str | None = None
    target: str | None = None


class MaskRequest(TextRequest):
    layer: int = 0
    head: int = 0


class DrawRequest(TextRequest):
    seed: int = 0


class MLMRequest(TextRequest):
    selections: list[dict[str, Any] | int] = Field(description="positions, or {position, action, token_id}")


class VisionRequest(BaseModel):
    model: str
    image: dict[str, Any] = Field(description='{"mnist": i} | {"photo": name} | {"upload": base64 PNG/JPEG}')
    layer: int = 0
    head: int = 0
    patch: int = Field(0, description="token index: 0 = [CLS], 1.. = patches in raster order")


class GenerateRequest(BaseModel):
    model: str
    prompt: str = Field(max_length=api.MAX_TEXT_CHARS)
    generated: list[int] = Field(default_factory=list, description="token ids sampled so far")
    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int = 0


def create_app(registry: Registry | None = None) -> FastAPI:
    registry = registry if registry is not None else build_registry()
    app = FastAPI(title="attnlab Transformer Explorer",
                  description="Every number inside real transformers: attention, masking, vision, generation, cost.",
                  version="0.1.0", docs_url=None, redoc_url=None)  # their pages load scripts from a CDN
    app.state.registry = registry
    # Recording is process-global (attnlab.recording._active), and FastAPI runs these handlers in a thread
    # pool: one computation at a time keeps two requests from recording into each other.
    compute = threading.Lock()

    @app.middleware("http")
    async def limit_body(request: Request, call_next):
        length = request.headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > MAX_BODY_BYTES):
            return JSONResponse({"detail": f"request body is {length} bytes; allowed up to {MAX_BODY_BYTES}"},
                                status_code=413)
        if request.method in ("POST", "PUT") and length is None:
            body = await request.body()  # chunked upload: read it once and measure
            if len(body) > MAX_BODY_BYTES:
                return JSONResponse({"detail": f"request body is over {MAX_BODY_BYTES} bytes"}, status_code=413)
        path = request.url.path
        if not (path.startswith("/api/") and (request.method == "POST" or path.startswith("/api/cost/"))):
            return await call_next(request)
        slots = _slots()  # heavy work: at most MAX_CONCURRENT at once, the rest queue
        try:
            await asyncio.wait_for(slots.acquire(), QUEUE_SECONDS)
        except asyncio.TimeoutError:
            return JSONResponse({"detail": f"the explorer is busy ({MAX_CONCURRENT} requests running and more "
                                 f"waiting for over {QUEUE_SECONDS} s); retry shortly"}, status_code=503)
        try:
            return await call_next(request)
        finally:
            slots.release()

    heavy: dict = {"loop": None, "slots": None}

    def _slots() -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()  # one semaphore per event loop (tests may start several)
        if heavy["loop"] is not loop:
            heavy.update(loop=loop, slots=asyncio.Semaphore(MAX_CONCURRENT))
        return heavy["slots"]

    @app.exception_handler(UnknownItem)
    async def _unknown(request, exc):
        return JSONResponse({"detail": str(exc)}, status_code=404)

    @app.exception_handler(ModelUnavailable)
    async def _unavailable(request, exc):
        return JSONResponse({"detail": str(exc)}, status_code=503)

    @app.exception_handler(AttnlabError)
    async def _bad_input(request, exc):
        return JSONResponse({"detail": str(exc)}, status_code=400)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request, exc):
        parts = []
        for err in exc.errors():
            where = ".".join(str(x) for x in err.get("loc", ()) if x != "body") or "body"
            parts.append(f"{where}: {err.get('msg')}")
        return JSONResponse({"detail": "malformed request: " + "; ".join(parts)}, status_code=422)

    def get(model_id: str):
        return registry.get(model_id)

    @app.get("/api/models", summary="models on offer (loaded lazily on first use)")
    def models() -> dict:
        return {"models": api.list_models(registry), "default": registry.default_id()}

    @app.get("/api/models/{model_id}", summary="a model's shape and what the tabs can show for it")
    def model_info(model_id: str) -> dict:
        with compute:
            return api.describe(get(model_id))

    @app.get("/api/architecture/{model_id}", summary="blocks, shapes for n tokens and parameter counts")
    def architecture(model_id: str, n: int = 8, text: str | None = None) -> dict:
        with compute:
            return api.architecture(get(model_id), n, text)

    @app.get("/api/params", summary="closed form V*d + L*d + N*12*d^2 beside the exact count")
    def params(V: int = 30522, d: int = 768, N: int = 12, h: int = 12, L: int = 512, d_ff: int | None = None):
        with compute:
            return api.parameter_calculator(V, d, N, h, L, d_ff)

    @app.get("/api/famous", summary="the seeds' table of famous models, counted by attnlab")
    def famous() -> list:
        with compute:
            return api.famous_models()

    @app.post("/api/walkthrough", summary="the inference walk-through of the seeds, run on this model")
    def walkthrough(req: TextRequest) -> dict:
        with compute:
            return api.walkthrough(get(req.model), req.text)

    @app.post("/api/attention", summary="one layer and head: raw scores, weights, Q and K")
    def attention(req: AttentionRequest) -> dict:
        with compute:
            return api.attention(get(req.model), req.text, req.layer, req.head, req.part, req.target)

    @app.post("/api/attention/grid", summary="thumbnails of every layer x head")
    def grid(req: GridRequest) -> dict:
        with compute:
            return api.attention_grid(get(req.model), req.text, req.part, target=req.target)

    @app.post("/api/mask-placement", summary="causal mask before vs after the softmax")
    def mask_placement(req: MaskRequest) -> dict:
        with compute:
            return api.mask_placement(get(req.model), req.text, req.layer, req.head)

    @app.post("/api/mlm/draw", summary="BERT's random 15% with its 80/10/10 split")
    def mlm_draw(req: DrawRequest) -> dict:
        with compute:
            return api.mlm_draw(get(req.model), req.text, req.seed)

    @app.post("/api/mlm/predict", summary="top-5 predictions and loss at the selected positions")
    def mlm_predict(req: MLMRequest) -> dict:
        with compute:
            return api.mlm_predict(get(req.model), req.text, req.selections)

    @app.post("/api/causal", summary="each position's next-token prediction and loss")
    def causal(req: TextRequest) -> dict:
        with compute:
            return api.causal_predictions(get(req.model), req.text)

    @app.get("/api/vision/samples", summary="MNIST digits and sample photos available here")
    def vision_samples() -> dict:
        return images.samples()

    @app.post("/api/vision", summary="ViT prediction, attention of a patch, rollout, position similarity")
    def vision(req: VisionRequest) -> dict:
        lm = get(req.model)
        if lm.model.config.topology != "vit":
            raise AttnlabError(f"model {req.model!r} is a {lm.model.config.topology}; the Vision tab needs a ViT")
        pixels, grey = images.to_pixels(lm.model.config, req.image)
        with compute:
            out = api.vision(lm, pixels, req.layer, req.head, req.patch)
        out["pixels"] = grey
        return out

    @app.post("/api/generate/step", summary="one decoding step with the KV cache, timed with and without it")
    def generate_step(req: GenerateRequest) -> dict:
        with compute:
            return api.generation_step(get(req.model), req.prompt, req.generated, req.temperature, req.top_k,
                                       req.top_p, req.seed)

    @app.get("/api/cost/{model_id}", summary="parameters, FLOPs and memory for n tokens, and their scaling")
    def cost(model_id: str, n: int = 128, measure: bool = False) -> dict:
        with compute:
            return api.cost(get(model_id), n, measure)

    app.include_router(lessons.router)  # the teaching lessons (explorer/lessons.py)

    @app.get("/", include_in_schema=False)
    def index():
        return FileResponse(STATIC / "index.html")

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    return app
