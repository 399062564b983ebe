#!/usr/bin/env python3
"""The DESIGN §7 sub-agent scenario: sub-agents that each read 40 long Russian chapters.

Each sub-agent has exactly ONE user message (its instruction: read chapters 1-40 of its own book and
summarise them), then one tool round per chapter — an assistant message with a short text and one
``read_chapter`` call, and a user message with the chapter (~95,000 characters of Russian prose) as
the ``tool_result`` — and a final summary. With the seed rule (Cyrillic 2 characters per token) a
chapter is ~47,500 tokens, so the whole conversation is ~1.9 million tokens: far past a 400,000
budget and a 1,000,000 window, and the old turn-based trimming has nowhere to cut.

    python sample_transcripts/subagents.py --out DIR [--agents 8] [--chapters 40] [--chars 95000]

writes ``DIR/subagent_{i}.anthropic.jsonl`` for i = 1..agents: first line
``{"role": "system", "content": SYSTEM_PROMPT}``, then one message per line. The files are large
(~60 MB for 8 agents) and are not committed; they are generated on demand (about a second) and are
byte-for-byte the same on every run. The system prompt deliberately does not contain the DESIGN §5
agent note, so that tools can show adding it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from random import Random

import orjson

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import textgen as tg  # noqa: E402

SYSTEM_PROMPT = """Ты — суб-агент исследовательской системы. Ведущий агент поручил тебе одну задачу; она \
описана в первом сообщении пользователя. У тебя есть инструмент `read_chapter`, который возвращает полный \
текст главы книги по её номеру.

Правила:
- Читай главы по порядку, каждую полностью, по одной за раз.
- Не пересказывай главу, которую ты не прочитал; не выдумывай содержание.
- Когда все главы прочитаны, ответь одним сообщением: краткое содержание каждой главы (2-3 предложения), \
главные герои и общая сводка по книге.
- Отвечай по-русски."""

#: Tool definition of `read_chapter` (Anthropic form), for building whole requests.
TOOLS = [{
    "name": "read_chapter",
    "description": "Return the full text of one chapter of the assigned book.",
    "input_schema": {"type": "object", "properties": {"chapter": {"type": "integer", "minimum": 1,
                                                                  "description": "Chapter number, starting at 1."}},
                     "required": ["chapter"]},
}]

BOOKS = ["Дорога к морю", "Мельница у реки", "Долгая зима", "Станция Озёрная", "Сад за оградой",
         "Последний паром", "Туман над озером", "Старый дом"]

_B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_REMARKS = ["Читаю главу {k}.", "Перехожу к главе {k}.", "Глава {k}.", "Продолжаю: глава {k}.",
            "Теперь глава {k}.", "Читаю следующую главу ({k})."]


def book_title(agent: int) -> str:
    return BOOKS[(agent - 1) % len(BOOKS)] + ("" if agent <= len(BOOKS) else f", том {(agent - 1) // len(BOOKS) + 1}")


def subagent_messages(agent: int, chapters: int = 40, chapter_chars: int = 95_000) -> list[dict]:
    """One sub-agent's whole conversation as Anthropic Messages dicts (without the system prompt).

    The same arguments always give the same messages; tool ids are unique per agent, and every
    chapter of every agent is a different text (its seed depends on the agent and the chapter).
    """
    r = Random(f"ctxfit-subagent:{agent}")
    title = book_title(agent)
    messages: list[dict] = [{"role": "user", "content": (
        f"Прочитай главы 1–{chapters} книги «{title}» (инструмент read_chapter) и составь сводку: о чём каждая "
        "глава, кто главные герои, как развивается сюжет. Прочитай все главы до конца, ни одну не пропускай — "
        "ведущему агенту нужна полная сводка по всей книге.")}]
    headings = []
    for k in range(1, chapters + 1):
        tid = "toolu_01" + "".join(r.choice(_B62) for _ in range(22))
        text = r.choice(_REMARKS).format(k=k) if k > 1 else f"Начинаю с главы 1 книги «{title}»."
        messages.append({"role": "assistant", "content": [
            {"type": "text", "text": text},
            {"type": "tool_use", "id": tid, "name": "read_chapter", "input": {"chapter": k}}]})
        body = tg.chapter("ru", chapter_chars, seed=f"agent{agent}-chapter{k}", number=k)
        headings.append(body.split("\n", 1)[0])
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid, "content": body}]})
    lines = [f"Сводка по книге «{title}» (главы 1–{chapters})", ""]
    for heading in headings:
        lines.append(f"- {heading}: неторопливые сцены деревенской жизни — письма, дорога на станцию, разговоры "
                     "за столом и на крыльце; напряжение растёт, но тайна письма остаётся нераскрытой.")
    lines += ["", "Главные герои: капитан, Анна, Николай Петрович, Марья Ивановна и дядя Миша. Книга построена как "
              "цепь коротких эпизодов, связанных общим ожиданием; развязка откладывается до последней главы."]
    messages.append({"role": "assistant", "content": [{"type": "text", "text": "\n".join(lines)}]})
    return messages


def write_agent(path: Path, agent: int, chapters: int = 40, chapter_chars: int = 95_000) -> int:
    """Write one sub-agent's JSONL file (system line first); returns the number of bytes."""
    records = [{"role": "system", "content": SYSTEM_PROMPT}, *subagent_messages(agent, chapters, chapter_chars)]
    data = b"".join(orjson.dumps(m) + b"\n" for m in records)
    path.write_bytes(data)
    return len(data)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Write the DESIGN §7 sub-agent transcripts (subagent_{i}.anthropic.jsonl).")
    ap.add_argument("--out", type=Path, required=True, help="output directory")
    ap.add_argument("--agents", type=int, default=8, help="number of sub-agents (default 8)")
    ap.add_argument("--chapters", type=int, default=40, help="chapters per sub-agent (default 40)")
    ap.add_argument("--chars", type=int, default=95_000, help="characters per chapter (default 95,000)")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    total = 0
    for agent in range(1, args.agents + 1):
        total += write_agent(args.out / f"subagent_{agent}.anthropic.jsonl", agent, args.chapters, args.chars)
    print(f"wrote {args.agents} sub-agent transcripts ({total:,} bytes) to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
