"""Finds where a mutant applies, by anchors rather than by file and line.

A mutant names a chain of anchors: the first occurs exactly once in all the
headers under include/, each next one exactly once inside the block the one
before opens (from the anchor to the brace that closes the first '{' after
it). Its edits then replace text that occurs exactly once in the last block.
Text is compared token by token, so a reformatted line still matches, and a
function moved to another header is still found. When an anchor or a text
occurs zero or several times, the mutant no longer applies, and the error
says which anchor or text, where, and how often.
"""

import os
import re

TOKEN = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*|\d[\w.']*|::|->|<<|>>|&&|\|\||[^\sA-Za-z0-9_])")


class NotApplicable(Exception):
    """The mutant no longer fits the code."""


def _tokens(text):
    out, pos = [], 0
    text = text.strip()
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if not m:
            break
        out.append(m.group(1))
        pos = m.end()
    return out


def pattern(text):
    """A regex matching `text` whatever the whitespace between its tokens."""
    toks = _tokens(text)
    if not toks:
        raise ValueError("empty text")
    parts = [re.escape(toks[0])]
    for prev, tok in zip(toks, toks[1:]):
        word = prev[-1].isalnum() or prev[-1] == "_"
        parts.append(r"\s+" if word and (tok[0].isalnum() or tok[0] == "_") else r"\s*")
        parts.append(re.escape(tok))
    return re.compile("".join(parts))


def block_end(text, start):
    """The index after the '}' that closes the first '{' at or after `start`,
    skipping comments, string and character literals."""
    i, depth, n = start, 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
            if depth < 0:
                break
        i += 1
    raise NotApplicable("no closing brace after the anchor")


def headers(root):
    """Every header under root/include, as {relative path: text}."""
    out = {}
    base = os.path.join(root, "include")
    for d, _, files in os.walk(base):
        for f in files:
            if f.endswith((".hpp", ".h")):
                p = os.path.join(d, f)
                with open(p, encoding="utf-8") as fh:
                    out[os.path.relpath(p, root)] = fh.read()
    return out


def _where(matches):
    return ", ".join(f"{path}:{text.count(chr(10), 0, m.start()) + 1}" for path, text, m in matches)


def locate(mutant, files):
    """(path, start, end) of the block the mutant's last anchor opens."""
    anchors = mutant["anchor"]
    first = pattern(anchors[0])
    found = [(p, t, m) for p, t in sorted(files.items()) for m in first.finditer(t)]
    if len(found) != 1:
        raise NotApplicable(f"anchor {anchors[0]!r} occurs {len(found)} times under include/"
                            + (f" ({_where(found)})" if found else "") + ", must be once")
    path, text, m = found[0]
    start, end = m.start(), block_end(text, m.start())
    for a in anchors[1:]:
        inner = list(pattern(a).finditer(text, start, end))
        if len(inner) != 1:
            raise NotApplicable(f"anchor {a!r} occurs {len(inner)} times in the block of {anchors[0]!r} "
                                f"({path}), must be once")
        start, end = inner[0].start(), block_end(text, inner[0].start())
    return path, start, end


def mutate(mutant, files):
    """(path, the header's text with the mutant's edits made)."""
    path, start, end = locate(mutant, files)
    text = files[path]
    for old, new in mutant["edits"]:
        hits = list(pattern(old).finditer(text, start, end))
        if len(hits) != 1:
            line = old.strip().splitlines()[0]
            raise NotApplicable(f"the text {line!r} occurs {len(hits)} times in the block of "
                                f"{mutant['anchor'][-1]!r} ({path}), must be once")
        h = hits[0]
        text = text[:h.start()] + new + text[h.end():]
        end += len(new) - (h.end() - h.start())
    return path, text
