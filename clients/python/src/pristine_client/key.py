"""Content keys of templates: a hash of the files that define them.

The algorithm is the Go client's (client.ContentKey), so a Go and a Python
suite keyed by the same files share one template.
"""

import glob
import hashlib
import os
import sys
from typing import Iterable, Sequence


def content_key(patterns: Sequence[str], extra: Iterable[str] = ()) -> str:
    """Hash the files that define a template (migrations, fixtures, schema
    dumps). Each pattern is a file, a directory (every file under it) or a
    glob; names are hashed relative to the pattern's base, so the key does
    not depend on where the checkout lives. Extra strings (a tool's version,
    a setting) are hashed too."""
    h = hashlib.sha256()
    h.update(b"pristine-content-key-v1\x00")
    extra = list(extra)
    for e in extra:
        h.update(b"extra\x00" + e.encode() + b"\x00")
    n = 0
    for pat in patterns:
        kw = {"include_hidden": True} if sys.version_info >= (3, 11) else {}
        matches = sorted(glob.glob(pat, **kw))
        if not matches:
            raise ValueError(f"content key: {pat!r} matches no file: "
                             "name the migrations and fixtures that define the template")
        for m in matches:
            base = os.path.dirname(m)
            for path in _walk(m):
                rel = os.path.relpath(path, base).replace(os.sep, "/")
                size = os.path.getsize(path)
                h.update(b"file\x00" + rel.encode() + b"\x00" + str(size).encode() + b"\x00")
                with open(path, "rb") as f:
                    for chunk in iter(lambda: f.read(1 << 16), b""):
                        h.update(chunk)
                n += 1
    if n == 0 and not extra:
        raise ValueError("content key: no files: name the migrations and fixtures that define the template")
    return h.hexdigest()


def _walk(path: str):
    """Files under path in the order Go's filepath.WalkDir visits them."""
    if not os.path.isdir(path) or os.path.islink(path):
        yield path
        return
    for name in sorted(os.listdir(path)):
        yield from _walk(os.path.join(path, name))
