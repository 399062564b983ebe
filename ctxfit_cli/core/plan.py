"""A plan: what one request sends — the stage reached, the batches cleared, what is dropped.

Plans are plain data, made by `fitting.Fitter` and applied by `payload.build`. `Plan.to_dict`
is the one JSON shape of a plan, whichever command prints it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple


class ResultRef(NamedTuple):
    """One tool result of the history: where it is, what it costs, what clearing it saves.

    (A NamedTuple: the fitter makes one for every tool result it reads.)"""

    # message index in the conversation (system prompt excluded); the name hides `tuple.index`, unused here
    index: int  # type: ignore[assignment]
    part: int  # part index inside that message
    call_id: str
    tool: str
    tokens: int
    saving: int


@dataclass(frozen=True, slots=True)
class Batch:
    number: int  # 1-based, counted from the oldest candidate
    results: tuple[ResultRef, ...]
    freed: int
    tokens_after: int  # request size once this batch and all before it are cleared
    cleared: bool  # part of this plan (False: would come next)


@dataclass(frozen=True)
class Plan:
    """What to send for one request. Apply it with `payload.build_payload`."""

    stage: str  # "none" | "clear" | "turns" | "rounds"
    budget: int
    window: int
    tokens_before: int
    tokens_after: int
    fixed_tokens: int  # system prompt and tool definitions
    batches: tuple[Batch, ...]
    protected: tuple[ResultRef, ...]
    too_small: tuple[ResultRef, ...]
    first: int  # index of the first message (-1 if there is no user message)
    start: int  # first kept index after the head; == messages count when nothing is dropped
    anchor: int | None  # the newest turn's opening message, kept in stage "rounds"
    dropped: tuple[tuple[int, int], ...]  # [from, to) message index ranges left out
    messages: int  # messages in the history
    overrun: bool  # smallest request is over the budget but within the window: sent anyway
    cannot_fit: bool  # smallest request is over the window: nothing can be sent
    #: The provider's reported size the sizes are anchored on (0: all estimated; DESIGN §11).
    confirmed: int = 0
    #: Pinned messages inside `dropped`, sent where they are all the same (DESIGN §14).
    pinned: tuple[int, ...] = ()

    @property
    def estimated(self) -> int:
        """The estimated part of `tokens_after`: what changed since the confirmed request."""
        return self.tokens_after - self.confirmed

    @property
    def cleared(self) -> tuple[ResultRef, ...]:
        return tuple(r for b in self.batches if b.cleared for r in b.results)

    def sent(self) -> list[int]:
        """Indices of the messages this plan sends, in order: all of them, or the head (up
        to the first message), the anchor and the pinned messages left out otherwise, and the
        kept tail."""
        if not self.dropped:
            return list(range(self.messages))
        anchor = [self.anchor] if self.anchor is not None else []
        kept = sorted((*self.pinned, *anchor))
        return [*range(self.first + 1), *kept, *range(self.start, self.messages)]

    @property
    def fits(self) -> bool:
        return self.tokens_after <= self.budget

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of a plan (shared by `plan --json`, `fit --report` and replay)."""

        def ref(r: ResultRef) -> dict[str, Any]:
            return {"index": r.index, "tool": r.tool, "id": r.call_id, "tokens": r.tokens}

        return {
            "stage": self.stage,
            "budget": self.budget,
            "window": self.window,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "fixed_tokens": self.fixed_tokens,
            "confirmed": self.confirmed,
            "estimated": self.estimated,
            "fits": self.fits,
            "overrun": self.overrun,
            "cannot_fit": self.cannot_fit,
            "messages": self.messages,
            "cleared_results": sum(len(b.results) for b in self.batches if b.cleared),
            "batches": [
                {
                    "number": b.number,
                    "cleared": b.cleared,
                    "freed": b.freed,
                    "tokens_after": b.tokens_after,
                    "results": [ref(r) for r in b.results],
                }
                for b in self.batches
            ],
            "protected": [ref(r) for r in self.protected],
            "too_small": [ref(r) for r in self.too_small],
            "kept_start": self.start,
            "anchor": self.anchor,
            "dropped": [{"from": a, "to": b} for a, b in self.dropped],
            **({"pinned": list(self.pinned)} if self.pinned else {}),
        }
