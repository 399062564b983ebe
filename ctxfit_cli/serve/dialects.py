"""Each API the proxy fits, as the functions a fitting worker runs on its bodies (`worker.py`).

A dialect is: the array of the body that holds the conversation (the proxy routes a request to
a worker by its first element, `pool.route`), `parse` (the body read incrementally by a reader
of that array), `conversation_key` (which conversation a parsed request of which client belongs to) and
`fit_body` (the request fitted by the conversation's session), and `limits` (its budget and
window: from the model the body names, or for Gemini the path). Adding an API is one line here
(and its paths in `paths.DIALECTS`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from ..core.model import Dialect
from . import code_assist, fitting, gemini, responses
from .body import Layout, Readers
from .conversations import Conversation, conversation_key
from .fitting import CODE_ASSIST, Limits, Outcome
from .limits import LimitRule


class Handling(NamedTuple):
    #: The body's array of messages or items: "messages", "input", ...
    array: str
    parse: Callable[[Readers, bytes], tuple[dict, Layout]]
    #: (dialect, request, client: whose it is, `owner.py`) -> the conversation's key
    conversation_key: Callable[[str, dict, str], str]
    fit_body: Callable[[bytes, dict, Layout, Dialect, Conversation, Limits], Outcome]
    #: The request's budget and window from the rule, the request, its dialect and the model
    #: its path names ("" when the body names it).
    limits: Callable[[LimitRule, dict, Dialect, str], Limits]


def _model_in_body(rule: LimitRule, request: dict, dialect: Dialect, _path_model: str) -> Limits:
    return rule.for_request(request, dialect)


def _model_in_path(rule: LimitRule, request: dict, _dialect: Dialect, path_model: str) -> Limits:
    return gemini.limits_for(rule, request, path_model)


HANDLING: dict[str, Handling] = {
    "anthropic": Handling("messages", fitting.parse, conversation_key, fitting.fit_body, _model_in_body),
    "openai": Handling("messages", fitting.parse, conversation_key, fitting.fit_body, _model_in_body),
    "responses": Handling(
        responses.KEY, responses.parse, responses.conversation_key, responses.fit_body, _model_in_body
    ),
    "gemini": Handling(gemini.KEY, gemini.parse, gemini.conversation_key, gemini.fit_body, _model_in_path),
    #: Gemini wrapped in Google's Code Assist API (Gemini CLI signed in with Google).
    CODE_ASSIST: Handling(gemini.KEY, code_assist.parse, gemini.conversation_key, gemini.fit_body, code_assist.limits),
}
