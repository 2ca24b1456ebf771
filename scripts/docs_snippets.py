#!/usr/bin/env python3
"""Keeps the code in docs/*.md identical to the compiled examples.

A Markdown line

    <!-- snippet: tutorial.cpp#make-store -->

must be followed immediately by a ```cpp fenced block whose content is the
lines between the two `// [make-store]` marker lines of
docs/examples/tutorial.cpp (markers excluded, common indentation removed).
A CMake source (CMakeLists.txt, *.cmake) marks its regions with
`# [name]` lines and is quoted in a ```cmake block.

    docs_snippets.py --check    exit 1, with a diff, if any block differs
                                or a marker is missing
    docs_snippets.py --update   rewrite the blocks from the sources

It also checks the compiler errors the docs quote (`<!-- compile-fail: NAME -->`)
against the compile-fail test that produces them, and, with --check, that
every relative link in docs/**/*.md and README.md resolves: the file or
directory exists, and a #fragment names a heading of the page it points to
(GitHub's anchors).
"""

import argparse
import difflib
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
EXAMPLES = DOCS / "examples"

SNIPPET = re.compile(r"^<!--\s*snippet:\s*(?P<file>[^#\s]+)#(?P<name>[\w.-]+)\s*-->\s*$")
MARKER = re.compile(r"^\s*(//|#)\s*\[(?P<name>[\w.-]+)\]\s*$")  # C++ or CMake comment
FENCE_OPEN = re.compile(r"^```(cpp|cmake)\s*$")
FENCE_CLOSE = "```"


class SnippetError(Exception):
    pass


def dedent(lines):
    indents = [len(l) - len(l.lstrip(" ")) for l in lines if l.strip()]
    cut = min(indents, default=0)
    return [l[cut:] if l.strip() else "" for l in lines]


def region(source: str, name: str, cache={}):
    """The lines between the two `// [name]` markers of docs/examples/<source>."""
    path = EXAMPLES / source
    if path not in cache:
        if not path.is_file():
            raise SnippetError(f"no such example: {path.relative_to(ROOT)}")
        cache[path] = path.read_text().splitlines()
    lines = cache[path]
    at = [i for i, l in enumerate(lines) if (m := MARKER.match(l)) and m["name"] == name]
    if len(at) != 2:
        raise SnippetError(
            f"{path.relative_to(ROOT)}: expected exactly two `// [{name}]` marker lines, found {len(at)}"
        )
    return dedent([l.rstrip() for l in lines[at[0] + 1 : at[1]]])


def process(md: Path, update: bool):
    """Returns (problems, new text) for one Markdown file."""
    lines = md.read_text().splitlines(keepends=False)
    out, problems, i = [], [], 0
    rel = md.relative_to(ROOT)
    while i < len(lines):
        line = lines[i]
        out.append(line)
        m = SNIPPET.match(line)
        i += 1
        if not m:
            continue
        where = f"{rel}:{i}"
        try:
            want = region(m["file"], m["name"])
        except SnippetError as e:
            problems.append(f"{where}: {e}")
            continue
        if i >= len(lines) or not FENCE_OPEN.match(lines[i]):
            if update:
                lang = "cmake" if m["file"].endswith((".txt", ".cmake")) else "cpp"
                out += ["```" + lang, *want, FENCE_CLOSE]
            else:
                problems.append(f"{where}: the snippet line must be followed by a ```cpp (or ```cmake) block")
            continue
        end = i + 1
        while end < len(lines) and lines[end].rstrip() != FENCE_CLOSE:
            end += 1
        if end == len(lines):
            problems.append(f"{where}: the ```cpp block is never closed")
            out += lines[i:]
            break
        have = lines[i + 1 : end]
        if have != want and not update:
            diff = difflib.unified_diff(
                have, want, f"{rel} (block at line {i + 1})", f"docs/examples/{m['file']}#{m['name']}", lineterm=""
            )
            problems.append(f"{where}: block differs from its source:\n" + "\n".join(diff))
        out += [lines[i], *(want if update else have), FENCE_CLOSE]
        i = end + 1
    text = "\n".join(out) + "\n"
    return problems, text


COMPILE_FAIL = re.compile(r"^<!--\s*compile-fail:\s*(?P<name>[\w-]+)\s*-->\s*$")
ERROR_LINE = "error: static assertion failed: "


