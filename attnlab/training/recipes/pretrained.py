"""init_from=NAME|PATH: a recipe's model starts from a pretrained model that attnlab loads, with its tokenizer.

Why: fine-tuning is training that starts somewhere. Any model attnlab.load reads (a shipped checkpoint, an
installed package such as smollm2 or minilm, a Hugging Face directory, a GGUF file, a run folder) is the start;
the recipe keeps its data, loss and evaluation and encodes the user's text with the model's own tokenizer (a
tokenizer trained afresh would give the loaded embeddings ids they never saw).

What happens to the loaded model, in order, each said in the run's opening summary (Start.lines):
- a kept-quantized model (SmolLM2's GGUF keeps Q4_1 / Q8_0 blocks) is expanded to float32: its matrices are
  integer codes, which no gradient can move, so training needs the float weights they stand for;
- the keys that set a model's shape (d_model=, n_layers=, ...) come from the loaded model: one given with another
  value is refused rather than silently ignored;
- the head the recipe needs is added when the model has none (MiniLM is an encoder without an LM head: BERT's
  head goes on top, tied to the loaded word embeddings, its transform and bias new); a model that already has
  it keeps it ("none: the loaded LM head continues");
- freeze=k keeps the embeddings and the first k blocks as loaded (no gradient, no optimizer state): the lower
  layers hold the general features, and a short run on a small corpus moves only the top ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from attnlab.build import build_model
from attnlab.errors import ConfigError
from attnlab.training.recipes.base import phase

# recipe keys that set the model's shape or build: with init_from= they are the loaded model's
SHAPE_KEYS = ("vocab_size", "d_model", "n_heads", "d_ff", "n_layers", "position", "activation", "norm",
              "norm_placement", "dropout", "scaled_residual_init", "bias")
# the parameters before the first block: token, position and segment embeddings and the norm over them
EMBEDDING_PREFIXES = ("tokens.", "positions.", "token_types.", "embed_norm.")


@dataclass
class Start:
    """What a fine-tuning run started from, for the opening summary and result.json."""

    spec: str  # init_from= as given
    model: nn.Module
    tokenizer: Any
    loaded_params: int  # parameters of the model as loaded (after expansion, before a head is added)
    new: list[str] = field(default_factory=list)  # names of the tensors the loaded model did not have
    expanded: str | None = None  # why and what was expanded to float32, or None
    freeze: int = 0
    head_note: str = ""  # what the recipe did to a fresh head beyond initialising it (said on the "new" line)

    def lines(self) -> list[str]:
        """The opening summary's lines: what was loaded, what is new, what was expanded, what is frozen."""
        model = self.model
        params = dict(model.named_parameters())
        new_params = sum(params[n].numel() for n in self.new if n in params)
        vocab = getattr(self.tokenizer, "vocab_size", None)
        lines = [f"  start   init_from={self.spec}: {self.loaded_params:,} parameters loaded, with its tokenizer"
                 f"{f' ({vocab:,} tokens)' if vocab else ''}"]
        if self.new:
            lines.append(f"  new     a fresh {model.config.head.upper()} head: {', '.join(self.new)} "
                         f"({new_params:,} parameters, the rest as loaded){self.head_note}")
        else:
            lines.append(f"  new     none: the loaded {model.config.head.upper()} head continues")
        if self.expanded:
            lines.append(f"  expand  {self.expanded}")
        trained = sum(p.numel() for p in model.parameters() if p.requires_grad)
        total = sum(p.numel() for p in model.parameters())
        if self.freeze:
            tied = ""
            if getattr(model.config, "tie_embeddings", False):  # BERT's head has more than the tied projection
                own = any(n.startswith("lm_head.") for n in params)
                tied = " (and the LM head's projection, tied to them)" if own else " (and the LM head tied to them)"
            blocks = "block 0" if self.freeze == 1 else f"blocks 0-{self.freeze - 1}"
            lines.append(f"  freeze  the embeddings{tied} and {blocks} of {model.config.n_layers} stay as loaded "
                         f"(freeze={self.freeze}): {trained:,} of {total:,} parameters train")
        else:
            lines.append(f"  freeze  none (freeze=0): all {total:,} parameters train; freeze=k keeps the embeddings "
                         f"and the first k of {model.config.n_layers} blocks as loaded")
        return lines

    def record(self) -> dict[str, Any]:
        """result.json's account of the start."""
        return {"init_from": self.spec, "loaded_parameters": self.loaded_params, "new_tensors": self.new,
                "expanded": self.expanded, "freeze": self.freeze,
                "trained_parameters": sum(p.numel() for p in self.model.parameters() if p.requires_grad)}


