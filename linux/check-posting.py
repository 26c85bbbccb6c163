#!/usr/bin/env python3
"""check-posting.py: what a maintainer's tools check of a posting, for each
series directory given (its *.patch files as `git format-patch
--cover-letter` writes them), against the release's pristine tree:

 - every patch's trailers parse: its message ends in one paragraph of
   `Key: value` lines, after a blank line, and `git interpret-trailers
   --parse` reads back exactly those lines (b4 puts new tags after them);
   a message with no trailer block fails (b4 would guess where the tags
   it collects go);
 - no Signed-off-by, and no tag with a placeholder identity (@localhost,
   vfs-lab, example.*): whoever sends the series signs it off;
 - every patch's Cc trailers and To/Cc mail headers together name
   everyone scripts/get_maintainer.pl names for that patch, and the cover
   letter's To/Cc everyone it names for the series (--no-git
   --no-git-fallback --no-rolestats);
 - scripts/checkpatch.pl --strict reports no ERROR and no WARNING (the
   missing Signed-off-by aside, on purpose), and each CHECK it reports is
   answered in that patch's message (the message says "checkpatch").

    linux/check-posting.py PRISTINE_SRC SERIES_DIR...

Prints `check-posting: SERIES: N patches: trailers parse, no sign-off,
Cc as get_maintainer.pl (M addresses), checkpatch --strict: C checks
explained` per series; exits 1 with every reason a series fails on, 2 on
bad arguments. Reads only; runs git, perl.
"""

import email.utils
import glob
import os
import re
import subprocess
import sys

PLACEHOLDER = re.compile(r"@localhost|vfs-lab|@example\.", re.I)
TRAILER = re.compile(r"^[A-Za-z][A-Za-z0-9-]*: \S")
IDENTITY_TAGS = ("signed-off-by", "reviewed-by", "acked-by", "tested-by",
                 "reported-by", "suggested-by", "co-developed-by")


def headers_and_message(text):
    """The mail headers (unfolded, lowercase keys, values joined) and the
    commit message (after the headers, up to the `---` line)."""
    head, _, rest = text.partition("\n\n")
    headers = {}
    key = None
    for line in head.splitlines()[1:]:
        if line[:1] in (" ", "\t") and key:
            headers[key] += " " + line.strip()
        elif ":" in line:
            key, _, value = line.partition(":")
            key = key.strip().lower()
            headers[key] = (headers.get(key, "") + ", " if key in headers else "") + value.strip()
    message = rest.split("\n---\n", 1)[0]
    return headers, message


def addresses(text):
    """The e-mail addresses in a list of names and addresses, lowercased."""
    return {a.lower() for _, a in email.utils.getaddresses([text]) if "@" in a}


