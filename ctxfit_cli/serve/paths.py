"""Which API each path the proxy fits speaks (`Proxy.app` routes them; their fitting is
`fitting.py`, `responses.py`, `gemini.py`, `code_assist.py`), and the array each dialect's
conversation is in. Light on purpose: the proxy's own process reads these, the fitting side
is its workers' (`channel.py`)."""

from __future__ import annotations

import re

from ..core.model import Dialect

#: Which API each fitted path speaks.
DIALECTS: dict[str, Dialect] = {"/v1/messages": "anthropic", "/v1/chat/completions": "openai"}
DIALECTS["/v1/responses"] = "responses"  # (serve/responses.py)
#: Codex signed in with ChatGPT posts to its base URL + `/responses` (`ctxfit wrap codex` points
#: it at the proxy's root, and the proxy forwards to the ChatGPT backend's path).
DIALECTS["/responses"] = "responses"
#: Gemini's two methods, for any model: the model is named in the path (serve/gemini.py).
GEMINI_METHODS = ("generateContent", "streamGenerateContent")
GEMINI_ROUTES = tuple(f"/{{version:v1|v1beta|v1alpha}}/models/{{model}}:{method}" for method in GEMINI_METHODS)
DIALECTS.update(dict.fromkeys(GEMINI_ROUTES, "gemini"))
#: Gemini CLI signed in with Google: Gemini inside Google's Code Assist API (serve/code_assist.py),
#: answered with Gemini's errors, fitted by a handling of its own (`HANDLED_AS`).
CODE_ASSIST_PATHS = ("/v1internal:generateContent", "/v1internal:streamGenerateContent")
DIALECTS.update(dict.fromkeys(CODE_ASSIST_PATHS, "gemini"))
#: Paths fitted otherwise than as their dialect's own API: the name of their `dialects.HANDLING`.
CODE_ASSIST = "code-assist"
HANDLED_AS = dict.fromkeys(CODE_ASSIST_PATHS, CODE_ASSIST)
#: A method of Google's API (`…/models/gemini-2.5-pro:countTokens`): only Google's paths hold a colon.
_GOOGLE_METHOD = re.compile(r"/v1(?:beta|alpha)?/[^:]+:[A-Za-z]+")


def dialect_of(path: str) -> Dialect:
    """The API a path speaks, as the errors the proxy answers for it are shaped (Anthropic's
    for a path of no known API).

    >>> dialect_of("/v1/chat/completions"), dialect_of("/v1beta/models/gemini-2.5-pro:countTokens")
    ('openai', 'gemini')
    """
    return DIALECTS.get(path) or ("gemini" if _GOOGLE_METHOD.fullmatch(path) else "anthropic")


#: The array of each dialect's (and handling's) conversation in its body: what `pool.route`
#: looks for (`dialects.HANDLING` reads it the same: a test holds them alike).
ARRAYS = {"anthropic": "messages", "openai": "messages", "responses": "input", "gemini": "contents"}
ARRAYS[CODE_ASSIST] = "contents"
