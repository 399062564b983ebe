"""Estimating images and documents as images, never as base64 text.

Anthropic's rule: an image costs ``ceil(width * height / 750)`` tokens after it has been scaled
down (aspect ratio kept) so that its long edge is at most 1,568 pixels and its area at most about
1.15 megapixels — so no image costs more than ~1,600 tokens. Where the size cannot be read (a
URL, an unknown format, a truncated header, a side longer than the API accepts) we assume the
most an image can cost, `DEFAULT_IMAGE_TOKENS`, which errs high as the estimate should. Only the
first bytes of the base64 are decoded. A PDF document is estimated per page (each page is sent
as an image as well as its text); pages are counted by pypdf (the optional ``pdf`` extra) and,
without it, by the page objects the file shows, unless they are hidden in compressed object
streams: a PDF that cannot be counted is estimated at the most pages a request may carry.
"""

from __future__ import annotations

import base64
import binascii
import math
import re

MAX_LONG_EDGE = 1568
MAX_PIXELS = 1_150_000
PIXELS_PER_TOKEN = 750
#: An image whose size we cannot read: the most any image costs after Anthropic's downscaling.
DEFAULT_IMAGE_TOKENS = 1600
#: Header bytes decoded to find the size (JPEG frames can start a little way in).
_HEADER_B64_CHARS = 64 * 1024
#: The API refuses an image with a side longer than this: its size says nothing real.
MAX_SIDE = 8000
#: The most pages a PDF in one request may have (Anthropic's limit): a PDF whose pages cannot be
#: counted is estimated at this, erring high.
MAX_PDF_PAGES = 100


def image_tokens_for_size(width: int, height: int) -> int:
    """Tokens for an image of the given pixel size, after Anthropic's downscaling.

    >>> image_tokens_for_size(1000, 1000)
    1334
    >>> image_tokens_for_size(200, 200)
    54
    >>> image_tokens_for_size(1, 4_294_967_295) == DEFAULT_IMAGE_TOKENS  # refused by the API
    True
    """
    if not (0 < width <= MAX_SIDE and 0 < height <= MAX_SIDE):
        return DEFAULT_IMAGE_TOKENS
    scale = min(1.0, MAX_LONG_EDGE / max(width, height), math.sqrt(MAX_PIXELS / (width * height)))
    w, h = max(1, int(width * scale)), max(1, int(height * scale))  # a side is never 0 pixels
    return max(1, math.ceil(w * h / PIXELS_PER_TOKEN))


def image_tokens_from_base64(data: str) -> int:
    """Tokens for a base64 image, from the size in its header (PNG, JPEG, GIF, WebP)."""
    size = image_size(_decode_head(data))
    return image_tokens_for_size(*size) if size else DEFAULT_IMAGE_TOKENS


def image_tokens_from_data_url(url: str) -> int:
    """Tokens for an OpenAI ``image_url``: a data: URL is read, a remote URL is the default."""
    if url.startswith("data:") and "," in url:
        return image_tokens_from_base64(url.split(",", 1)[1])
    return DEFAULT_IMAGE_TOKENS


def pdf_tokens_from_base64(data: str) -> int:
    """A PDF costs one image per page; pages are counted from the decoded file."""
    try:
        pdf = base64.b64decode(data, validate=False)
    except (binascii.Error, ValueError):
        return MAX_PDF_PAGES * DEFAULT_IMAGE_TOKENS
    return pdf_pages(pdf) * DEFAULT_IMAGE_TOKENS


def pdf_pages(pdf: bytes) -> int:
    """The page count of a PDF file; `MAX_PDF_PAGES` when it cannot be told."""
    try:
        import pypdf
    except ImportError:
        return _pages_without_reader(pdf)
    import io
    import logging

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # its warnings are not ours to print
    try:
        pages = len(pypdf.PdfReader(io.BytesIO(pdf), strict=False).pages)
    except Exception:  # a damaged or encrypted file: pypdf raises many kinds
        return MAX_PDF_PAGES
    return pages if pages > 0 else MAX_PDF_PAGES


def _pages_without_reader(pdf: bytes) -> int:
    """Page objects written in the clear; in compressed object streams (PDF 1.5+) they cannot
    be seen, so such a file counts as the most pages allowed."""
    if not pdf.startswith(b"%PDF") or b"/ObjStm" in pdf:
        return MAX_PDF_PAGES
    pages = len(re.findall(rb"/Type\s*/Page(?!s)", pdf))
    return pages if pages > 0 else MAX_PDF_PAGES


def _decode_head(data: str) -> bytes:
    head = data[:_HEADER_B64_CHARS]
    head = head[: len(head) - len(head) % 4]
    try:
        return base64.b64decode(head, validate=False)
    except (binascii.Error, ValueError):
        return b""


def image_size(head: bytes) -> tuple[int, int] | None:
    """(width, height) read from the first bytes of a PNG, GIF, WebP or JPEG file."""
    if head[:8] == b"\x89PNG\r\n\x1a\n" and len(head) >= 24:
        return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
    if head[:6] in (b"GIF87a", b"GIF89a") and len(head) >= 10:
        return int.from_bytes(head[6:8], "little"), int.from_bytes(head[8:10], "little")
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return _webp_size(head)
    if head[:2] == b"\xff\xd8":
        return _jpeg_size(head)
    return None


def _webp_size(head: bytes) -> tuple[int, int] | None:
    chunk = head[12:16]
    if chunk == b"VP8X" and len(head) >= 30:
        return 1 + int.from_bytes(head[24:27], "little"), 1 + int.from_bytes(head[27:30], "little")
    if chunk == b"VP8 " and len(head) >= 30:
        return (int.from_bytes(head[26:28], "little") & 0x3FFF, int.from_bytes(head[28:30], "little") & 0x3FFF)
    if chunk == b"VP8L" and len(head) >= 25:
        bits = int.from_bytes(head[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    return None


_JPEG_FRAME_MARKERS = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}


def _jpeg_size(head: bytes) -> tuple[int, int] | None:
    i = 2
    while i + 9 < len(head):
        if head[i] != 0xFF:
            return None
        marker = head[i + 1]
        if marker in _JPEG_FRAME_MARKERS:
            return int.from_bytes(head[i + 7 : i + 9], "big"), int.from_bytes(head[i + 5 : i + 7], "big")
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        i += 2 + int.from_bytes(head[i + 2 : i + 4], "big")
    return None
