"""What the explorer keeps between requests, bounded and thread-safe: generation sessions (a KV cache per page
that is stepping through decoding) and a least-recently-used store bounded by bytes (a sentence's recording).

Why: without them a generation step re-runs the whole sequence (SmolLM2: seconds per token on a 2-core CPU), and
changing the layer or head of the Attention tab re-runs the model for numbers it has just computed. Both stores
are shared by the server's worker threads (two model requests run at once), so every read and write of their
dictionaries holds a lock; the work itself (a forward pass) runs outside it. Both are bounded: a few sessions,
each expiring when idle, and a byte budget for recordings; the oldest use goes first.
"""

from __future__ import annotations

import secrets
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

MAX_SESSIONS = 8  # generation sessions kept at once (one per page that is generating)
SESSION_IDLE_SECONDS = 600.0  # a session unused this long is dropped
MAX_ID_CHARS = 64


def model_key(lm) -> tuple:
    """What a cached result depends on besides its input: which model object, and its weights' version (a
    notebook may train a wrapped model between two views; an in-place update bumps every tensor's _version)."""
    model = lm.model
    return lm.id, id(model), sum(_version(p) for p in model.parameters())


def _version(p: torch.Tensor) -> int:
    try:
        return p._version
    except RuntimeError:  # an inference-mode tensor keeps no version counter (and cannot be updated in place)
        return 0


# ------------------------------------------------------------------------------------------ generation
@dataclass
class GenerationSession:
    """One page's decoding state: the tokens whose keys and values sit in `cache` (cache.length == len(seq)).

    `lock` serialises steps of one session (a double click sends two); the store's lock only guards the dict.
    """

    id: str
    key: tuple  # model_key(lm) + the source ids: a request for anything else starts afresh
    model: Any  # weakref.ref to the model: a reloaded model with a recycled id() never matches
    seq: list[int] = field(default_factory=list)
    cache: Any = None  # attnlab.cache.KVCache, allocated on the first step
    encoder_hidden: torch.Tensor | None = None  # (1, src_seq, d_model) encoder-decoders
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    used: float = 0.0


class GenerationSessions:
    """At most `max_sessions` sessions; the least recently used goes first, and any idle for `idle_seconds`.

    A session is named by an opaque random id that the page holds. An unknown, expired or mismatched id (another
    model, another prompt) gets a fresh session with a new id: the step then recomputes from the text, so a
    client never sees an error for a session the server has forgotten.
    """

    def __init__(self, max_sessions: int = MAX_SESSIONS, idle_seconds: float = SESSION_IDLE_SECONDS,
                 clock: Callable[[], float] = time.monotonic):
        self.max_sessions, self.idle_seconds, self.clock = max_sessions, idle_seconds, clock
        self._sessions: OrderedDict[str, GenerationSession] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    def __contains__(self, session_id: str) -> bool:
        with self._lock:
            return session_id in self._sessions

    def _expire(self, now: float) -> None:
        for sid in [s for s, v in self._sessions.items() if now - v.used > self.idle_seconds]:
            del self._sessions[sid]

    def open(self, session_id: str | None, lm, source: list[int]) -> GenerationSession:
        """The session `session_id` when it is still held for this model and source, else a new one."""
        key = (*model_key(lm), tuple(source))
        with self._lock:
            now = self.clock()
            self._expire(now)
            found = self._sessions.get(session_id) if isinstance(session_id, str) else None
            if found is not None and found.key == key and found.model() is lm.model:
                self._sessions.move_to_end(found.id)
                found.used = now
                return found
            if found is not None:  # another model or prompt under this id: forget the old state
                del self._sessions[found.id]
            session = GenerationSession(secrets.token_urlsafe(12), key, weakref.ref(lm.model), used=now)
            self._sessions[session.id] = session
            while len(self._sessions) > self.max_sessions:
                self._sessions.popitem(last=False)
            return session

    def drop(self, session_id: str) -> None:
        with self._lock:
            self._sessions.pop(session_id, None)


# ------------------------------------------------------------------------------------------ recordings
class ByteLRU:
    """Values with a size in bytes, at most `max_bytes` in all; the least recently used go first. A value larger
    than `max_bytes` // 2 is not kept (it would push out everything else for one sentence).

    `get_or_compute` lets one thread compute a missing value while others asking for the same key wait for it
    (the Attention tab asks for a view and for the grid of the same sentence at once)."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self._items: OrderedDict[Any, tuple[Any, int]] = OrderedDict()
        self._pending: dict[Any, threading.Event] = {}
        self._lock = threading.Lock()
        self.bytes = 0
        self.hits = self.misses = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.bytes = 0

    def get(self, key) -> Any | None:
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            self._items.move_to_end(key)
            return item[0]

    def put(self, key, value, nbytes: int) -> None:
        with self._lock:
            if key in self._items:
                self.bytes -= self._items.pop(key)[1]
            if nbytes > self.max_bytes // 2:
                return
            self._items[key] = (value, nbytes)
            self.bytes += nbytes
            while self.bytes > self.max_bytes and self._items:
                _, (_, size) = self._items.popitem(last=False)
                self.bytes -= size

    def get_or_compute(self, key, compute: Callable[[], tuple[Any, int]]) -> Any:
        """The cached value, or compute() -> (value, nbytes) once while other askers of this key wait."""
        while True:
            with self._lock:
                item = self._items.get(key)
                if item is not None:
                    self._items.move_to_end(key)
                    self.hits += 1
                    return item[0]
                waiting = self._pending.get(key)
                if waiting is None:
                    self._pending[key] = threading.Event()
                    self.misses += 1
                    break
            waiting.wait(120)  # the computing thread finished (or failed): look again
        try:
            value, nbytes = compute()
            self.put(key, value, nbytes)
            return value
        finally:
            with self._lock:
                self._pending.pop(key).set()
