"""Cancelling a streamed job while it runs, the way the page does: the request runs in a thread, the work it
calls is held at a chosen point until the job's cancel flag is set, and the cancel request arrives meanwhile.
Shared by the route tests of every cancellable view, so that each states only where its work is held."""

from __future__ import annotations

import threading

WAIT_STEPS, STEP_S = 3000, 0.01  # at most 30 s of waiting at either end


def hold_until_cancelled(cancelled, ran: dict) -> None:
    """Called from inside the work: mark `ran["started"]`, then wait until `cancelled()` (the cancel request
    sets the job's flag)."""
    ran["started"] = True
    for _ in range(WAIT_STEPS):
        if cancelled():
            break
        threading.Event().wait(STEP_S)


def post_then_cancel(client, path: str, body: dict, ran: dict):
    """POST body to path in a thread; once the work has started (see hold_until_cancelled) cancel body["job"].
    Returns (the cancel route's JSON answer, the streamed response)."""
    out = {}
    worker = threading.Thread(target=lambda: out.update(r=client.post(path, json=body)))
    worker.start()
    for _ in range(WAIT_STEPS):
        if ran.get("started"):
            break
        threading.Event().wait(STEP_S)
    answer = client.post("/api/experiments/cancel", json={"job": body["job"]}).json()
    worker.join(60)
    return answer, out["r"]
