"""Planning what to send: the three stages of DESIGN §4, cache-safe by construction.

The plan for a history is computed by walking it forward, request by request (a request is made
before every assistant message, and one more at the end). Two numbers only ever grow along the
walk: how many batches of old tool results are cleared, and where the kept history starts. So as
a conversation grows, each request's cleared set contains the previous one's and the kept start
never moves back — the provider's prefix cache keeps working — and the plan is still a pure
function of the history: fitting the same history twice gives the same plan.

Stages, each tried only when the one before was not enough:

1. **clear** — replace the oldest tool results by a constant note, in batches of `batch_size`
   counted from the oldest candidate. The newest results that fit together in
   `protect_share` of the budget stay whole (always at least one); results of at most
   `min_clear_tokens` are never cleared. Once it has to clear, it clears whole batches down to
   `lowwater` of the budget (0.55 by default), so the next several requests need no clearing
   and reuse the prompt cache; `lowwater=None` is DESIGN §4's strict rule (just under the budget).
2. **turns** — keep the first message (with a note), and the newest whole user turns.
3. **rounds** — inside the newest turn: the first message, the note, the turn's own opening
   message, and the newest whole tool rounds.

A round is not dropped for a protected result in it: before a cut leaves a protected result out,
the protected results are cleared instead, oldest first (newest last), as any cleared result
(they join the cleared batches, so the cleared set still only grows); never the results after the
newest assistant message, which the next reply reads. Only when even that does not fit is the
round dropped; the smallest request still keeps the newest round.

The kept start moves in steps of at least `drop_step` of the budget, so after a cut the
request is well under the budget and the next requests reuse the cache.

One file per part: `history.py` (the messages walked, as prefix sums), `clearing.py` (stage 1),
`trimming.py` (stages 2 and 3), `note.py` (what the trimmed-history note costs), `fitter.py`
(the walk that keeps the ratchets, and the plan) and `sharing.py` (what two requests of a walk
have in common: the prompt cache's view, for replay).

>>> from ctxfit_cli.core.model import Message, Part, PartKind, Role
>>> user = Message(Role.USER, (Part(PartKind.TEXT, "hi"),), b'{"role":"user","content":"hi"}')
>>> plan_fit([user], budget=100).stage
'none'
"""

from ..options import DEFAULT_LOWWATER, DEFAULT_WINDOW, FitOptions
from ..plan import Plan
from .clearing import GROWTH_WINDOW
from .fitter import Fitter, plan_fit
from .history import OpenCalls
from .note import TRIM_NOTE_PART, has_trim_note, note_cost, noted_cost
from .sharing import Shape, overlapping_ranges

__all__ = [
    "DEFAULT_LOWWATER",
    "DEFAULT_WINDOW",
    "GROWTH_WINDOW",
    "FitOptions",
    "Fitter",
    "OpenCalls",
    "Plan",
    "Shape",
    "TRIM_NOTE_PART",
    "has_trim_note",
    "note_cost",
    "noted_cost",
    "overlapping_ranges",
    "plan_fit",
]