def load_start(p: dict[str, Any], recipe: str, topology: str) -> Start:
    """The model and tokenizer init_from= names, ready to fine-tune for an LM objective on `topology`
    ("decoder": next token, "encoder": masked tokens). Bad keys and unfit models are refused in one line."""
    from attnlab.loading import load

    spec = str(p["init_from"])
    with phase(p, f"{recipe}: loading {spec} (init_from=)"):
        model, tokenizer = load(spec)
    config = getattr(model, "config", None)
    if getattr(config, "topology", None) != topology:
        what = getattr(config, "topology", type(model).__name__)
        wanted = "a decoder (causal LM)" if topology == "decoder" else "an encoder (masked LM)"
        raise ConfigError(f"init_from={spec} is {'an' if what[0] in 'aeiou' else 'a'} {what} model; {recipe} "
                          f"fine-tunes {wanted}")
    tokenizer = p.get("tokenizer") or tokenizer  # a resumed run continues with the tokenizer it saved
    if tokenizer is None:
        raise ConfigError(f"init_from={spec} has no tokenizer: the data is encoded with the model's own, so give a "
                          "checkpoint saved with one (tokenizer.json beside config.json)")
    expanded = None
    with phase(p, f"{recipe}: readying {spec}'s weights for training (float32 where they are kept quantized)"):
        model, expanded = expand_quantized(model, spec)
    check_shape_keys(p, model.config, spec)
    if p["seq_len"] > model.config.max_len:
        raise ConfigError(f"seq_len={p['seq_len']}: init_from={spec} has positions for {model.config.max_len} "
                          f"tokens; allowed 2..{model.config.max_len}")
    loaded_params = sum(t.numel() for t in model.parameters())
    model, new = with_lm_head(model)
    freeze(model, p["freeze"])
    return Start(spec, model.train(), tokenizer, loaded_params, new, expanded, p["freeze"])


def expand_quantized(model: nn.Module, spec: str) -> tuple[nn.Module, str | None]:
    """A float32 copy of a model whose matrices are kept quantized (and why), or the model itself (None)."""
    from attnlab.quantization import float_state_dict, formats_of
    from attnlab.storage import materialize

    formats = formats_of(model)
    if not formats:
        return model, None
    before = held_bytes(model)
    config = model.config.replace(extra={k: v for k, v in model.config.extra.items() if k != "quantization"})
    tensors = float_state_dict(model)
    del model
    expanded = materialize(config, tensors, f"init_from={spec}")
    kinds = ", ".join(sorted({f.upper() for f in formats.values()}))
    return expanded, (f"{len(formats)} quantized matrices ({kinds}) expanded to float32 for training, since a "
                      f"gradient cannot move integer codes ({before / 1e6:,.0f} MB -> {held_bytes(expanded) / 1e6:,.0f}"
                      " MB of weights)")


def held_bytes(model: nn.Module) -> int:
    """Bytes of the model's tensors, a tied one (the embedding that is also the LM head) counted once."""
    tensors = {t.data_ptr(): t.numel() * t.element_size() for t in model.state_dict().values() if t.numel()}
    return sum(tensors.values())


def check_shape_keys(p: dict[str, Any], config, spec: str) -> None:
    """Refuse a shape key given (p["given"]: the keys the person set) with a value other than the loaded model's."""
    given = p.get("given") or ()
    for key in SHAPE_KEYS:
        if key in given and key in p and hasattr(config, key) and p[key] != getattr(config, key):
            raise ConfigError(f"{key}={p[key]!r} conflicts with init_from={spec}, whose {key} is "
                              f"{getattr(config, key)!r}: the loaded model sets its own shape; leave {key}= out")


def with_lm_head(model: nn.Module) -> tuple[nn.Module, list[str]]:
    """(the model with an LM head, the names of the tensors that are new). A model with one is returned as it is;
    one without gets a fresh head tied to its word embeddings (an encoder: BERT's head, with its dense + GELU +
    LayerNorm transform and an output bias; a decoder: the plain projection), every loaded tensor copied in."""
    config = model.config
    if config.head == "lm":
        return model, []
    extra = {k: v for k, v in config.extra.items() if k != "hf_architecture"}  # no longer that HF class
    encoder = config.topology == "encoder"
    config = config.replace(head="lm", pooler=False, tie_embeddings=True, lm_head_transform=encoder,
                            lm_head_bias=encoder, extra=extra)
    fresh = build_model(config)
    own = fresh.state_dict(keep_vars=True)
    loaded = model.state_dict()
    with torch.no_grad():
        for name, tensor in loaded.items():
            if name in own:  # a pooler the LM head replaces has no place here
                own[name].copy_(tensor)
    new = [n for n, _ in fresh.named_parameters() if n not in loaded]
    return fresh, new


def freeze(model: nn.Module, k: int) -> None:
    """freeze=k: the embeddings and blocks 0..k-1 keep their loaded values (requires_grad off); 0 freezes nothing."""
    n_layers = model.config.n_layers
    if not 0 <= k <= n_layers:
        raise ConfigError(f"freeze={k}: allowed 0..{n_layers} (0 trains everything; k keeps the embeddings and the "
                          f"first k of the model's {n_layers} blocks as loaded)")
    if not k:
        return
    frozen = tuple(f"blocks.{i}." for i in range(k))
    for name, param in model.named_parameters():
        param.requires_grad_(not name.startswith(EMBEDDING_PREFIXES + frozen))


def refuse_without_start(p: dict[str, Any]) -> None:
    """freeze= only means something for a model that starts from loaded weights."""
    if p.get("freeze"):
        raise ConfigError(f"freeze={p['freeze']} keeps loaded weights as they are, and this run loads none: give "
                          "init_from=NAME|PATH too, or freeze=0")
