"""Docstring sections written once and put into the docstrings that share them."""

from __future__ import annotations


def insert_section(doc: str | None, marker: str, text: str) -> str | None:
    """``doc`` with each line that reads ``{marker}`` replaced by ``text``, indented as that line."""
    token = "{" + marker + "}"
    if not doc or token not in doc:
        return doc
    out = []
    for line in doc.split("\n"):
        if line.strip() == token:
            pad = line[:len(line) - len(line.lstrip())]
            out.extend((pad + x) if x else x for x in text.split("\n"))
        else:
            out.append(line)
    return "\n".join(out)