def compile_fail_quotes(md: Path):
    """Problems with the compiler errors a page quotes: a line
    `<!-- compile-fail: NAME -->` must be followed by a ```text block whose
    first line is `error: static assertion failed: <text>`, where <text>
    starts with the first `// expect:` text of test/compile_fail/NAME.cpp,
    the test that checks the compiler prints it."""
    problems = []
    lines = md.read_text().splitlines()
    rel = md.relative_to(ROOT)
    for i, line in enumerate(lines):
        m = COMPILE_FAIL.match(line)
        if not m:
            continue
        src = ROOT / "test" / "compile_fail" / f"{m['name']}.cpp"
        if not src.is_file():
            problems.append(f"{rel}:{i + 1}: no compile-fail test {src.relative_to(ROOT)}")
            continue
        expects = [l[len("// expect: "):] for l in src.read_text().splitlines() if l.startswith("// expect: ")]
        if i + 2 >= len(lines) or lines[i + 1].strip() != "```text":
            problems.append(f"{rel}:{i + 1}: the compile-fail line must be followed by a ```text block")
            continue
        quoted = lines[i + 2]
        if not quoted.startswith(ERROR_LINE) or not expects or not quoted[len(ERROR_LINE):].startswith(expects[0]):
            problems.append(f"{rel}:{i + 3}: the quoted error does not start with {ERROR_LINE!r} followed by the "
                            f"test's expected text {expects[0] if expects else '(none)'!r}")
    return problems


LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\((?P<target>[^)\s]+)(?:\s+\"[^\"]*\")?\)")
ANY_FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^#{1,6}\s+(?P<text>.*?)\s*#*\s*$")


def prose(md: Path):
    """(line number, line) of the lines outside fenced code blocks."""
    fenced = False
    for n, line in enumerate(md.read_text().splitlines(), 1):
        if ANY_FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            yield n, line


def slug(heading: str):
    """GitHub's anchor of a heading: its text, lower case, punctuation dropped
    (but `-` and `_`), spaces as hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(md: Path, cache={}):
    if md not in cache:
        seen, found = {}, set()
        for _, line in prose(md):
            if m := HEADING.match(line):
                s = slug(m["text"])
                found.add(s if s not in seen else f"{s}-{seen[s]}")
                seen[s] = seen.get(s, 0) + 1
        cache[md] = found
    return cache[md]


def relative_links(md: Path):
    """(line number, target) of the relative links of a page, leaving out
    links in code (fenced blocks, inline code) and absolute URLs."""
    for n, line in prose(md):
        for m in LINK.finditer(re.sub(r"`[^`]*`", "", line)):
            if not re.match(r"^[a-z][a-z0-9+.-]*:", m["target"]):  # https:, mailto:
                yield n, m["target"]


def link_problems(md: Path):
    """Problems with the relative links of a page: a target that does not
    exist, or a #fragment no heading of the target page has."""
    problems, rel = [], md.relative_to(ROOT)
    for n, target in relative_links(md):
        file, _, fragment = target.partition("#")
        dest = (md.parent / file).resolve() if file else md
        if not dest.exists():
            problems.append(f"{rel}:{n}: the link {target} leads to no file")
        elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
            problems.append(f"{rel}:{n}: the link {target}: {dest.relative_to(ROOT)} has no heading #{fragment}")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="fail when a block differs from its source")
    mode.add_argument("--update", action="store_true", help="rewrite the blocks from their sources")
    args = parser.parse_args()

    pages = sorted(p for p in DOCS.rglob("*.md") if EXAMPLES not in p.parents)
    all_problems, blocks = [], 0
    for md in pages:
        blocks += sum(1 for l in md.read_text().splitlines() if SNIPPET.match(l))
        problems, text = process(md, args.update)
        all_problems += problems + compile_fail_quotes(md)
        if args.update and text != md.read_text():
            md.write_text(text)
            print(f"updated {md.relative_to(ROOT)}")
    links = 0
    if args.check:
        for md in [ROOT / "README.md", *pages]:
            links += sum(1 for _ in relative_links(md))
            all_problems += link_problems(md)
    for p in all_problems:
        print(p, file=sys.stderr)
    if all_problems:
        hint = "fix the markers named above" if args.update else "fix the links and markers named above; blocks that differ: scripts/docs_snippets.py --update"
        print(f"\n{len(all_problems)} problem(s): {hint}", file=sys.stderr)
        return 1
    print(f"{blocks} snippet(s) in {len(pages)} page(s) match the examples")
    if args.check:
        print(f"{links} relative link(s) in {len(pages) + 1} page(s) resolve")
    return 0


if __name__ == "__main__":
    sys.exit(main())
