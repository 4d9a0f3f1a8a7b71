"""Long displayed formulas broken over the lines of an ``align*`` as a typesetter would.

A formula is broken at its top-level relations and signs (never inside braces or a
``\\left ... \\right`` pair), the first relation aligned, later lines indented; a side that
is one long parenthesis is opened as ``\\Bigl( ... \\Bigr)`` so that it can break inside.
"""

from __future__ import annotations

import re

__all__ = ["LINE", "RELATIONS", "width", "split_formula", "break_side"]

LINE = 56  # display characters that fit a line of the text (10pt, about 6.3 in)
RELATIONS = ("=", "<", ">", r"\le", r"\ge", r"\leq", r"\geq", r"\ne")


def _top_level(tex: str):
    """(position, token) of top-level relations, signs and separators in ``tex``."""
    depth, i, out = 0, 0, []
    while i < len(tex):
        ch = tex[i]
        if tex.startswith(r"\left", i) and not tex[i + 5 : i + 6].isalpha():
            depth += 1
            i += 5
            continue
        if tex.startswith(r"\right", i) and not tex[i + 6 : i + 7].isalpha():
            depth -= 1
            i += 6
            continue
        if ch == "\\":
            m = re.match(r"\\[A-Za-z]+|\\.", tex[i:])
            token = m.group(0)
            depth += {r"\{": 1, r"\}": -1}.get(token, 0)
            if depth == 0 and token in RELATIONS + (r"\quad",):
                out.append((i, token))
            i += len(token)
            continue
        if ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
        elif depth == 0 and ch in "=<>+-,":
            out.append((i, ch))
        i += 1
    return out


def width(tex: str) -> int:
    """A rough count of the characters ``tex`` shows, operators with their spacing (a fraction
    counts its wider part when it holds no braces, both parts otherwise)."""
    spacing = 2 * len(re.findall(r"(?<![{(^_])[+=<>-]|\\le\b|\\ge\b|\\ne\b", tex)) + 4 * tex.count(r"\quad")
    text = re.sub(r"\\(left|right|mathbf|operatorname|mathrm|text|quad|qquad|,|;|!| )", "", tex)
    text = re.sub(r"\\frac\{([^{}]*)\}\{([^{}]*)\}", lambda m: "x" * max(len(m.group(1)), len(m.group(2))), text)
    text = re.sub(r"\\[A-Za-z]+", "x", text)
    text = re.sub(r"[_^]\{[^{}]*\}", "x", text)
    return len(re.sub(r"[{}_^ ]", "", text)) + spacing


def split_formula(tex: str, limit: int = LINE) -> list[str]:
    """``tex`` as the lines of an ``align*`` row group: the first relation aligned (``&=``), a
    long side broken before its top-level signs, each later line indented."""
    tex = tex.strip()
    if r"\quad\text{where } " in tex:
        main, where = tex.split(r"\quad\text{where } ", 1)
        lines = split_formula(main, limit)
        if width(main) + width(where) + 6 <= limit and len(lines) == 1:
            return [lines[0] + r"\quad\text{where } " + where]
        return lines + _bindings(where.split(r",\ "), limit)
    marks = _top_level(tex)
    rel = next(((i, t) for i, t in marks if t in RELATIONS and i > 0), None)
    if rel is None:
        return _break(tex, limit, first="")
    i, token = rel
    lhs, rhs = tex[:i].strip(), tex[i + len(token) :].strip()
    if width(lhs) + width(rhs) <= limit:
        return [f"{lhs} &{token} {rhs}"]
    if width(lhs) > limit * 0.6:
        return _break(lhs, limit, first="") + _break(rhs, limit, first=token)
    return [
        f"{lhs} " + line if k == 0 else line
        for k, line in enumerate(_break(rhs, limit, first=token, offset=width(lhs)))
    ]


def _bindings(parts, limit: int) -> list[str]:
    """The ``where`` bindings of a claim on lines of their own, whole bindings to a line."""
    lines, current = [], ""
    for part in (p.strip() for p in parts if p.strip()):
        if current and width(current) + width(part) > limit:
            lines.append(current + ",")
            current = part
        else:
            current = f"{current},\\ {part}" if current else part
    lines.append(current)
    return [
        (r"&\quad\text{where } " if k == 0 else r"&\quad\phantom{\text{where }}") + line for k, line in enumerate(lines)
    ]


def _break(tex: str, limit: int, first: str, offset: int = 0) -> list[str]:
    """Pieces of ``tex`` split before top-level + and - signs, relations and separators, packed
    into lines of at most ``limit`` (the first ``offset`` less); the first begins ``&first``,
    later ones ``&\\quad``."""
    cuts = [
        i
        for i, t in _top_level(tex)
        if i > 0 and t in ("+", "-", ",", r"\quad") + RELATIONS and tex[i - 1] not in "{(^_"
    ]
    pieces, start = [], 0
    for cut in cuts:
        pieces.append(tex[start:cut].strip())
        start = cut
    pieces.append(tex[start:].strip())
    if len(pieces) == 1 and width(tex) > limit and _opened(tex) != tex:
        return _break(_opened(tex), limit, first, offset)  # break inside its outer parentheses
    lines, current = [], ""
    for piece in (p for p in pieces if p):
        budget = limit - (offset if not lines else 0)
        if current and width(current) + width(piece) > budget:
            lines.append(current)
            current = piece
        else:
            current = f"{current} {piece}".strip()
    lines.append(current)
    lead = f"&{first} " if first else "&"
    return [
        (lead + line) if k == 0 else (r"&\quad " + (r"{}" if line[:1] in "+-" else "") + line)
        for k, line in enumerate(lines)
    ]


def _opened(tex: str) -> str:
    """``tex`` with its outermost ``\\left( ... \\right)`` pairs made ``\\Bigl( ... \\Bigr)``,
    which may be broken across lines."""
    out, depth, i = [], 0, 0
    while i < len(tex):
        if tex.startswith(r"\left(", i) and depth == 0:
            out.append(r"\Bigl(")
            depth, i = 1, i + 6
            continue
        if tex.startswith(r"\left", i) and not tex[i + 5 : i + 6].isalpha():
            depth += 1
        elif tex.startswith(r"\right)", i) and depth == 1:
            out.append(r"\Bigr)")
            depth, i = 0, i + 7
            continue
        elif tex.startswith(r"\right", i) and not tex[i + 6 : i + 7].isalpha():
            depth -= 1
        out.append(tex[i])
        i += 1
    return "".join(out)


def break_side(tex: str, first: str, limit: int = LINE) -> list[str]:
    """The right side ``tex`` of a chain's line after ``&first``, broken into lines if long."""
    return _break(tex, limit, first=first)
