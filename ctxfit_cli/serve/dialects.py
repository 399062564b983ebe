"""Each API the proxy fits, as the functions a fitting worker runs on its bodies (`worker.py`).

A dialect is: the array of the body that holds the conversation (the proxy routes a request to
a worker by its first element, `pool.route`), `parse` (the body read incrementally by a reader
of that array), `conversation_key` (which conversation a parsed request belongs to) and
`fit_body` (the request fitted by the conversation's session). Adding an API is one line here
(and its paths in `fitting.DIALECTS`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from ..core.model import Dialect
from . import fitting, responses
from .body import Layout, Readers
from .conversations import Conversation, conversation_key
from .fitting import Limits, Outcome


class Handling(NamedTuple):
    #: The body's array of messages or items: "messages", "input", ...
    array: str
    parse: Callable[[Readers, bytes], tuple[dict, Layout]]
    conversation_key: Callable[[str, dict], str]
    fit_body: Callable[[bytes, dict, Layout, Dialect, Conversation, Limits], Outcome]


HANDLING: dict[str, Handling] = {
    "anthropic": Handling("messages", fitting.parse, conversation_key, fitting.fit_body),
    "openai": Handling("messages", fitting.parse, conversation_key, fitting.fit_body),
    "responses": Handling(responses.KEY, responses.parse, responses.conversation_key, responses.fit_body),
}
