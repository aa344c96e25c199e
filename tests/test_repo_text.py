"""The committed text describes the product, on any machine: no paths of the machine it was
written on, no words of how it was built, and every relative link of the docs leads somewhere.

Every text file git knows (tracked, or new and not ignored) is read. A path is flagged only where
it looks like someone's home or working folder on the host; paths that are part of behaviour
(`/tmp` inside the sandbox, `/proc/PID/root/...`) are not home-like and pass. The one path of
that shape that is behaviour is allowed by name below, with its reason.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# A home-like absolute path where a path starts (line start, space, quote, bracket, `=`, `:`),
# so `/proc/{pid}/root/tmp` or an overlay's `.../work/work` inside a folder are not flagged.
# The character classes keep this file from matching itself.
HOME_LIKE = re.compile(
    r"(?:^|(?<=[\s\"'`(=:,\[<>]))"
    r"(?:/(?:r[o]ot|Us[e]rs)/|/h[o]me/[A-Za-z_][\w.-]*/|/w[o]rk/|/t[m]p/pytest-)",
    re.MULTILINE,
)
# Words of how the project was developed rather than what it does.
DEVELOPMENT_WORDS = re.compile(
    r"\bst[o]p \d+\b|\biss[u]e \d+|\be[x]p\d+\b",
    re.IGNORECASE,
)
# The sandbox image's unprivileged user's home (joined here so this file does not match).
SANDBOX_HOME = "/".join(("", "home", "sandbox", ""))
# (file, matched text): a path that is part of behaviour, not of the machine that wrote it.
ALLOWED = {
    ("tests/test_attack_docker.py", SANDBOX_HOME),  # the attack tries to write into that home
}
DOC_FILES = ["README.md", *sorted(p.relative_to(ROOT).as_posix() for p in ROOT.glob("docs/*.md"))]
LINK = re.compile(r"!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]\n]+\]:\s*<?([^\s>]+)>?", re.MULTILINE)
FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"(`+)[^`].*?\1", re.DOTALL)
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def _git_files() -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: nothing says which files are committed")
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    return sorted({name.decode() for name in out.split(b"\0") if name})


def _text(rel: str) -> str | None:
    """The file's text, or None for a binary, a missing or an unreadable file."""
    try:
        data = (ROOT / rel).read_bytes()
    except OSError:  # deleted in the work tree, or not a file
        return None
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _hits(pattern: re.Pattern[str]) -> list[str]:
    found = []
    for rel in _git_files():
        text = _text(rel)
        if text is None:
            continue
        for match in pattern.finditer(text):
            if (rel, match.group()) in ALLOWED:
                continue
            line = text.count("\n", 0, match.start()) + 1
            found.append(f"{rel}:{line}: {match.group()!r}")
    return found


def test_no_home_like_paths_in_committed_text() -> None:
    hits = _hits(HOME_LIKE)
    assert not hits, "paths of a machine in committed files:\n" + "\n".join(hits)


def test_no_development_words_in_committed_text() -> None:
    hits = _hits(DEVELOPMENT_WORDS)
    assert not hits, "words of how it was built, not what it does:\n" + "\n".join(hits)


def links(text: str) -> list[str]:
    """Relative link targets of a Markdown text, code blocks and code spans left out."""
    prose = CODE_SPAN.sub("", FENCE.sub("", text))
    targets = [*LINK.findall(prose), *REFERENCE.findall(prose)]
    return [t for t in targets if not SCHEME.match(t) and not t.startswith("#")]


def test_links_finds_relative_targets_only() -> None:
    text = (
        'See [a](docs/a.md), [b](../b.md#part "title"), [web](https://x.org), [top](#top),\n'
        "`[not](code.md)` and ![pic](img.png).\n\n```python\nf[0](x.md)\n```\n[ref]: c.md\n"
    )
    assert links(text) == ["docs/a.md", "../b.md#part", "img.png", "c.md"]


@pytest.mark.parametrize("doc", DOC_FILES)
def test_relative_links_lead_to_files(doc: str) -> None:
    source = ROOT / doc
    missing = []
    for target in links(source.read_text()):
        path = target.split("#", 1)[0]
        if path and not (source.parent / path).exists():
            missing.append(target)
    assert not missing, f"{doc} links to what does not exist: {missing}"
