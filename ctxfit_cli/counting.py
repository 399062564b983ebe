"""The library's `count`: tokens of a text, or of messages as a request sends them, as the
provider reported them where it did (DESIGN §11)."""

from __future__ import annotations

from typing import Any

from .core.costs import total_tokens
from .core.model import Dialect, Role
from .core.reported import reported_prompt
from .counters.seed import SEED, Counter
from .history import FALLBACK_DIALECT, Fixed, messages_of
from .sdk import as_request_dict, plain_json


def count(
    messages_or_text: Any,
    *,
    counter: Counter | str = SEED,
    system: Any = None,
    tools: Any = None,
    dialect: Dialect | None = None,
    usage: Any = None,
) -> int:
    """Estimated tokens of a text, or of messages with the system prompt and tools they carry.

    `counter` is a `Counter` (e.g. `ctxfit_cli.counters.tokenizers.get_tokenizer("cl100k")`) or
    the name of a calibrated profile ("seed", "cl100k", "o200k", "tekken", "qwen", "safe") or
    a profile .json file. `usage`: what the provider reported for the request that got the last
    reply in the messages (as `Session.record` takes it); the count is then that size plus the
    estimate of the messages from that reply on (DESIGN §11).

    >>> count("Привет, мир"), count([{"role": "user", "content": "Привет, мир"}])
    (6, 10)
    >>> count([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}],
    ...       usage={"input_tokens": 14})
    20
    """
    counter = as_counter(counter)
    if isinstance(messages_or_text, str):
        return counter.tokens(counter.measure(messages_or_text))
    fixed = Fixed(system, tools)
    requests = [as_request_dict(item, f"messages[{i}]") for i, item in enumerate(messages_or_text)]
    dialect = dialect or next((r.dialect for r in requests if r.dialect), None) or fixed.dialect or FALLBACK_DIALECT
    messages, _ = messages_of(requests, dialect)
    system_messages, tools_message = fixed.messages((), dialect)
    sent = [*system_messages, *((tools_message,) if tools_message else ()), *messages]
    if usage is None:
        return total_tokens(sent, counter)
    reported = reported_prompt(usage if isinstance(usage, dict) else plain_json(usage))
    reply = next((i for i in range(len(sent) - 1, -1, -1) if sent[i].role is Role.ASSISTANT), None)
    if reported is None or reply is None:
        raise ValueError(
            "usage= is the size the provider reported for the request that got the last reply: "
            + ("it reports no prompt size" if reported is None else "these messages hold no reply")
        )
    return reported.prompt + total_tokens(sent[reply:], counter)


def as_counter(counter: Counter | str) -> Counter:
    """A counter, or the one a profile name (or "seed") names."""
    if not isinstance(counter, str):
        return counter
    if counter == "seed":
        return SEED
    from .counters.profiles import load_profile

    return load_profile(counter)
