"""Search text rules shared by every backend: query terms, CJK handling and snippets.

Full-text engines split words on spaces, which Chinese and Japanese text does not
have. The index therefore stores CJK characters one token each (``spaced_cjk``), and a
CJK word in a query becomes a phrase of adjacent characters, so a word is found
anywhere inside a sentence. A user's query is only ever used as a list of plain terms,
so FTS syntax characters in it never reach the engine as syntax.

A query has two pieces of syntax of its own, the ones people know from search boxes:
``"exact phrase"`` (the words adjacent, in order) and ``word*`` (any word starting so).
A term is therefore a string of one or more words separated by single spaces (a phrase),
ending in ``*`` when its last word is a prefix (``split_prefix``).
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence

# Han, Hiragana, Katakana, Hangul, CJK punctuation-free ranges and compatibility forms.
_CJK = (
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3400-\u4dbf"  # CJK Extension A
    "\u4e00-\u9fff"  # CJK Unified Ideographs
    "\uac00-\ud7af"  # Hangul syllables
    "\uf900-\ufaff"  # CJK Compatibility Ideographs
    "\uff66-\uff9f"  # half-width Katakana
)
_CJK_CHAR = re.compile(f"([{_CJK}])")
# A term is a run of letters and digits, as the engines' tokenizers see it.
_TERM = re.compile(r"[^\W_]+", re.UNICODE)
# A quoted phrase (perhaps with a prefix star), or a run of anything else but spaces.
_QUERY_PART = re.compile(r'"([^"]*)"(\*?)|([^\s"]+)')
PREFIX = "*"

MAX_TERMS = 16


def spaced_cjk(text: str) -> str:
    """The text as it is indexed: every CJK character stands alone."""
    return _CJK_CHAR.sub(r" \1 ", text)


def searchable_text(content: str | None, content_parts: int | bool = 0) -> str:
    """The words of a message: its text, or the text parts of multi-part content."""
    if not content:
        return ""
    if not content_parts:
        return content
    try:
        parts = json.loads(content)
    except ValueError:
        return content
    if not isinstance(parts, list):
        return content
    return " ".join(p.get("text", "") for p in parts if isinstance(p, dict))


def has_cjk(text: str) -> bool:
    return _CJK_CHAR.search(text) is not None


def query_terms(query: str) -> list[str]:
    """The terms of a user's query (at most MAX_TERMS, duplicates removed).

    ``"red apples"`` is one term (a phrase), ``zebr*`` a prefix term; every other run of
    letters and digits is a term of its own, whatever punctuation stands around it.
    """
    terms: list[str] = []

    def add(term: str) -> None:
        if term and term.lower() not in (t.lower() for t in terms):
            terms.append(term)

    for match in _QUERY_PART.finditer(query or ""):
        quoted, star, loose = match.groups()
        if quoted is not None:
            add(" ".join(_TERM.findall(quoted)) + (PREFIX if star and _TERM.search(quoted) else ""))
            continue
        words = _TERM.findall(loose)
        for word in words[:-1]:
            add(word)
        if words:
            add(words[-1] + (PREFIX if loose.endswith(PREFIX) else ""))
    return terms[:MAX_TERMS]


def split_prefix(term: str) -> tuple[str, bool]:
    """A term's words and whether its last word is a prefix: ``"zebr*"`` -> ("zebr", True)."""
    if term.endswith(PREFIX):
        return term[: -len(PREFIX)], True
    return term, False


def fts5_match(terms: list[str]) -> str:
    """An FTS5 MATCH expression requiring every term, each as a quoted phrase."""
    phrases = []
    for term in terms:
        text, prefix = split_prefix(term)
        tokens = spaced_cjk(text).split()
        if tokens:
            quoted = '"' + " ".join(tokens).replace('"', '""') + '"'
            phrases.append(quoted + ("*" if prefix else ""))
    return " AND ".join(phrases)


def _fold(text: str) -> str:
    """Lower case without diacritics, as FTS5's unicode61 (remove_diacritics 2) sees it."""
    if text.isascii():
        return text.lower()
    folded = unicodedata.normalize("NFKD", text.lower())
    return "".join(c for c in folded if not unicodedata.combining(c))


def phrase_match(indexed_text: str, terms: Sequence[str]) -> bool:
    """Whether text (as indexed) holds every term as a run of adjacent tokens (the last
    one only starting so, for a prefix term)."""
    folded = _fold(indexed_text)
    wanted = []
    for term in terms:
        text, prefix = split_prefix(term)
        wanted.append((_TERM.findall(_fold(spaced_cjk(text))), prefix))
    # Cheap first: every token must at least occur somewhere in the text.
    if not all(token in folded for phrase, _ in wanted for token in phrase):
        return False
    tokens = _TERM.findall(folded)
    return all(_holds_phrase(tokens, phrase, prefix) for phrase, prefix in wanted)


def _holds_phrase(tokens: list[str], phrase: list[str], prefix: bool) -> bool:
    width = len(phrase)
    for i in range(len(tokens) - width + 1):
        window = tokens[i : i + width]
        if window == phrase or (
            prefix and window[:-1] == phrase[:-1] and window[-1].startswith(phrase[-1])
        ):
            return True
    return False


def snippet(content: str, terms: list[str], width: int = 160) -> str:
    """A window of ``content`` around the first term found, with ellipses where cut."""
    text = " ".join((content or "").split())
    lowered = text.lower()
    hits = [lowered.find(split_prefix(t)[0].lower()) for t in terms]
    hits = [h for h in hits if h >= 0]
    start = max(0, min(hits) - width // 3) if hits else 0
    end = min(len(text), start + width)
    piece = text[start:end]
    return ("…" if start > 0 else "") + piece + ("…" if end < len(text) else "")
