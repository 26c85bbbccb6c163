#!/usr/bin/env python3
"""flag-check.py: refuses a patch series that gives a new flag a bit that
the tree it is for already uses.

    linux/flag-check.py PRISTINE_SRC PATCH...

A flag is a `#define NAME VALUE` or an enum member `NAME = VALUE` whose
name starts with one of the families below (the s_iflags, d_flags,
nd->flags and cifs_fattr bits). For every such name a patch adds, the
tree's headers (include/ and fs/, *.h) are searched for another name of
the same family whose value shares a bit with it; a name the series
removes or redefines does not count. That is the check that would have
stopped the 6.12 noalloc series from landing on 7.3, where its 0x4000 is
SB_I_ALLOW_HSM. Prints one line per collision and exits 1, or prints
`flag-check: N new flags, none collides` and exits 0. Reads only.
"""

import os
import re
import sys

FAMILIES = ("SB_I_", "DCACHE_", "LOOKUP_", "CIFS_FATTR_")
NAME = r"(?P<name>(?:%s)[A-Z0-9_]+)" % "|".join(FAMILIES)
DEFINE = re.compile(r"^\s*#\s*define\s+" + NAME + r"\s+(?P<value>[^/\n]+?)\s*(?:/[*/].*)?$")
ENUM = re.compile(r"^\s*" + NAME + r"\s*=\s*(?P<value>[^,/\n]+?)\s*,?\s*(?:/[*/].*)?$")


def value_of(text):
    """The integer a flag's value expression names, or None if it is not a
    plain constant (another macro, a function-like define...)."""
    e = re.sub(r"\bBIT(?:_ULL)?\s*\(", "(1 << ", text)
    e = re.sub(r"\(\s*(?:__force\s+)?(?:unsigned\s+)?(?:int|long|u32|u64|__u32)\s*\)", "", e)
    e = re.sub(r"(?<=[0-9a-fA-F])[uU]?[lL]{0,2}\b", "", e)
    if not re.fullmatch(r"[0-9a-fA-FxX()<>|&~ \t+]+", e):
        return None
    try:
        v = eval(e, {"__builtins__": {}}, {})  # digits and operators only
    except Exception:
        return None
    return v if isinstance(v, int) and v > 0 else None


def flags_in(lines):
    for line in lines:
        m = DEFINE.match(line) or ENUM.match(line)
        if m:
            v = value_of(m.group("value"))
            if v is not None:
                yield m.group("name"), v


def family(name):
    return next(f for f in FAMILIES if name.startswith(f))


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    tree, patches = sys.argv[1], sys.argv[2:]
    added, removed = {}, set()
    for p in patches:
        with open(p, errors="replace") as f:
            for line in f:
                if line.startswith("+++") or line.startswith("---"):
                    continue
                if line.startswith("+"):
                    for name, v in flags_in([line[1:]]):
                        added[name] = (v, os.path.basename(p))
                elif line.startswith("-"):
                    for name, _ in flags_in([line[1:]]):
                        removed.add(name)
    existing = {}
    for top in ("include", "fs"):
        for root, _, files in os.walk(os.path.join(tree, top)):
            for fn in files:
                if not fn.endswith(".h"):
                    continue
                path = os.path.join(root, fn)
                with open(path, errors="replace") as f:
                    for name, v in flags_in(f):
                        existing.setdefault(name, (v, os.path.relpath(path, tree)))
    bad = 0
    for name, (v, patch) in sorted(added.items()):
        for other, (w, where) in sorted(existing.items()):
            if other == name or other in removed or family(other) != family(name):
                continue
            single = w & (w - 1) == 0
            if v == w or (single and v & w):
                print(f"flag-check: {patch}: {name} = {v:#x} takes the bit of "
                      f"{other} = {w:#x} ({where})")
                bad += 1
    if bad:
        sys.exit(1)
    print(f"flag-check: {len(added)} new flags, none collides")


if __name__ == "__main__":
    main()
