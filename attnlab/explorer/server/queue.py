"""HTTP route of the heavy-job queue (explorer/server/classroom.py, held by the runner): what the page shows while a
sweep or a stream waits its turn. It computes nothing, so it takes no slot."""

from __future__ import annotations

from fastapi import APIRouter, Request

from attnlab.explorer.server.runner import runner

router = APIRouter()


@router.get("/api/queue", summary="the heavy-job queue: jobs running and waiting, and this client's places")
async def queue_status(request: Request) -> dict:
    slots = runner(request)
    return slots.queue().status(slots.client(request))
