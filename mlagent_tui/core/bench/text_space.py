"""The Gymnasium space of the environment's prompts and responses: Unicode text, declared exactly.

A prompt or a response holds code, punctuation and any language, so the characters are every
Unicode scalar value: everything but the lone surrogates (U+D800..U+DFFF), which are not text and
which UTF-8 (hence the store) cannot hold. The length is capped at what the store keeps whole
(`events.MAX_TEXT_CHARS`). `contains` is exactly that, and the environment refuses anything else.

Gymnasium's `Text` wants the character set as a frozenset; a million characters would cost tens
of MB per space, so `character_set` is a lazy set with the same membership. `sample()` draws a
short text (at most SAMPLE_MAX_LENGTH characters) from printable ASCII and newlines: enough to
drive the environment with a random policy, not a 700 kB string.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterator, Set
from typing import Any

from gymnasium import spaces

from ..events import MAX_TEXT_CHARS

SAMPLE_MAX_LENGTH = 64
SAMPLE_ALPHABET = string.ascii_letters + string.digits + string.punctuation + " \n"
_SURROGATES = (0xD800, 0xE000)
_NOT_TEXT = re.compile("[\ud800-\udfff]")


class UnicodeCharacters(Set):
    """Every Unicode scalar value (one-character strings), computed rather than stored."""

    def __contains__(self, c: object) -> bool:
        return isinstance(c, str) and len(c) == 1 and not _NOT_TEXT.match(c)

    def __len__(self) -> int:
        return 0x110000 - (_SURROGATES[1] - _SURROGATES[0])

    def __iter__(self) -> Iterator[str]:
        for code in range(0x110000):
            if not _SURROGATES[0] <= code < _SURROGATES[1]:
                yield chr(code)

    def __hash__(self) -> int:
        return hash(UnicodeCharacters)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UnicodeCharacters)

    def __repr__(self) -> str:
        return "UnicodeCharacters(all but U+D800..U+DFFF)"


UNICODE = UnicodeCharacters()


def why_not_text(x: Any, min_length: int, max_length: int) -> str | None:
    """Why `x` is not in a UnicodeText(min_length, max_length) space (None: it is)."""
    if not isinstance(x, str):
        return f"an action is text (str), not {type(x).__name__}"
    if not min_length <= len(x) <= max_length:
        return f"the text has {len(x)} characters; this space holds {min_length} to {max_length}"
    bad = _NOT_TEXT.search(x)
    if bad:
        return (
            f"character {bad.start()} is a lone surrogate (U+{ord(bad.group()):04X}), "
            "which is not text"
        )
    return None


class UnicodeText(spaces.Text):
    """Unicode text of min_length..max_length characters (see the module's doc)."""

    def __init__(
        self,
        max_length: int = MAX_TEXT_CHARS,
        *,
        min_length: int = 0,
        seed: int | None = None,
    ) -> None:
        # Text's own tables (sampling, flattening) hold the sampling alphabet only
        super().__init__(max_length, min_length=min_length, charset=SAMPLE_ALPHABET, seed=seed)

    @property
    def character_set(self) -> frozenset[str]:  # type: ignore[override]
        return UNICODE  # type: ignore[return-value]

    def contains(self, x: Any) -> bool:
        return why_not_text(x, self.min_length, self.max_length) is None

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        """A short random text; `mask` or `probability` may fix its length: (length, None)."""
        length = None
        for given in (mask, probability):
            if given is not None:
                length, chars = given
                if chars is not None:
                    raise ValueError(
                        "UnicodeText samples from its own alphabet: pass (length, None)"
                    )
        if length is None:
            top = min(self.max_length, max(self.min_length, SAMPLE_MAX_LENGTH))
            length = int(self.np_random.integers(self.min_length, top + 1))
        if not self.min_length <= length <= self.max_length:
            raise ValueError(f"length {length} is outside {self.min_length}..{self.max_length}")
        picks = self.np_random.integers(0, len(SAMPLE_ALPHABET), size=length)
        return "".join(SAMPLE_ALPHABET[i] for i in picks)

    def __repr__(self) -> str:
        return f"UnicodeText({self.min_length}, {self.max_length})"

    def __eq__(self, other: object, /) -> bool:
        return (
            isinstance(other, UnicodeText)
            and self.min_length == other.min_length
            and self.max_length == other.max_length
        )

    def __hash__(self) -> int:
        return hash((UnicodeText, self.min_length, self.max_length))
