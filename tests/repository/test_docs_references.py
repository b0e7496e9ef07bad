"""Every citation of the documentation resolves inside the repository, and nothing points outside it.

The citation syntax (docs/README.md): ``docs/<page>.md`` names a page, ``docs/<page>.md §<Section>`` a
section of it, where Section is the exact text of one of that page's Markdown headings (the longest heading the
text after the section sign starts with, followed by a character that cannot continue a word). Markdown
links (``[text](path)``, ``[text](path#anchor)``) in Markdown files and notebooks must point to a file of
the repository and, for a Markdown target with an anchor, to one of its headings (GitHub's anchors).
"""

from __future__ import annotations

import json
import re
import subprocess
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: text that points outside the repository (written in pieces so that this file does not contain it)
FORBIDDEN = ("MODEL" + ".md", "shared" + "/spec", ".." + "/shared", "/work" + "/")

CITATION = re.compile(r"(?<![\w/.\-])docs/(?P<file>[\w\-]+(?:/[\w\-]+)*\.md)(?P<anchor>#[\w\-]*)?(?=(?P<rest>[^\n]*))")
SECTION = re.compile(r"^\s*§\s?(?P<section>.*)")
LINK = re.compile(r"\]\((?P<target>[^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(?P<hashes>#{1,6})\s+(?P<text>.+?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")
WORD = re.compile(r"[\w\-]")
SKIP_SUFFIXES = {".png", ".jpg", ".jpeg", ".gif", ".pdf", ".svg", ".ico", ".gz", ".zip", ".whl"}


def repository_files() -> list[Path]:
    """Files git tracks, plus new files it does not ignore (so uncommitted work is checked too)."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the repository's file list is unknown")
    paths = [ROOT / name for name in listed.decode().split("\0") if name]
    return sorted(p for p in paths if p.is_file())


def text_of(path: Path) -> str | None:
    """The file's text, or None for a binary file."""
    if path.suffix.lower() in SKIP_SUFFIXES:
        return None
    data = path.read_bytes()
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def markdown_of(path: Path, text: str) -> str | None:
    """The Markdown a file holds: the whole of a ``.md`` file, the Markdown cells of a notebook."""
    if path.suffix == ".md":
        return text
    if path.suffix == ".ipynb":
        cells = json.loads(text)["cells"]
        return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    return None


def headings(markdown: str) -> list[str]:
    """The text of every ATX heading outside fenced code blocks."""
    found, fenced = [], False
    for line in markdown.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        match = None if fenced else HEADING.match(line)
        if match:
            found.append(match["text"])
    return found


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading anchors on its text
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    seen: dict[str, int] = {}
    result = set()
    for heading in headings(markdown):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        result.add(base if count == 0 else f"{base}-{count}")
    return result


@cache
def page(relative: str) -> str | None:
    """The Markdown of a repository file, or None when it does not exist."""
    path = ROOT / relative
    return path.read_text(encoding="utf-8") if path.is_file() else None


def cited_section(rest: str, names: list[str]) -> str | None:
    """The heading the text after ``§`` names: the longest heading it starts with, ending at a word end."""
    best = None
    for name in names:
        if rest.startswith(name) and (len(rest) == len(name) or not WORD.match(rest[len(name)])):
            if best is None or len(name) > len(best):
                best = name
    return best


def citation_problems(text: str, read=page) -> list[str]:
    """Problems of every ``docs/<page>.md[#anchor] [§<Section>]`` citation in ``text``."""
    problems = []
    for match in CITATION.finditer(text):
        relative = "docs/" + match["file"]
        markdown = read(relative)
        if markdown is None:
            problems.append(f"{relative}: no such file")
            continue
        if match["anchor"] and match["anchor"][1:] not in anchors(markdown):
            problems.append(f"{relative}{match['anchor']}: no heading with that anchor")
        section = SECTION.match(match["rest"])
        if section:
            rest = section["section"]
            if cited_section(rest, headings(markdown)) is None:
                problems.append(f"{relative} §{rest[:40]}: no heading of {relative} starts that text")
    return problems


def link_problems(source: Path, markdown: str, root: Path = ROOT) -> list[str]:
    """Problems of the relative Markdown links of ``source``: missing files, anchors, paths leaving ``root``."""
    problems = []
    for match in LINK.finditer(markdown):
        target = match["target"]
        if re.match(r"^[a-z][a-z0-9+.\-]*:", target):  # http:, https:, mailto: ...
            continue
        path_part, _, anchor = target.partition("#")
        resolved = (source.parent / path_part).resolve() if path_part else source.resolve()
        if root.resolve() not in (resolved, *resolved.parents):
            problems.append(f"{target}: points outside the repository")
            continue
        if not resolved.exists():
            problems.append(f"{target}: no such file")
            continue
        if anchor and resolved.suffix == ".md" and anchor not in anchors(resolved.read_text(encoding="utf-8")):
            problems.append(f"{target}: no heading with that anchor")
    return problems


