"""Reading Gemini inputs: a generateContent request object (or a list of contents), and JSON
Lines of contents, one per line. Both go through `conversation`, as Gemini CLI logs do.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ..core.model import Message, Role, Transcript
from ..core.repair import repair
from ..errors import BadInput, NoConversation
from . import gemini
from .common import Where
from .gemini_repair import GeminiWriter, merged_turns, without_empty
from .reading import Record

NO_CONTENTS = "has no contents: nothing from the user or the model was found"


def conversation(
    messages: Iterable[Message],
    path: str,
    repairs: list[str],
    open_end: list[str] | None = None,
    *,
    as_sent: bool = False,
) -> Iterator[Message]:
    """Contents as read, made a valid request (lazy): responses keyed as their calls, empty
    contents dropped, every call answered once (`core.repair`, which says in `open_end` why the
    log looks still being written), runs of one role merged. `as_sent`: the contents are a
    request an agent sent, whose user contents in a row the API takes: only model runs merge."""
    writer = GeminiWriter()
    # (no `combined`: Gemini's turns are merged by `merged_turns`, never by the repair)
    fixed = repair(
        writer.watch(without_empty(gemini.paired(messages), path, repairs)),
        writer,  # type: ignore[arg-type]
        path,
        repairs,
        open_end,
    )
    return _require(merged_turns(fixed, path, repairs, users=not as_sent), path)


def _require(messages: Iterable[Message], path: str) -> Iterator[Message]:
    found = False
    for message in messages:
        found = found or message.role in (Role.USER, Role.ASSISTANT)
        yield message
    if not found:
        raise NoConversation(path, None, NO_CONTENTS)


def read_contents(name: str, records: Iterable[Record]) -> Iterator[Transcript]:
    """JSON Lines of contents (format `gemini`): one transcript, streamed."""
    transcript = Transcript(name, "gemini", "gemini", ())
    parsed = (gemini.parse_content(r.value, r.raw, Where(name, r.line)) for r in records)
    transcript.messages = conversation(parsed, name, transcript.repairs)
    yield transcript


def read_request(name: str, record: Record, raw: dict) -> Transcript:
    """One generateContent request (or a bare list of contents); `raw` holds the bytes of each
    field and of each content (`formats._raw_fields`)."""
    where = Where(name, record.line)
    request = record.value if isinstance(record.value, dict) else {gemini.CONTENTS: record.value}
    contents = request[gemini.CONTENTS]
    messages = [
        gemini.parse_content(item, item_raw, where.at(gemini.CONTENTS).at(i))
        for i, (item, item_raw) in enumerate(zip(contents, raw[gemini.CONTENTS]))
    ]
    system_key = next((k for k in gemini.SYSTEM_KEYS if request.get(k) is not None), None)
    system = (
        ()
        if system_key is None
        else (gemini.system_message(request[system_key], raw[system_key], where.at(system_key)),)
    )
    tools = None
    if request.get(gemini.TOOLS) is not None:
        if not isinstance(request[gemini.TOOLS], list):
            raise BadInput(name, record.line, '"tools" must be a list')
        tools = gemini.tools_message(request[gemini.TOOLS], raw[gemini.TOOLS], record.line)
    fitted = (gemini.CONTENTS, gemini.TOOLS, *gemini.SYSTEM_KEYS)
    extra = tuple((k, raw[k]) for k in request if k not in fitted)
    transcript = Transcript(name, "request", "gemini", (), system, tools, extra, record.line)
    transcript.messages = list(conversation(messages, name, transcript.repairs, as_sent=True))
    return transcript
