""""Show the code": for the request a view just sent, the few lines of attnlab Python that give the same numbers.

POST /api/experiments/code {"path": the API path the view called, "body": its JSON body} -> {"code": text,
"view": what it computes}. The body is checked by the very schema of that route (an unknown field or a value
out of range is the same 422), then its values are written into the snippet as Python literals (repr), so
what the learner copies runs as it is: `attnlab.load("<model id>")`, the same text, heads, layer and alpha.
tests/explorer/test_code_snippets.py runs every snippet and compares its numbers with the route's answer.

Why on the server: it knows how each model loads, the schema of each route and the library calls the view
makes; the page only shows the text (static/experiments/code.js).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, get_type_hints

from pydantic import BaseModel, ValidationError

from attnlab.errors import InputError
from attnlab.explorer.server.common import OutOfRange, shown
from attnlab.explorer.server.registry import Registry
from attnlab.explorer.views.experiments.requests import (
    AblationRequest,
    AttentionAblationRequest,
    ComponentRequest,
    FlowRequest,
    HeadAttributionRequest,
    LensRequest,
    LogitAttributionRequest,
    NeighboursRequest,
    PatchAttributionRequest,
    PatchRequest,
    SentencesRequest,
    SteerRequest,
    SweepRequest,
    ToyRequest,
)
from attnlab.explorer.views.experiments.steering.compute import site


# ------------------------------------------------------------------------------------------------- pieces
def _load(registry: Registry, model_id: str) -> list[str]:
    """The lines that load the view's model: by name for the shipped and installed ones."""
    entry = registry.entry(model_id)
    if entry.kind in ("shipped", "pretrained"):
        return [f"model, tok = attnlab.load({model_id!r})  # the explorer's model {model_id!r}"]
    if entry.kind == "path" and entry.source is not None:
        return [f"model, tok = attnlab.load({entry.source.name!r})  # the folder given to `attnlab explore`"]
    raise InputError(f"model {shown(model_id)} was built in Python, not loaded from a name: its code is yours")


def _header(registry: Registry, model_id: str, extra: list[str] = ()) -> list[str]:
    return ["import torch", "", "import attnlab", *extra, "", *_load(registry, model_id),
            "model.eval()", ""]


def _tokens(registry: Registry, model_id: str) -> list[str]:
    """`encode(text) -> (1, seq)` and `show(id) -> str`: with the model's tokenizer, or characters when the
    checkpoint has none (the explorer reads code points then)."""
    lm = registry.get(model_id)
    if lm.tokenizer is not None:
        return ["def encode(text):", "    return torch.tensor([tok.encode(text)])  # (1, seq) token ids", "",
                "def show(i):", "    return tok.decode([int(i)], skip_special_tokens=False)", ""]
    vocab = lm.model.config.vocab_size
    return ["def encode(text):  # this checkpoint has no tokenizer: a token is a character's code point",
            f"    return torch.tensor([[ord(c) if ord(c) < {vocab} else 0 for c in text]])", "",
            "def show(i):", "    return chr(int(i))", ""]


def _is_mlm(registry: Registry, model_id: str) -> bool:
    return registry.get(model_id).model.config.topology != "decoder"


def _position(registry: Registry, model_id: str, position: int | None, var: str = "ids") -> list[str]:
    """Where the prediction is read, as the views choose it: a decoder's last token, an MLM's [MASK] (a chosen
    position that is not [MASK] is masked)."""
    if not _is_mlm(registry, model_id):
        return [f"position = {var}.shape[1] - 1  # the last token: its prediction is the next token" if position
                is None else f"position = {position}"]
    if position is None:
        return [f"position = int(({var}[0] == tok.mask_id).nonzero()[0])  # the first [MASK]"]
    return [f"position = {position}", f"{var}[0, position] = tok.mask_id  # the word there is masked and guessed"]


def _target(target: int | None, logp: str = "clean") -> str:
    return (f"target = int({logp}.argmax())  # the token followed: the model's own top prediction" if target is None
            else f"target = {target}  # the token followed (its id)")