def outside_references(text: str) -> list[str]:
    return [pattern for pattern in FORBIDDEN if pattern in text]


# -- the repository ---------------------------------------------------------------------------------


@cache
def texts() -> dict[str, str]:
    found = {}
    for path in repository_files():
        text = text_of(path)
        if text is not None:
            found[str(path.relative_to(ROOT))] = text
    return found


def test_the_documentation_exists_and_is_cited():
    names = set(texts())
    for page_name in ("README", "model", "policies", "optima", "claims", "cluster", "formats"):
        assert f"docs/{page_name}.md" in names
    cited = sum(len(CITATION.findall(text)) for name, text in texts().items() if not name.startswith("docs/"))
    assert cited >= 50  # code, tests and notebooks cite the docs (the check below is not vacuous)


def test_every_docs_citation_resolves():
    problems = [f"{name}: {p}" for name, text in texts().items() for p in citation_problems(text)]
    assert not problems, "\n".join(problems)


def test_every_relative_markdown_link_resolves():
    problems = []
    for name, text in texts().items():
        markdown = markdown_of(ROOT / name, text)
        if markdown is not None:
            problems += [f"{name}: {p}" for p in link_problems(ROOT / name, markdown)]
    assert not problems, "\n".join(problems)


def test_nothing_points_outside_the_repository():
    problems = [f"{name}: mentions {p!r}" for name, text in texts().items() for p in outside_references(text)]
    assert not problems, "\n".join(problems)


def test_every_docs_page_is_in_the_index():
    index = texts()["docs/README.md"]
    pages = [name for name in texts() if name.startswith("docs/") and name.endswith(".md")]
    missing = [name for name in pages if name != "docs/README.md" and f"({Path(name).name})" not in index]
    assert not missing, f"docs/README.md does not list {missing}"


# -- the checks themselves catch what they must -----------------------------------------------------

# The examples below write DOCS/ for docs/, so that this file holds no citation of its own.
PAGES = {"docs/model.md": "# The model\n\n## Batches\n\n## The slack k\n\n```\n## Not a heading\n```\n"}


def cite(text: str) -> str:
    return text.replace("DOCS/", "docs/")


def test_citation_check_accepts_good_citations():
    text = "see DOCS/model.md, DOCS/model.md §Batches and DOCS/model.md §The slack k's value; DOCS/model.md#batches"
    assert citation_problems(cite(text), PAGES.get) == []


@pytest.mark.parametrize(
    "text",
    [
        "DOCS/missing.md §Batches",  # no such file
        "DOCS/model.md §Batch sizes",  # no such heading
        "DOCS/model.md §Batchesx",  # a heading is a prefix of the word, not the word
        "DOCS/model.md §Not a heading",  # inside a code block
        "DOCS/model.md §The slack",  # only a part of a heading
        "DOCS/model.md#no-such-anchor",
    ],
)
def test_citation_check_rejects_bad_citations(text):
    assert citation_problems(cite(text), PAGES.get) != []


def test_every_citation_on_a_line_is_checked():
    text = cite("DOCS/model.md §Batches, DOCS/model.md §Nothing and DOCS/nope.md")
    assert len(citation_problems(text, PAGES.get)) == 2


def test_longest_heading_wins():
    assert cited_section("C3r holds", ["C3", "C3r"]) == "C3r"
    assert cited_section("C3 holds", ["C3", "C3r"]) == "C3"
    assert cited_section("C3x", ["C3", "C3r"]) is None


def test_link_check(tmp_path):
    (tmp_path / "pages").mkdir()
    (tmp_path / "pages" / "a.md").write_text("# A\n\n## Some section\n")
    source = tmp_path / "README.md"
    source.write_text("# Top\n")
    good = "[a](pages/a.md) [s](pages/a.md#some-section) [here](#top) [web](https://example.org)"
    assert link_problems(source, good, tmp_path) == []
    bad = "[x](pages/b.md) [y](pages/a.md#nope) [z](../elsewhere/file.md) [t](#bottom)"
    assert len(link_problems(source, bad, tmp_path)) == 4


def test_outside_references_are_found():
    assert outside_references("see the " + "MODEL" + ".md spec") != []
    assert outside_references("../" + "sha" + "red/spec/x") != []
    assert outside_references(cite("DOCS/model.md §Batches")) == []


def test_slugs_follow_github():
    assert slug("C9a") == "c9a"
    assert slug("Workers and service time") == "workers-and-service-time"
    assert slug("What checking found") == "what-checking-found"
    assert slug("Batch size >= 2: FIF is not optimal") == "batch-size--2-fif-is-not-optimal"
