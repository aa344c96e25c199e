"""MLGym's memory module: notes the agent writes and reads back by similarity (TF-IDF).

Notes are not stored on the side: a session's memory is rebuilt from its `Memory Write`
actions in the event log, so resume and fork get exactly the notes of the steps they keep.
"""

from __future__ import annotations

import math
import re
from collections import Counter

from pydantic import BaseModel, Field

_WORD = re.compile(r"[a-z0-9_#]+")
_STOP = frozenset(
    "a an the and or of to in on for with is are was were be it this that as at by from we i "
    "our my not no yes do does did so if then than into use used using".split()
)


class Note(BaseModel):
    step: int
    content: str
    tags: list[str] = Field(default_factory=list)


def _tokens(text: str) -> list[str]:
    return [w.lstrip("#") for w in _WORD.findall(text.lower()) if w.lstrip("#") not in _STOP]


def derive_tags(content: str, limit: int = 3) -> list[str]:
    """#hashtags if the note has them, else its most frequent content words."""
    tags = [t[1:] for t in re.findall(r"#\w+", content.lower())]
    if tags:
        return list(dict.fromkeys(tags))[:limit]
    counts = Counter(w for w in _tokens(content) if len(w) > 2 and not w.isdigit())
    return [w for w, _ in counts.most_common(limit)]


class Memory:
    def __init__(self, notes: list[Note] | None = None) -> None:
        self.notes: list[Note] = list(notes or [])

    def write(self, content: str, step: int) -> Note:
        note = Note(step=step, content=content.strip(), tags=derive_tags(content))
        self.notes.append(note)
        return note

    def read(self, query: str, k: int = 3) -> list[tuple[float, Note]]:
        """The k notes most similar to `query` by TF-IDF cosine, best first."""
        if not self.notes:
            return []
        docs = [Counter(_tokens(n.content + " " + " ".join(n.tags))) for n in self.notes]
        df = Counter(term for doc in docs for term in doc)
        n = len(docs)

        def vector(counts: Counter[str]) -> dict[str, float]:
            return {t: c * (math.log((1 + n) / (1 + df.get(t, 0))) + 1) for t, c in counts.items()}

        q = vector(Counter(_tokens(query)))
        scored = []
        for note, doc in zip(self.notes, docs, strict=True):
            v = vector(doc)
            dot = sum(w * v.get(t, 0.0) for t, w in q.items())
            norm = math.sqrt(sum(w * w for w in q.values())) * math.sqrt(
                sum(w * w for w in v.values())
            )
            scored.append((dot / norm if norm else 0.0, note))
        scored.sort(key=lambda pair: (-pair[0], -pair[1].step))
        return scored[:k]

    def summary(self) -> str:
        """What the prompt shows: how many notes and their tags."""
        if not self.notes:
            return "Memory: no notes yet (use Memory Write to keep findings across steps)."
        tags = sorted({t for n in self.notes for t in n.tags})
        return f"Memory: {len(self.notes)} note(s); tags: {', '.join(tags) or '(none)'}."