def _logp(var: str = "ids") -> str:
    return f"model({var}).logits[0, position].log_softmax(-1)"


# ------------------------------------------------------------------------------------------------- views
Snippet = tuple[type[BaseModel], Callable[[Registry, Any], list[str]], str]
SNIPPETS: dict[str, Snippet] = {}  # API path -> (the route's request schema, the writer, what the view computes)


def _writes(name: str, view: str):
    """Register the decorated writer as the snippet of POST /api/experiments/<name>, a view that computes `view`;
    the body's schema is the one the writer's request `r` is annotated with."""
    def register(write: Callable[[Registry, Any], list[str]]):
        SNIPPETS[f"/api/experiments/{name}"] = (get_type_hints(write)["r"], write, view)
        return write

    return register


@_writes("ablation", "P(target) with heads switched off")
def _ablation(registry: Registry, r: AblationRequest) -> list[str]:
    heads: dict[int, list[int]] = {}
    for layer, head in r.heads:
        heads.setdefault(layer, []).append(head)
    reference = ", reference=ids" if r.mode == "mean" else ""
    return [*_header(registry, r.model), *_tokens(registry, r.model), f"ids = encode({r.text!r})",
            *_position(registry, r.model, r.position),
            f"heads = {heads!r}  # {{layer: [heads]}} switched off, counted from 0 (the page shows them from 1)",
            f"edits = attnlab.ablate_heads(model, heads, mode={r.mode!r}{reference})",
            "with torch.no_grad():", f"    clean = {_logp()}",
            "    with attnlab.intervene(model, edits):", f"        ablated = {_logp()}", _target(r.target),
            "p_before, p_after = float(clean[target].exp()), float(ablated[target].exp())",
            "print(f\"P({show(target)!r}): {p_before:.2%} -> {p_after:.2%}\")"]


@_writes("head-sweep", "which heads matter")
def _sweep(registry: Registry, r: SweepRequest) -> list[str]:
    reference = ", reference=ids" if r.mode == "mean" else ""
    return [*_header(registry, r.model), *_tokens(registry, r.model), f"ids = encode({r.text!r})",
            *_position(registry, r.model, r.position),
            "with torch.no_grad():", f"    clean = {_logp()}", _target(r.target),
            "# each head switched off in turn: the drop in log P(target), one row of the batch per head",
            f"drops = attnlab.head_sweep(model, ids, target, position=position, mode={r.mode!r}{reference})",
            "print(drops)  # (layers, heads); positive: the head helped this prediction"]


@_writes("head-attribution", "which heads matter: the estimate, then the exact check")
def _head_attribution(registry: Registry, r: HeadAttributionRequest) -> list[str]:
    """The estimate grid "Which heads matter" draws first (attribution patching, one forward and one backward),
    then the exact drop of the heads with the largest estimates (the outlined cells; the page also checks a
    few drawn at random)."""
    if r.mode == "mean":
        fill = ["means = head_means(model, ids, range(layers))  # each head's z averaged over this sentence",
                "fill = {n: means[layer].expand_as(run.recorded[n]) for layer, n in enumerate(names)}"]
        reference = ", reference=ids"
    else:
        fill = ["fill = {n: torch.zeros_like(run.recorded[n]) for n in names}  # switched off: z = 0"]
        reference = ""
    imports = ["from attnlab.interventions import CleanRun, clean_run" + (", head_means" if r.mode == "mean" else "")]
    return [*_header(registry, r.model, imports), *_tokens(registry, r.model), f"ids = encode({r.text!r})",
            *_position(registry, r.model, r.position),
            "layers = len(model.blocks)", "names = [f\"blocks.{layer}.attn.z\" for layer in range(layers)]",
            "run = clean_run(model, ids, position, names=names)  # one forward, each head's z recorded",
            _target(r.target, "run.logprobs[0]"), *fill,
            "# the estimate: the first-order effect of copying `fill` in for each head, from one backward; its",
            "# sign turned so that it reads as the page's grid, the drop in log P(target) (positive: the head helped)",
            "estimate = -attnlab.attribution_patch(model, ids, ids, target, position=position, grids=[\"head\"],",
            "                                      clean=CleanRun(run.logprobs, fill))[\"head\"]  # (layers, heads)",
            "print(estimate.round(decimals=3))",
            f"# the check: the real drop of the {r.top} heads with the largest estimates, each switched off alone",
            "exact = {}",
            f"for flat in estimate.abs().flatten().argsort(descending=True, stable=True)[:{r.top}].tolist():",
            "    layer, head = divmod(flat, estimate.shape[1])",
            f"    edits = attnlab.ablate_heads(model, {{layer: [head]}}, mode={r.mode!r}{reference})",
            "    with attnlab.intervene(model, edits), torch.no_grad():",
            f"        exact[layer, head] = float(run.logprobs[0, target] - {_logp()}[target])",
            "    print(f\"layer {layer + 1} head {head + 1}: estimate {float(estimate[layer, head]):+.3f}, \"",
            "          f\"exact {exact[layer, head]:+.3f}\")"]


