"""Turns on a few slots, shared fairly: round robin across addresses, then across the clients of one address.

Why: thirty students share two cores. First come, first served lets one client's twenty parallel requests (or
five sweeps) run before everyone who came after; a limit per client alone does not help when a client has many
ids. So when a slot frees, the next job is the one whose address was served longest ago (among addresses with
fewer jobs running first), then, within that address, whose client was served longest ago, then the oldest of
that client's jobs. A client's own jobs therefore wait behind each other, never in front of other clients', and
another student's job waits for at most one job of every other address. An address is the client's network
address and a client an id the server issued (explorer/server/clients.py).

The runner keeps two: the light slots (every view's answer) and the heavy ones (sweeps, streams), the latter
with at most one job running and MAX_HEAVY_WAITING waiting per client. One per event loop: every method runs on
that loop, so no lock is needed.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from attnlab.errors import AttnlabError
from attnlab.explorer.server.clients import Client

MAX_HEAVY_RUNNING = 1  # heavy jobs one client may have running
MAX_HEAVY_WAITING = 2  # heavy jobs one client may have waiting (a third is refused, 429, with their places)
MAX_LIGHT_WAITING = 32  # light requests one client may have waiting (a browser sends a few at once; a flood more)
MAX_REMEMBERED = 4096  # clients and addresses whose last turn is kept (older ones count as never served)


class QueueFull(AttnlabError):
    """A client asked for more waiting jobs than its queue allows (answered 429)."""


@dataclass(eq=False)
class Ticket:
    """One job's place: waiting until `granted` is done, then running until the queue's `leave`."""

    client: Client
    granted: asyncio.Future = field(repr=False)
    arrival: int = 0


class FairQueue:
    """`slots` slots shared round robin (module docstring). `what` names the jobs in a refusal; `max_running` and
    `max_waiting` bound one client (None: no bound; a client runs more than one only while nobody else waits)."""

    def __init__(self, slots: int, what: str, *, max_running: int | None = None, max_waiting: int | None = None,
                 clock=time.monotonic):
        self.slots, self.what, self.max_running, self.max_waiting = slots, what, max_running, max_waiting
        self.clock = clock
        self.running: list[Ticket] = []
        self.waiting: list[Ticket] = []
        self._served: dict[object, int] = {}  # ("address", a) or client -> the turn it was last served
        self._turns = 0
        self._arrivals = 0
        self.quiet_since: float | None = clock()  # when the queue last became empty (None: busy now)

    # ---------------------------------------------------------------- joining and leaving
    def join(self, client: Client) -> Ticket:
        """A place in the queue, granted at once when a slot is free and it is this client's turn. Raises
        QueueFull when the client already has max_waiting jobs waiting."""
        if self.max_waiting is not None and sum(t.client == client for t in self.waiting) >= self.max_waiting:
            places = self.places(client)
            if places:
                raise QueueFull(f"you already have {len(places)} {self.what} waiting (at places "
                                f"{', '.join(map(str, places))} of {len(self.waiting)} in the queue); allowed "
                                f"{self.max_waiting} at once: wait for them or cancel one")
        self._arrivals += 1
        ticket = Ticket(client, asyncio.get_running_loop().create_future(), self._arrivals)
        self.waiting.append(ticket)
        self.quiet_since = None
        self._grant()
        return ticket

    def leave(self, ticket: Ticket) -> None:
        """The job finished, was cancelled or gave up waiting: its slot (or place) goes to the next."""
        if ticket in self.waiting:
            self.waiting.remove(ticket)
        if ticket in self.running:
            self.running.remove(ticket)
        if not ticket.granted.done():
            ticket.granted.cancel()
        self._grant()
        if not self.running and not self.waiting:
            self.quiet_since = self.clock()

    # ---------------------------------------------------------------- whose turn
    def _running_of(self, client: Client) -> int:
        return sum(t.client == client for t in self.running)

    def _key(self, ticket: Ticket, running: dict, served: dict) -> tuple:
        """The order of turns: the address with fewer jobs running, then served longest ago; within it the
        client with fewer running, then served longest ago; then the oldest job."""
        c = ticket.client
        group = ("address", c.address)
        return (running.get(group, 0), served.get(group, -1), running.get(c, 0), served.get(c, -1),
                ticket.arrival)

    def _counts(self) -> dict:
        running: dict = {}
        for t in self.running:
            for k in (("address", t.client.address), t.client):
                running[k] = running.get(k, 0) + 1
        return running

    def _grant(self) -> None:
        while len(self.running) < self.slots:
            running = self._counts()
            ready = [t for t in self.waiting
                     if self.max_running is None or running.get(t.client, 0) < self.max_running]
            if not ready:
                return
            ticket = min(ready, key=lambda t: self._key(t, running, self._served))
            self.waiting.remove(ticket)
            self.running.append(ticket)
            self._turns += 1
            self._served[("address", ticket.client.address)] = self._served[ticket.client] = self._turns
            if len(self._served) > MAX_REMEMBERED:
                for k in sorted(self._served, key=self._served.get)[: len(self._served) - MAX_REMEMBERED]:
                    del self._served[k]
            ticket.granted.set_result(True)

    def order(self) -> list[Ticket]:
        """The waiting jobs in the order they would start if each ran alone in turn (the page's places)."""
        running, served = self._counts(), dict(self._served)
        left, out, turn = list(self.waiting), [], self._turns
        while left:
            ticket = min(left, key=lambda t: self._key(t, running, served))
            left.remove(ticket)
            out.append(ticket)
            turn += 1
            served[("address", ticket.client.address)] = served[ticket.client] = turn
        return out

    # ---------------------------------------------------------------- what the page and the server read
    def places(self, client: Client) -> list[int]:
        """This client's places in order() (1 = next to start)."""
        return [i + 1 for i, t in enumerate(self.order()) if t.client == client]

    def status(self, client: Client) -> dict:
        """What the page shows: the queue's length, jobs running, and this client's places."""
        return {"running": len(self.running), "slots": self.slots, "waiting": len(self.waiting),
                "mine_running": self._running_of(client) > 0, "mine_waiting": self.places(client)}

    def quiet_for(self) -> float:
        """Seconds since the queue last had a job running or waiting (0 while it has one)."""
        return 0.0 if self.quiet_since is None else self.clock() - self.quiet_since
