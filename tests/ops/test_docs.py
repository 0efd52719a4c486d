"""The documents hold in a clone: every relative link of the README and of
docs/ reaches a file of the checkout (and a heading, for a ``#anchor``, as
GitHub names it), nothing in the repository cites a document that is not in
it, the README stays a user's guide (short, every docs/ file linked from it),
and the jobs table of docs/DEVELOPING.md names exactly the jobs that run."""
from __future__ import annotations

import re
import subprocess
import unicodedata
from pathlib import Path

import pytest

import botsvc.api  # noqa: F401  (importing the groups registers their methods)
from botsvc.api.registry import METHODS
from botsvc.devkit.paths import REPO
from botsvc.jobs import JOBS

README = REPO / "README.md"
DOCS = REPO / "docs"
README_MAX_LINES = 700

# Documents of the contract that live outside the repository, by the names
# they were cited with. Spelt in pieces so that this file does not match.
OUTSIDE = re.compile("|".join([r"\bSP" + r"EC\b", "DECI" + "SIONS", "PIT" + "FALLS",
                               re.escape("../" + "shared")]))

FENCE = re.compile(r"^(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
IMAGE = re.compile(r"!\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
INLINE_CODE = re.compile(r"`+[^`]*`+")


def tracked_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True,
                            check=True).stdout.decode().split("\0")
    return [REPO / name for name in listed if name and (REPO / name).is_file()]


def prose_lines(path: Path):
    """(line number, line) outside fenced code blocks."""
    fenced = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if FENCE.match(line.lstrip()):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def github_anchor(heading: str) -> str:
    """The id GitHub gives a heading: its text in lower case, without
    markup and punctuation (letters, digits, "_" and "-" stay), spaces as "-"."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)   # a link: its text
    text = text.replace("`", "").lower()
    kept = "".join(ch for ch in text if ch in " -_" or unicodedata.category(ch)[0] in "LNM")
    return kept.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for _number, line in prose_lines(path):
        match = HEADING.match(line)
        if match:
            anchor = github_anchor(match.group(2))
            count = seen.get(anchor, 0)
            seen[anchor] = count + 1
            found.add(anchor if count == 0 else f"{anchor}-{count}")
    return found


def documents() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def links(path: Path):
    """(line number, target) of every link and image in ``path``'s prose."""
    for number, line in prose_lines(path):
        line = INLINE_CODE.sub("", line)
        for pattern in (LINK, IMAGE):
            for target in pattern.findall(line):
                yield number, target


def broken_link(source: Path, target: str, root: Path = REPO) -> str | None:
    """Why ``target`` (a link in ``source``) does not resolve in a clone of
    ``root``, or None."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):
        return None   # http:, https:, mailto: ... are not the checkout's
    path_part, _, anchor = target.partition("#")
    destination = (source.parent / path_part).resolve() if path_part else source
    if not destination.exists():
        return "no such file"
    if root.resolve() not in [destination, *destination.parents]:
        return "outside the repository"
    if anchor:
        if destination.suffix != ".md":
            return "an anchor into a file that is not Markdown"
        if anchor not in anchors(destination):
            return f"no heading #{anchor} in {destination.relative_to(root.resolve())}"
    return None


def test_the_documents_are_there():
    assert (DOCS / "DEVELOPING.md").is_file()
    assert len(documents()) > 2


@pytest.mark.parametrize("document", documents(), ids=lambda path: path.name)
def test_every_relative_link_resolves_in_a_clone(document):
    broken = [f"{document.relative_to(REPO)}:{number}: {target} ({why})"
              for number, target in links(document)
              if (why := broken_link(document, target)) is not None]
    assert not broken, "\n".join(broken)


def test_the_link_checker_finds_what_is_broken(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# A title: with `code`\n\n## Twice\n\n## Twice\n\n```sh\n# not a heading\n```\n")
    assert anchors(page) == {"a-title-with-code", "twice", "twice-1"}
    assert github_anchor("The API as a document: /openapi.json and /docs") == \
        "the-api-as-a-document-openapijson-and-docs"
    assert broken_link(page, "#twice-1", tmp_path) is None
    assert broken_link(page, "page.md#a-title-with-code", tmp_path) is None
    assert broken_link(page, "#not-a-heading", tmp_path) == "no heading #not-a-heading in page.md"
    assert broken_link(page, "missing.md", tmp_path) == "no such file"
    (tmp_path / "clone").mkdir()
    inner = tmp_path / "clone" / "inner.md"
    assert broken_link(inner, "../page.md", tmp_path / "clone") == "outside the repository"
    assert broken_link(page, "https://example.org/x.md", tmp_path) is None


def test_nothing_in_the_repository_cites_a_document_outside_it():
    for citation in ("SP" "EC \"Authentication\"", "DECI" "SIONS §5", "PIT" "FALLS.md",
                     "../" "shared/SP" "EC.md", "(SP" "EC.md Sending rule 5)"):
        assert OUTSIDE.search(citation), citation
    for plain in ("APISpec", "spec.path(...)", "the contract's rule", "openapi-spec-validator"):
        assert not OUTSIDE.search(plain), plain
    found = []
    for path in tracked_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue   # a binary file
        for number, line in enumerate(text.splitlines(), 1):
            match = OUTSIDE.search(line)
            if match:
                found.append(f"{path.relative_to(REPO)}:{number}: {match.group(0)}")
    assert not found, ("state the reason itself, or say \"the contract\":\n"
                       + "\n".join(found[:50]))


def test_the_readme_is_a_users_guide_that_links_every_document():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines: move choices and details into docs/")
    linked = {(README.parent / target.partition("#")[0]).resolve()
              for _number, target in links(README)}
    unlinked = [path.name for path in DOCS.glob("*.md") if path.resolve() not in linked]
    assert not unlinked, f"docs/ files the README does not link: {unlinked}"


def jobs_table() -> list[list[str]]:
    text = (DOCS / "DEVELOPING.md").read_text(encoding="utf-8")
    section = text.split("\n### Background work\n", 1)[1].split("\n#", 1)[0]
    return [[cell.strip() for cell in row.strip().strip("|").split("|")]
            for row in section.splitlines() if row.startswith("| `")]


def test_the_jobs_table_names_exactly_the_jobs_that_run():
    expected = [[f"`{job.name}`",
                 "at start" if job.seconds is None else f"{job.seconds:g} s",
                 "once across processes" if job.once_per_interval else "in every process"]
                for job in JOBS]
    shown = [row[:3] for row in jobs_table()]
    assert sorted(shown) == sorted(expected), (
        "docs/DEVELOPING.md's jobs table must list app/botsvc/jobs/schedule.py's JOBS:\n"
        + "\n".join(f"| {' | '.join(row)} | ... |" for row in expected))


def test_the_v2_recipe_names_each_groups_test_file():
    """DEVELOPING.md's /v2 recipe sends a method's tests to its group's file:
    the table names every group of the catalogue, each beside a file that
    exists and tests at least one of that group's methods."""
    text = (DOCS / "DEVELOPING.md").read_text(encoding="utf-8")
    recipe = text.split("\n## Adding a /v2 method\n", 1)[1].split("\n## ", 1)[0]
    table = dict(re.findall(r"^\s*\| `(\w+)\.py` \| `([\w/.]+)` \|$", recipe, re.MULTILINE))
    groups: dict[str, set[str]] = {}
    for name, method in METHODS.items():
        groups.setdefault(method.group, set()).add(name)
    assert sorted(table) == sorted(groups)
    for group, test_file in table.items():
        source = (REPO / test_file).read_text(encoding="utf-8")
        assert any(f'"{name}"' in source for name in groups[group]), (group, test_file)