def _pair(registry: Registry, r) -> list[str]:
    return [*_header(registry, r.model), *_tokens(registry, r.model),
            f"clean_ids = encode({r.clean!r})", f"corrupted_ids = encode({r.corrupted!r})  # the same token count",
            *_position(registry, r.model, r.position, "clean_ids"),
            *(["corrupted_ids[0, position] = tok.mask_id"] if _is_mlm(registry, r.model) else []),
            "with torch.no_grad():", f"    clean = {_logp('clean_ids')}", _target(r.target)]


@_writes("patch", "causal tracing")
def _patch(registry: Registry, r: PatchRequest) -> list[str]:
    return [*_pair(registry, r),
            "# the clean residual stream copied into the corrupted run at each (layer, position)",
            "grid = attnlab.trace_residual(model, clean_ids, corrupted_ids, target, position=position, "
            f"site={r.site!r})", "print(grid)  # (layers, positions): P(target) with that one cell patched"]


@_writes("patch-attribution", "attribution patching and exact patching")
def _patch_attribution(registry: Registry, r: PatchAttributionRequest) -> list[str]:
    return [*_pair(registry, r),
            "# the estimate: one forward on each sentence and one backward give every cell at once",
            "estimate = attnlab.attribution_patch(model, clean_ids, corrupted_ids, target, position=position, "
            "grids=[\"resid_pre\"])[\"resid_pre\"]",
            "# the exact values: one patched run per cell (log P(patched) - log P(corrupted))",
            "exact = attnlab.exact_patch(model, clean_ids, corrupted_ids, target, position=position, "
            "grids=[\"resid_pre\"])[\"resid_pre\"]",
            "print(estimate)  # (layers, positions), the first answer the page draws",
            "print(exact)  # the page checks its largest cells against these"]


@_writes("logit-lens", "the logit lens")
def _lens(registry: Registry, r: LensRequest) -> list[str]:
    cut = [] if _is_mlm(registry, r.model) else ["ids = ids[:, : position + 1]  # later tokens cannot change it"]
    return [*_header(registry, r.model), *_tokens(registry, r.model), f"ids = encode({r.text!r})",
            *_position(registry, r.model, r.position), *cut,
            "# each layer's residual stream read through the final norm and the output head",
            "lens = attnlab.logit_lens(model, ids, positions=[position])[:, 0, 0]  # (layers + 1, vocab) log P",
            f"top = lens.topk({r.k})",
            "for row, (logp, idx) in enumerate(zip(top.values, top.indices)):",
            "    where = \"embeddings\" if row == 0 else f\"after layer {row}\"",
            "    print(where, [(show(i), round(float(p.exp()), 4)) for p, i in zip(logp, idx)])"]


