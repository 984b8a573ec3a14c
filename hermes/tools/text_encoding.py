"""Which text encoding a file the file tools read is in, from its first bytes.

UTF-8 is the rule; a file with a UTF-16 or UTF-8 byte-order mark is read as that, and a
file whose bytes are not UTF-8 is read as Windows-1252 (Latin-1 where that fails), with
a note, so the model sees the right letters and knows the file is not UTF-8. A NUL byte
without a UTF-16 mark means binary.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from pathlib import Path

SNIFF_BYTES = 8192
_BOMS = (
    (codecs.BOM_UTF8, "utf-8-sig", "UTF-8 with a byte-order mark"),
    (codecs.BOM_UTF16_LE, "utf-16", "UTF-16"),
    (codecs.BOM_UTF16_BE, "utf-16", "UTF-16"),
)


@dataclass(frozen=True)
class TextEncoding:
    """``codec`` for ``open``; ``name`` for people; ``binary`` when it is no text."""

    codec: str
    name: str
    binary: bool = False

    @property
    def utf8(self) -> bool:
        return self.codec == "utf-8"

    def note(self) -> str:
        """What the model should know about a file that is not plain UTF-8."""
        if self.utf8:
            return ""
        return f"[Read as {self.name}: the file is not UTF-8. patch edits UTF-8 files only.]"


def sniff(path: Path) -> TextEncoding:
    with open(path, "rb") as handle:
        head = handle.read(SNIFF_BYTES)
    for bom, codec, name in _BOMS:
        if head.startswith(bom):
            return TextEncoding(codec, name)
    if b"\0" in head:
        return TextEncoding("", "binary", binary=True)
    if _utf8(head):
        return TextEncoding("utf-8", "UTF-8")
    try:
        head.decode("cp1252")
    except UnicodeDecodeError:
        return TextEncoding("latin-1", "Latin-1")
    return TextEncoding("cp1252", "Windows-1252 (Latin-1)")


def _utf8(head: bytes) -> bool:
    """UTF-8, allowing a character cut by the end of the sample."""
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        return False
    return True
