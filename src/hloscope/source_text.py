"""The code of the source lines that reports name (`file.py:LINE`), read where the
files are readable here: the text renderers and the browser show it beside the line."""

from __future__ import annotations

import linecache
import os
from collections.abc import Iterable, Mapping
from types import MappingProxyType


def line_texts(sources: Iterable[str]) -> Mapping[str, str]:
    """`file.py:LINE` -> the line's code (stripped), for each line whose file is
    readable here."""
    texts: dict[str, str] = {}
    for source in sources:
        file, _, line = source.rpartition(":")
        if not line.isdigit() or not os.path.isfile(file):
            continue
        text = linecache.getline(file, int(line)).strip()
        if text:
            texts[source] = text
    return MappingProxyType(texts)