@_writes("attention-ablation", "attention weights against knocking each out")
def _attention_ablation(registry: Registry, r: AttentionAblationRequest) -> list[str]:
    keys = "ids.shape[1]" if _is_mlm(registry, r.model) else "position + 1"
    return [*_header(registry, r.model), *_tokens(registry, r.model), f"ids = encode({r.text!r})",
            *_position(registry, r.model, r.position), f"layer, head = {r.layer}, {r.head}",
            "name = f\"blocks.{layer}.attn.weights\"",
            "weights = attnlab.record(model, ids, names=[name])[name][0, head, position]  # (seq,)",
            "with torch.no_grad():", f"    clean = {_logp()}", _target(r.target), "effects = []",
            f"for j in range({keys}):  # knock out the weight on token j alone, keep the others",
            "    def knock(w, name, j=j):", "        w = w.clone()", "        w[:, head, position, j] = 0",
            "        return w", "    with attnlab.intervene(model, {name: knock}), torch.no_grad():",
            f"        effects.append(float(clean[target] - {_logp()}[target]))",
            "print([round(float(w), 4) for w in weights])  # attention weight on each token",
            "print([round(e, 4) for e in effects])  # drop in log P(target) when that weight is 0"]


@_writes("flow", "each head's share at one token")
def _flow(registry: Registry, r: FlowRequest) -> list[str]:
    token = "ids.shape[1] - 1  # the last token" if r.token is None else str(r.token)
    return [*_header(registry, r.model), *_tokens(registry, r.model), f"ids = encode({r.text!r})",
            f"layer, token = {r.layer}, {token}", "names = [f\"blocks.{layer}.attn.weights\", "
            "f\"blocks.{layer}.attn.head_out\"]", "rec = attnlab.record(model, ids, names=names)",
            "weights = rec[names[0]][0, :, token]  # (heads, seq): where each head looks from this token",
            "shares = rec[names[1]][0, :, token]  # (heads, d_model): each head's sum w.V through its slice of W_O",
            "print(weights.round(decimals=4))",
            "print(shares.norm(dim=-1).round(decimals=4))  # the length of each head's share"]


def _matrix(name: str, rows: list[list[float]], what: str) -> list[str]:
    """A matrix as Python, one row a line, each row named by the toy's dimension it reads."""
    from attnlab.explorer.views.experiments.toy.compute import DIMS

    return [f"{name} = torch.tensor([  # {what}",
            *[f"    {row!r},  # {dim}" for row, dim in zip(rows, DIMS, strict=False)],
            "], dtype=torch.float64)"]


@_writes("toy", "the toy's scores and softmax")
def _toy(registry: Registry, r: ToyRequest) -> list[str]:
    return ["import math", "", "import torch", "",
            "# the hand-set toy: 8 named dimensions per word",
            "from attnlab.explorer.views.experiments.toy import compute as toy", "",
            *_matrix("w_q", r.w_q, "W_Q: 8 x 4, as edited on the page"), *_matrix("w_k", r.w_k, "W_K"),
            f"ids = toy.tokenizer().encode({r.text!r}, add_special_tokens=False)",
            "x = toy.embedding_table().double()[ids]  # (words, 8) each word's named values",
            "q, k = x @ w_q, x @ w_k  # (words, 4) each",
            "scores = q @ k.T / math.sqrt(q.shape[-1])  # (words, words) raw scores",
            "weights = scores.softmax(-1)  # each row sums to 1: the attention weights",
            f"print(scores[{r.query}].round(decimals=4))  # the query word's row",
            f"print(weights[{r.query}].round(decimals=4))"]