def get_maintainer(tree, patches):
    out = subprocess.run(
        ["perl", "scripts/get_maintainer.pl", "--no-git", "--no-git-fallback",
         "--no-rolestats"] + patches,
        cwd=tree, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError("get_maintainer.pl failed: " + out.stderr.strip())
    return addresses(", ".join(out.stdout.splitlines()))


def check_identities(name, lines, problems):
    """A Signed-off-by, or an identity tag naming a placeholder, in LINES."""
    for t in lines:
        tag = t.split(":", 1)[0].lower()
        if tag == "signed-off-by":
            problems.append(f"{name}: carries '{t}' (the sender adds their own)")
        elif tag in IDENTITY_TAGS and PLACEHOLDER.search(t):
            problems.append(f"{name}: placeholder identity in '{t}'")


def check_trailers(name, message, problems):
    paras = message.rstrip("\n").split("\n\n")
    tagged = [l for l in message.splitlines() if TRAILER.match(l)]
    if not any(TRAILER.match(l) for l in paras[-1].splitlines()):
        # No trailers at all: `git interpret-trailers --parse` finds none,
        # and b4 puts the tags it collects (Reviewed-by, the sender's
        # Signed-off-by) where it guesses the block ends.
        problems.append(f"{name}: no trailer block (git interpret-trailers --parse finds none)")
        check_identities(name, tagged, problems)
        return []
    if len(paras) < 2:
        problems.append(f"{name}: no trailer block after a blank line")
        check_identities(name, tagged, problems)
        return []
    block = paras[-1].splitlines()
    if not block or not all(TRAILER.match(l) for l in block):
        problems.append(f"{name}: the message's last paragraph is not a block of "
                        "trailers (no blank line before them?)")
        # Tags glued to the text are not trailers to git, but a reader
        # still sees whose they claim to be.
        check_identities(name, tagged, problems)
        return []
    parsed = subprocess.run(["git", "interpret-trailers", "--parse"],
                            input=message, capture_output=True, text=True,
                            check=False).stdout.splitlines()
    if parsed != block:
        problems.append(f"{name}: git interpret-trailers --parse reads {parsed!r}, "
                        f"the message ends in {block!r}")
    check_identities(name, block, problems)
    return block


def check_series(tree, series):
    name = os.path.basename(os.path.normpath(series))
    files = sorted(glob.glob(os.path.join(series, "*.patch")))
    cover = [f for f in files if os.path.basename(f).startswith("0000-")]
    patches = [os.path.abspath(f) for f in files if f not in cover]
    problems = []
    if not patches:
        return [f"{name}: no patches"], ""
    checks = 0
    for p in patches:
        base = os.path.basename(p)
        headers, message = headers_and_message(open(p, encoding="utf-8").read())
        block = check_trailers(base, message, problems)
        cc = addresses(", ".join(t.split(":", 1)[1] for t in block
                                 if t.lower().startswith("cc:")))
        cc |= addresses(headers.get("to", "") + ", " + headers.get("cc", ""))
        missing = get_maintainer(tree, [p]) - cc
        if missing:
            problems.append(f"{base}: Cc lacks {', '.join(sorted(missing))} "
                            "(scripts/get_maintainer.pl names them)")
        cp = subprocess.run(
            ["perl", "scripts/checkpatch.pl", "--strict", "--terse", "--no-summary",
             "--ignore", "MISSING_SIGN_OFF", p],
            cwd=tree, capture_output=True, text=True, check=False)
        for line in cp.stdout.splitlines():
            if " ERROR: " in line or " WARNING: " in line:
                problems.append(f"{base}: checkpatch: {line.split(': ', 1)[1]}")
            elif " CHECK: " in line:
                checks += 1
                if "checkpatch" not in message:
                    problems.append(f"{base}: checkpatch {line.split(': ', 1)[1]} "
                                    "is not answered in the message")
    wanted = get_maintainer(tree, patches)
    if cover:
        headers, _ = headers_and_message(open(cover[0], encoding="utf-8").read())
        named = addresses(headers.get("to", "") + ", " + headers.get("cc", ""))
        missing = wanted - named
        if missing:
            problems.append(f"{os.path.basename(cover[0])}: To/Cc lack "
                            f"{', '.join(sorted(missing))} (scripts/get_maintainer.pl names them)")
    # A withdrawn series the harness still builds (its cover letter opens
    # a paragraph with "Not for posting") is checked all the same, and the
    # line says it is not a posting.
    withdrawn = bool(cover) and any(
        line.startswith("Not for posting")
        for line in open(cover[0], encoding="utf-8").read().splitlines())
    status = "not for posting (its cover letter says so); as checked: " if withdrawn else ""
    summary = (f"check-posting: {name}: {status}{len(patches)} patches: trailers parse, no "
               f"sign-off, Cc as get_maintainer.pl ({len(wanted)} addresses), "
               f"checkpatch --strict: {checks} checks explained")
    return problems, summary


def main(argv):
    if len(argv) < 3 or not os.path.isfile(os.path.join(argv[1], "scripts/get_maintainer.pl")):
        print(__doc__.split("\n\n")[1] if len(argv) > 1 else __doc__, file=sys.stderr)
        print("usage: check-posting.py PRISTINE_SRC SERIES_DIR...", file=sys.stderr)
        return 2
    failed = False
    for series in argv[2:]:
        problems, summary = check_series(argv[1], series)
        if problems:
            failed = True
            for p in problems:
                print(f"check-posting: {os.path.basename(os.path.normpath(series))}: {p}")
        else:
            print(summary)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
