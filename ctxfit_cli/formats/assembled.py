"""A conversation an agent's reader rebuilds turn by turn (a user's text, a reply with its calls
and its recorded usage, the calls' results), sent in the dialect of the model it talked to.

For the agents whose logs are neither requests nor one dialect's messages (Qwen Code's Gemini
contents, Goose's and Crush's rows, Amp's threads): their reader says what each turn held, and
this builds the request messages as the model's API takes them —

- **OpenAI Chat Completions**: a reply is `{"role": "assistant", "content", "tool_calls"}` (its
  calls' arguments as JSON text), each result one `{"role": "tool", "tool_call_id"}` message;
- **Anthropic Messages**: a reply is `text` and `tool_use` blocks, its results `tool_result`
  blocks of one user turn (consecutive user turns are one, as the SDKs send them);

then repaired like any other transcript (`core.repair`), each reply's `RecordedCall` kept on the
message it became.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..core.model import Dialect, Message, RecordedCall, Transcript
from ..core.repair import MADE_FROM, repair
from . import anthropic, openai
from .common import Where, dumps, json_text
from .repair_writers import WRITERS

#: A call the model made: (its id, the tool's name, its arguments: an object, or JSON text).
Call = tuple[str, str, object]
#: A call's result: (the call's id, its text, whether it failed).
Result = tuple[str, str, bool]


def dialect_of(model: str, provider: str = "") -> Dialect:
    """Anthropic Messages for a Claude model (or the Anthropic provider), else OpenAI Chat
    Completions, the shape most providers take."""
    return "anthropic" if provider.lower() == "anthropic" or "claude" in model.lower() else "openai"


class Conversation:
    """One conversation's request messages, built a turn at a time."""

    def __init__(self, name: str, format: str, dialect: Dialect) -> None:
        self.name, self.format, self.dialect = name, format, dialect
        self._sent: list[tuple[dict, Where, RecordedCall | None]] = []
        self.models: list[str] = []

    def __len__(self) -> int:
        """How many request messages so far."""
        return len(self._sent)

    def user(self, texts: Iterable[str], where: Where) -> None:
        content = [{"type": "text", "text": text} for text in texts if text.strip()]
        if content:
            self._send({"role": "user", "content": content}, where)

    def assistant(self, texts: Iterable[str], calls: list[Call], where: Where, call: RecordedCall | None) -> None:
        """One reply of the model: its text and its calls, made by the recorded `call`."""
        said = [text for text in texts if text.strip()]
        if call is not None and call.model and call.model not in self.models:
            self.models.append(call.model)
        if not said and not calls:
            return
        if self.dialect == "anthropic":
            content: list = [{"type": "text", "text": text} for text in said]
            content += [{"type": "tool_use", "id": i, "name": n, "input": _object(a)} for i, n, a in calls]
            self._send({"role": "assistant", "content": content}, where, call)
            return
        reply: dict = {"role": "assistant", "content": "\n".join(said) if said else None}
        if calls:
            reply["tool_calls"] = [
                {"id": i, "type": "function", "function": {"name": n, "arguments": _text(a)}} for i, n, a in calls
            ]
        self._send(reply, where, call)

    def results(self, results: list[Result], where: Where) -> None:
        if not results:
            return
        if self.dialect == "anthropic":
            blocks = [
                {"type": "tool_result", "tool_use_id": i, "content": text, **({"is_error": True} if failed else {})}
                for i, text, failed in results
            ]
            self._send({"role": "user", "content": blocks}, where)
            return
        for i, text, _ in results:
            self._send({"role": "tool", "tool_call_id": i, "content": text}, where)

    def _send(self, value: dict, where: Where, call: RecordedCall | None = None) -> None:
        last = self._sent[-1][0] if self._sent else None
        if self.dialect == "anthropic" and last is not None and last["role"] == value["role"] == "user":
            last["content"] = last["content"] + value["content"]  # one user turn, as the SDK sends it
            return
        self._sent.append((value, where, call))

    def transcript(self, line: int, open_end: list[str], given: int = 0) -> Transcript:
        """The transcript of what was built (`line`: where it starts in its input; `given`: how
        many leading messages were given as history, not made by calls)."""
        parse = anthropic.parse_message if self.dialect == "anthropic" else openai.parse_message
        transcript = Transcript(self.name, self.format, self.dialect, (), line=line, open_end=open_end)
        recorded: dict[int, RecordedCall] = {}
        parsed: list[Message] = []
        for value, where, call in self._sent:
            message = parse(value, dumps(value), where)
            if call is not None:
                recorded[id(message)] = call
            parsed.append(message)
        repaired = list(repair(parsed, WRITERS[self.dialect], self.name, transcript.repairs, open_end))
        transcript.messages = tuple(repaired)
        transcript.calls = [
            call._replace(message=index) for index, message in enumerate(repaired) for call in _calls(message, recorded)
        ]
        transcript.given = min(given, len(repaired))
        transcript.named_models = list(self.models)
        return transcript


def _calls(message: Message, recorded: dict[int, RecordedCall]) -> list[RecordedCall]:
    """The calls recorded for a message: its own, or those of the replies repair merged into it."""
    own = recorded.pop(id(message), None)
    if own is not None:
        return [own]
    return [call for part in message.memo.get(MADE_FROM, ()) for call in _calls(part, recorded)]


def _object(arguments: object) -> object:
    """A call's arguments as Anthropic takes them: an object (JSON text parsed, if it is one)."""
    if isinstance(arguments, str):
        import orjson

        try:
            parsed = orjson.loads(arguments)
        except orjson.JSONDecodeError:
            return {"input": arguments}
        return parsed if isinstance(parsed, dict) else {"input": parsed}
    return arguments if isinstance(arguments, dict) else {}


def _text(arguments: object) -> str:
    """A call's arguments as OpenAI takes them: JSON text."""
    return arguments if isinstance(arguments, str) else json_text(arguments if arguments is not None else {})