@_writes("neighbours", "nearest tokens in the embedding table")
def _neighbours(registry: Registry, r: NeighboursRequest) -> list[str]:
    from attnlab.explorer.views.experiments.meanings.compute import word_start

    word = word_start(registry.get(r.model), r.text)
    note = "  # with its leading space: the word, not a piece" if word != r.text else ""
    first = "tok.encode(word, add_special_tokens=False)[0]" if registry.get(r.model).tokenizer is not None else \
        "encode(word)[0, 0]"
    return [*_header(registry, r.model, ["import torch.nn.functional as F"]), *_tokens(registry, r.model),
            f"word = {word!r}{note}", f"query = int({first})  # its first token",
            "with torch.no_grad():  # every row of the input embedding table", "    table = model.tokens("
            "torch.arange(model.config.vocab_size)).float()  # (vocab, d_model)",
            "cos = F.cosine_similarity(table[query][None], table, dim=-1)  # (vocab,)",
            "skip = (table.abs().sum(-1) == 0)  # unused rows", "skip[query] = True",
            *(["skip[list(tok.special_ids)] = True"] if registry.get(r.model).tokenizer is not None else []),
            f"nearest = cos.masked_fill(skip, float(\"-inf\")).topk({r.k}).indices",
            "print([(show(i), round(float(cos[i]), 4)) for i in nearest])"]


@_writes("sentences", "cosines of sentence vectors")
def _sentences(registry: Registry, r: SentencesRequest) -> list[str]:
    from attnlab.explorer.views.experiments.meanings.compute import EXAMPLE_SENTENCES

    sentences = list(EXAMPLE_SENTENCES) if r.sentences is None else r.sentences
    return [*_header(registry, r.model, ["import torch.nn.functional as F"]), *_tokens(registry, r.model),
            f"sentences = {sentences!r}", "", "def vector(text):",
            "    final = attnlab.record(model, encode(text), names=[\"final\"])[\"final\"][0]  # (seq, d_model)",
            "    return F.normalize(final.float().mean(0), dim=-1)  # mean over tokens, unit length", "",
            "vectors = torch.stack([vector(s) for s in sentences])",
            "cosine = vectors @ vectors.T  # (n, n)", "print(cosine.round(decimals=4))"]


@_writes("steer", "steering")
def _steer(registry: Registry, r: SteerRequest) -> list[str]:
    shown_as = "embeddings" if r.layer == 0 else f"after layer {r.layer}"
    return [*_header(registry, r.model), *_tokens(registry, r.model),
            f"name = {site(r.layer)!r}  # the stream entering block {r.layer}: the page's {shown_as!r}", "",
            "def last_state(text):",
            "    return attnlab.record(model, encode(text), names=[name])[name][0, -1]  # (d_model,)", "",
            f"direction = last_state({r.positive!r}) - last_state({r.negative!r})",
            f"prompt = encode({r.prompt!r})",
            f"plain = model.generate(prompt, max_new_tokens={r.tokens})  # greedy",
            f"with attnlab.intervene(model, attnlab.steer(model, name, direction, alpha={r.alpha!r})):",
            f"    steered = model.generate(prompt, max_new_tokens={r.tokens})",
            "    with torch.no_grad():",
            "        next_steered = model(prompt).logits[0, -1].softmax(-1)  # the next token, steered",
            "print([(show(i), round(float(p), 4)) for p, i in zip(*next_steered.topk(5))])",
            "print(repr(''.join(show(i) for i in plain.tokens[0])))",
            "print(repr(''.join(show(i) for i in steered.tokens[0])))"]


