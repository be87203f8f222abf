"""Clean PDF text at the parser, before chunking: whole words, no control characters.

PDFium marks a hyphen at a line break with U+0002 (U+FFFE in `get_text_range`) and
joins the two lines; TeX's symbol fonts (cmsy, cmex) come out as their raw codes,
control characters. Left in, they split words for BM25 ("knowl\\x02edge" never
matches "knowledge") and leak into what an assistant quotes. `clean_text` is the
one place that fixes them:

- a line-break hyphen (U+0002/U+FFFE, or "-" at a line end before a lower-case
  letter) joins the word ("knowl-edge" -> "knowledge") unless the document itself
  says the word is a compound ("sequence-aligned", "English-to-German");
- compatibility characters unfold where that loses nothing (ligatures "ﬁ" -> "fi",
  no-break and full-width forms); superscripts, fractions and math letters stay;
- an accent TeX set before its letter is put on it ('G ̈ulc ̧ehre' -> 'Gülçehre');
- every other `Cc` character except newline and tab is mapped (symbol-font codes
  with a known glyph) or dropped.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

HYPHEN = "\x02"  # what the parser writes for a line-break hyphen (as PDFium's FPDFText_GetUnicode does)
_BREAK_HYPHENS = ("\x02", "\ufffe")

# TeX's math fonts put glyphs at control-character codes; PDFium has no Unicode for them.
_CMEX = "()[]⌊⌋⌈⌉{}⟨⟩|‖/\\()()[]⌊⌋⌈⌉{}⟨⟩/\\"  # cmex10, codes 0x00-0x1f (delimiters in growing sizes)
_CMSY = "−·×∗÷⋄±∓⊕⊖⊗⊘⊙○∘•≍≡⊆⊇≤≥⪯⪰∼≈⊂⊃≪≫≺≻"  # cmsy10, codes 0x00-0x1f
_CMMI = "ΓΔΘΛΞΠΣΥΦΨΩαβγδϵζηθικλμνξπρστυϕχ"  # cmmi10, codes 0x00-0x1f (math italic Greek)
_CMR = "ΓΔΘΛΞΠΣΥΦΨΩ\ufb00\ufb01\ufb02\ufb03\ufb04ıȷ`´ˇ˘¯˚¸ßæœøÆŒØ"  # cmr10 and its bold/sans kin, 0x00-0x1f
_SYMBOL_FONTS = {"CMEX": _CMEX, "CMSY": _CMSY, "CMMI": _CMMI, "CMBX": _CMR, "CMR": _CMR, "CMSS": _CMR, "CMTI": _CMR}
# Adobe Symbol's private-use pieces of tall delimiters (TeX's cmex through some drivers): their Unicode pieces.
_PIECES = dict(zip(range(0xF8E5, 0xF8FF), "\u23b7\u23d0\u23af®©™⎛⎜⎝⎡⎢⎣⎧⎨⎩⎪⎮⎞⎟⎠⎤⎥⎦⎫⎬⎭", strict=True))
UNMAPPED = "\ufffd"  # what stands where the page shows a glyph no table names: visible, and counted

# Decomposition tags NFKC may unfold: ligatures and compatibility variants, no-break, width forms.
# <super>, <sub>, <fraction>, <font> (math letters), <circle>, <square> keep their meaning, so they stay.
_UNFOLD_TAGS = ("<compat>", "<noBreak>", "<wide>", "<narrow>", "<small>", "<vertical>")

_WORD = re.compile(r"[^\W\d_]+")
_BREAK = re.compile(
    r"(-?)(?<![^\W\d_])([^\W\d_]+)(?:[\x02\ufffe]\n?|-\n)([^\W\d_]+)(-?)"
)  # a break hyphen may end a line (lines._jumps); a word is tried from its start only (no quadratic retries)


def symbol_glyph(code: int, font_name: str) -> str:
    """The glyph a TeX font draws at control code `code`, or a private-use delimiter piece ('' when unknown)."""
    if code in _PIECES:
        return _PIECES[code]
    name = font_name.split("+")[-1].upper()
    for prefix, table in _SYMBOL_FONTS.items():
        if name.startswith(prefix) and code < len(table):
            return table[code]
    return ""


# Spacing accents TeX draws over (or under) a letter as a glyph of their own, and their combining forms.
COMBINING = {
    "´": "\u0301", "`": "\u0300", "ˆ": "\u0302", "˜": "\u0303", "¨": "\u0308", "¯": "\u0304",
    "ˇ": "\u030c", "˘": "\u0306", "˙": "\u0307", "˚": "\u030a", "˝": "\u030b", "¸": "\u0327",
}  # fmt: skip


def _unfold(ch: str) -> str:
    if ch.isascii() or "\u03d0" <= ch <= "\u03f6":  # ϵ, ϕ, ϑ are math's own letters, not spellings of ε, φ, θ
        return ch
    tag = unicodedata.decomposition(ch).split(" ", 1)[0]
    return unicodedata.normalize("NFKC", ch) if tag in _UNFOLD_TAGS else ch


_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # Unicode's Cc, newline and tab left out


def unfold_compat(text: str) -> str:
    """NFKC for ligatures and compatibility forms only ('ﬁ' -> 'fi', NBSP -> ' '; '²' and 'ℓ' stay)."""
    if text.isascii():  # ASCII never unfolds: only the rest is looked at, each character once
        return text
    table = {ord(ch): unfolded for ch in set(_NON_ASCII.findall(text)) if (unfolded := _unfold(ch)) != ch}
    return text.translate(table) if table else text


def vocabulary(text: str) -> Counter[str]:
    """Lower-cased words and hyphenated compounds of a text, fragments at line-break hyphens left out."""
    # whitespace-separated tokens, lower-cased, those holding a break hyphen (_BREAK_HYPHENS) dropped
    kept = _BROKEN_TOKEN.sub(" ", re.sub(r"-\n|[\x02\ufffe]\n", HYPHEN, text)).lower()
    compounds = (token.strip(".,;:!?()[]{}\"'“”‘’") for token in _HYPHENATED.findall(kept))
    words = Counter(t for t in compounds if "-" in t and all(_WORD.fullmatch(p) for p in t.split("-")))
    words.update(_WORD.findall(kept))  # one pass over the text: its words, as token by token
    return words


# tokens are tried from their first character only (`(?<!\S)`): retried at every letter, a pattern
# scanning to the token's end is quadratic in its length
_BROKEN_TOKEN = re.compile(r"(?<!\S)\S*[\x02\ufffe]\S*")
_HYPHENATED = re.compile(r"(?<!\S)\S*-\S*")


def _join(head: str, tail: str, chained: bool, vocab: Counter[str]) -> str:
    """'knowl'+'edge' -> 'knowledge'; 'sequence'+'aligned' -> 'sequence-aligned' when the text says so."""
    joined, compound = f"{head}{tail}", f"{head}-{tail}"
    j, c = vocab.get(joined.lower(), 0), vocab.get(compound.lower(), 0)
    if chained or not tail[0].islower():  # "English-to-German", "Retrieval-Augmented"
        return joined if j > c and not chained else compound  # unless the text writes it whole: "DetectGPT"
    if j or c:
        return compound if c > j else joined
    if len(head) >= 2 and len(tail) >= 3 and vocab.get(head.lower()) and vocab.get(tail.lower()):
        return compound  # two words the text uses on their own: "mini-batch", "pre-train"
    return joined


def join_hyphens(text: str, vocab: Counter[str] | None = None) -> str:
    """Join words split by a line-break hyphen; keep the hyphen of compounds the text knows."""
    if "\x02" not in text and "\ufffe" not in text and "-\n" not in text:
        return text  # no break hyphen: nothing to join (most blocks)
    vocab = vocabulary(text) if vocab is None else vocab

    def repl(m: re.Match[str]) -> str:
        chained = bool(m.group(1) or m.group(4))  # part of a longer compound: "state-of-the-art"
        return m.group(1) + _join(m.group(2), m.group(3), chained, vocab) + m.group(4)

    text = _BREAK.sub(repl, text)
    return re.sub("[\x02\ufffe]\n?", "-", text)  # a break hyphen not between letters ("4\x0216")


# An accent right after a letter is already on it (the layout reader put it there): only a detached one moves.
_ACCENT_ABOVE = re.compile(r"(?:[ \u00a0]|(?<![^\W\d_]))([\u0300-\u0322\u0334-\u036f])([^\W\d_])")
_ANY_ACCENT = re.compile(r"[\u0300-\u036f]")
_ACCENT_BELOW = re.compile(r"([^\W\d_])[ \u00a0]([\u0323-\u0333])")


def attach_accents(text: str) -> str:
    """TeX sets an accent apart from its letter: 'G ̈ulc ̧ehre' -> 'Gülçehre' (above: before it, below: after)."""
    if _ANY_ACCENT.search(text) is None:  # most text: no combining accent to move
        return unicodedata.normalize("NFC", text)
    text = _ACCENT_ABOVE.sub(lambda m: m.group(2) + m.group(1), text)
    return unicodedata.normalize("NFC", _ACCENT_BELOW.sub(r"\1\2", text))


def drop_controls(text: str) -> str:
    """Every `Cc` character but newline and tab removed (a form feed or CR becomes a newline)."""
    if "\r" in text or "\x0c" in text or "\x0b" in text:  # rare: most text is spared a translate's lookups
        text = text.replace("\r\n", "\n").translate({0x0D: "\n", 0x0C: "\n", 0x0B: "\n"})
    return _CONTROLS.sub("", text)


def clean_text(text: str, vocab: Counter[str] | None = None) -> str:
    """Whole words, unfolded ligatures, no control characters (newline and tab stay)."""
    return drop_controls(attach_accents(join_hyphens(unfold_compat(text), vocab)))


def has_controls(text: str) -> bool:
    """Whether `text` holds a `Cc` character other than newline and tab (what the benchmark counts)."""
    return any(unicodedata.category(ch) == "Cc" and ch not in "\n\t" for ch in text)
