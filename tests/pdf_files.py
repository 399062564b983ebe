"""Real PDF files for tests, written byte by byte: one in the classic layout, and one whose page
objects sit in a compressed object stream with a cross-reference stream (PDF 1.5), as most PDF
writers save today."""

from __future__ import annotations

import zlib


def _page(n: int) -> bytes:
    return b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>"


def classic_pdf(pages: int) -> bytes:
    """A PDF 1.4 file with `pages` empty pages, every object in the clear."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>",
               b"<< /Type /Pages /Kids [%s] /Count %d >>" % (
                   b" ".join(b"%d 0 R" % (3 + i) for i in range(pages)), pages)]
    objects += [_page(i) for i in range(pages)]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def object_stream_pdf(pages: int) -> bytes:
    """A PDF 1.5 file with `pages` pages whose catalog, page tree and pages are all compressed in
    one object stream (object 1); object `last` is the cross-reference stream."""
    inner = [b"<< /Type /Catalog /Pages 3 0 R >>",
             b"<< /Type /Pages /Kids [%s] /Count %d >>" % (
                 b" ".join(b"%d 0 R" % (4 + i) for i in range(pages)), pages)]
    inner += [_page(i).replace(b"2 0 R", b"3 0 R") for i in range(pages)]
    numbers = range(2, 2 + len(inner))
    header, bodies, position = [], bytearray(), 0
    for number, body in zip(numbers, inner):
        header.append(b"%d %d" % (number, position))
        bodies += body + b" "
        position = len(bodies)
    head = b" ".join(header) + b" "
    stream = zlib.compress(head + bytes(bodies))
    out = bytearray(b"%PDF-1.5\n")
    objstm_offset = len(out)
    out += (b"1 0 obj\n<< /Type /ObjStm /N %d /First %d /Filter /FlateDecode /Length %d >>\nstream\n"
            % (len(inner), len(head), len(stream)))
    out += stream + b"\nendstream\nendobj\n"
    xref_number = 2 + len(inner)
    xref_offset = len(out)
    rows = [b"\x00" + (0).to_bytes(4, "big") + (65535).to_bytes(2, "big"),
            b"\x01" + objstm_offset.to_bytes(4, "big") + (0).to_bytes(2, "big")]
    rows += [b"\x02" + (1).to_bytes(4, "big") + i.to_bytes(2, "big") for i in range(len(inner))]
    rows += [b"\x01" + xref_offset.to_bytes(4, "big") + (0).to_bytes(2, "big")]
    table = zlib.compress(b"".join(rows))
    out += (b"%d 0 obj\n<< /Type /XRef /Size %d /W [1 4 2] /Root 2 0 R /Filter /FlateDecode /Length %d >>\n"
            b"stream\n" % (xref_number, xref_number + 1, len(table)))
    out += table + b"\nendstream\nendobj\nstartxref\n%d\n%%%%EOF\n" % xref_offset
    return bytes(out)