@_writes("components", "patching by component")
def _components(registry: Registry, r: ComponentRequest) -> list[str]:
    mlm = _is_mlm(registry, r.model)
    lines = [*_header(registry, r.model), *_tokens(registry, r.model), f"clean_ids = encode({r.clean!r})",
             *_position(registry, r.model, r.position, "clean_ids")]
    if r.corrupted is not None:
        lines += [f"corrupted_ids = encode({r.corrupted!r})  # the same token count",
                  *(["corrupted_ids[0, position] = tok.mask_id"] if mlm else [])]
    lines += ["with torch.no_grad():", f"    clean = {_logp('clean_ids')}",
              *([f"    corrupted = {_logp('corrupted_ids')}"] if r.corrupted is not None else []),
              _target(r.target).replace("target =", "answer =", 1)]
    if r.contrast is not None:
        lines.append(f"contrast = {r.contrast}  # the token compared with (its id)")
    elif r.corrupted is not None:
        lines += ["contrast = int(corrupted.argmax())  # the corrupted sentence's answer, else the runner-up",
                  "contrast = contrast if contrast != answer else int(clean.topk(2).indices[1])"]
    else:
        lines.append("contrast = int(clean.topk(2).indices[1])  # the runner-up")
    call = "attnlab.attribution_patch" if r.method == "attribution" else "attnlab.exact_patch"
    grids = list(dict.fromkeys(r.grids))
    if r.mode == "resample":  # the corrupted sentence's values copied into the clean run
        lines += ["# each component of the clean run replaced by the corrupted run's (names swapped)",
                  f"effects = {call}(model, corrupted_ids, clean_ids, answer, contrast=contrast, "
                  f"position=position, grids={grids!r})"]
    else:
        fill = "torch.zeros_like(v)" if r.mode == "zero" else "v.mean(dim=1, keepdim=True).expand_as(v)"
        extra = ", corrupted=run" if r.method == "exact" else ""
        lines += ["from attnlab.interventions.attribution import site_names",
                  "from attnlab.interventions.readouts import CleanRun, clean_run",
                  "", f"names = site_names(model, {grids!r})  # each head's z, each MLP's hidden activations",
                  "run = clean_run(model, clean_ids, position, names=names + [\"blocks.*.resid_pre\"])",
                  f"source = {{n: {fill} for n, v in ((n, run.recorded[n]) for n in names)}}  # {r.mode}",
                  f"effects = {call}(model, clean_ids, clean_ids, answer, contrast=contrast, position=position, "
                  f"grids={grids!r}, clean=CleanRun(run.logprobs, source){extra})"]
    return lines + ["# the page shows each component's contribution: clean minus replaced, the change turned",
                    "contributions = {grid: -cells for grid, cells in effects.items()}  # positive: toward the answer",
                    "for grid, cells in contributions.items():  # in logit(answer) - logit(contrast)",
                    "    print(grid, cells.round(decimals=3))  # attn, mlp: (layers, positions); head: (layers, "
                    "heads)"]


@_writes("logit-attribution", "direct logit attribution")
def _logit_attribution(registry: Registry, r: LogitAttributionRequest) -> list[str]:
    contrast = ("contrast = int(clean.topk(2).indices[1])  # the runner-up" if r.contrast is None else
                f"contrast = {r.contrast}  # the token compared with (its id)")
    return [*_header(registry, r.model), *_tokens(registry, r.model), f"ids = encode({r.text!r})",
            *_position(registry, r.model, r.position), "with torch.no_grad():", f"    clean = {_logp()}",
            _target(r.target).replace("target =", "answer =", 1), contrast,
            "# each head's and MLP's direct share of logit(answer) - logit(contrast), through the final norm",
            "dla = attnlab.direct_logit_attribution(model, ids, answer, contrast=contrast, position=position)",
            "print(dla[\"heads\"])  # (layers, heads)", "print(dla[\"mlp\"])  # (layers,)",
            "print(float(dla[\"total\"]), float(dla[\"logit_diff\"]))  # the parts' sum, the model's own"]




def snippet(registry: Registry, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """The Python for the request `body` sent to `path`: {"code", "view"}. The body goes through the route's
    own schema (pydantic's ValidationError: the server answers 422 naming the field)."""
    if path not in SNIPPETS:
        raise InputError(f"no code is written for {shown(path)}; allowed paths: {', '.join(SNIPPETS)}")
    schema, write, view = SNIPPETS[path]
    try:
        request = schema.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "body"
        raise OutOfRange(f"body of {path}: {where}: {first.get('msg', 'invalid')}") from None
    lines = write(registry, request)
    return {"path": path, "view": view, "code": "\n".join(lines) + "\n"}
