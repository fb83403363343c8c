#!/usr/bin/env bash
# Two rules for src/**/*.{h,cc}, checked by ctest (script.check_sources) and runnable by hand:
#   scripts/check-sources.sh [root]
#
# Rule 1: no measured figures in comments. Measurements live in docs/journal.md (machine and date beside
#   each); a comment keeps the decision and its reason and points there. Flagged in a comment:
#   - a rate: a number followed by GB/s, MB/s, GiB/s, MiB/s, Gbit/s, Mbit/s;
#   - a ratio: a number with an x right after it (1.7x, 0.65×); "1000 x NAME" (a multiplier) is not one;
#   - a date: 2026-11-27;
#   - a time (us, µs, ns, ms, s) that reads as measured: a decimal (0.3 s), a range (1.2-1.7 ms), "about"/
#     "~"/"≈" before it, or a line that compares or reports a run ("->", "instead of", "against", "vs",
#     "took", "measured"). A plain chosen value ("10 s, then the next address", "back-off 100 ms") passes,
#     as do sizes (64 KiB, 4096 bytes).
#   A line that states a contract (a timeout users rely on) may end with `// figure-ok: <reason>`.
# Rule 2: data-path copies outside src/base/ go through the copy family of src/base/memcopy.h
#   (tessera::memcopy, copy). `memcpy(` / `std::memcpy(` is flagged unless its size is a compile-time
#   constant (sizeof terms and literals joined by + or *; a bare literal at most 64), or a line of the call
#   ends with `// copy-ok: <reason>` (a header, a key, a word reinterpreted).
# Comments and string literals are told apart from code, so prose naming memcpy() and code in strings are
# not judged by the other rule.
set -u
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
# ctest passes the build directory to scripts; only a directory with src/ is a source tree.
[ -d "$root/src" ] || root=$(cd "$(dirname "$0")/.." && pwd)
exec python3 - "$root" <<'PY'
import os, re, sys

root = sys.argv[1]
src = os.path.join(root, "src")

# One pass over a file's text: comments, string/char literals and code, with line numbers kept.
TOKEN = re.compile(r'''
    (?P<line>//[^\n]*)
  | (?P<block>/\*.*?\*/)
  | (?P<raw>R"(?P<delim>[^()\\\s]{0,16})\(.*?\)(?P=delim)")
  | (?P<str>"(?:[^"\\\n]|\\.)*")
  | (?P<chr>(?<![\w])'(?:[^'\\\n]|\\.)*')
''', re.S | re.X)


def split(text):
    """Returns (code, comments): code is text with comments and literals blanked (newlines kept);
    comments maps line number -> comment text on that line."""
    code = []
    comments = {}
    pos = 0
    for m in TOKEN.finditer(text):
        code.append(text[pos:m.start()])
        tok = m.group(0)
        if m.group("line") or m.group("block"):
            first = text.count("\n", 0, m.start()) + 1
            for i, part in enumerate(tok.split("\n")):
                comments[first + i] = comments.get(first + i, "") + " " + part
            code.append(re.sub(r"[^\n]", " ", tok))
        else:
            code.append(tok[0] + re.sub(r"[^\n]", " ", tok[1:-1]) + tok[-1])
        pos = m.end()
    code.append(text[pos:])
    return "".join(code), comments


NUM = r"(?<![\w.])\d+(?:[.,']\d+)*"
RATE = re.compile(NUM + r"\s?(?:GB|MB|GiB|MiB|Gbit|Mbit|Gb|Mb)/s\b")
RATIO = re.compile(NUM + r"[x×](?![\w])")
DATE = re.compile(r"\b(?:19|20)\d\d-[01]\d-[0-3]\d\b")
TIME = re.compile(r"(?P<lead>(?:about|around|roughly|nearly|~|≈)\s*)?"
                  r"(?P<range>" + NUM + r"\s?(?:-|–|—|to)\s?)?"
                  r"(?P<num>" + NUM + r")\s?(?:us|µs|ns|ms|s)\b")
REPORT = re.compile(r"->|→|\binstead of\b|\bagainst\b|\bvs\.?\b|\btook\b|\bmeasured\b")
FIGURE_OK = re.compile(r"//\s*figure-ok:\s*\S")
COPY_OK = re.compile(r"//\s*copy-ok:\s*\S")


def measured_time(comment):
    report = REPORT.search(comment)
    for m in TIME.finditer(comment):
        if m.group("lead") or m.group("range") or "." in m.group("num") or report:
            return m.group(0).strip()
    return None


def figure(comment):
    for rx, what in ((DATE, "a date"), (RATE, "a rate"), (RATIO, "a ratio")):
        m = rx.search(comment)
        if m:
            return what, m.group(0)
    t = measured_time(comment)
    return ("a measured time", t) if t else None


def args_of(code, open_paren):
    """The top-level arguments of the call whose '(' is at open_paren, and the index after ')'."""
    depth, start, args = 0, open_paren + 1, []
    for i in range(open_paren, len(code)):
        c = code[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                args.append(code[start:i])
                return args, i + 1
        elif c == "," and depth == 1:
            args.append(code[start:i])
            start = i + 1
    return args, len(code)


def strip_sizeof(expr):
    out, i = [], 0
    while True:
        m = re.compile(r"\bsizeof\b\s*").search(expr, i)
        if not m:
            out.append(expr[i:])
            return "".join(out)
        out.append(expr[i:m.start()] + " S ")
        j = m.end()
        if j < len(expr) and expr[j] == "(":
            _, j = args_of(expr, j)
        else:
            j = re.compile(r"[*&\s]*[\w.:>-]*").match(expr, j).end()
        i = j


LITERAL = re.compile(r"(\d+)[uUlLzZ]*")
CONSTANT = re.compile(r"\(?\s*(?:S|\d+[uUlLzZ]*)(?:\s*[*+]\s*(?:S|\d+[uUlLzZ]*))*\s*\)?")


def constant_size(expr):
    e = " ".join(expr.split())
    lit = LITERAL.fullmatch(e)
    if lit:
        return int(lit.group(1)) <= 64
    e = strip_sizeof(e).strip()
    return "S" in e and CONSTANT.fullmatch(e) is not None


CALL = re.compile(r"(?<![\w.>])(?:std\s*::\s*|::\s*)?memcpy\s*\(")

problems = []
comments_seen = calls_seen = 0
for dirpath, dirnames, filenames in os.walk(src):
    dirnames.sort()
    for name in sorted(filenames):
        if not name.endswith((".h", ".cc")):
            continue
        path = os.path.join(dirpath, name)
        rel = os.path.relpath(path, root)
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        code, comments = split(text)
        lines = text.split("\n")

        for n in sorted(comments):
            comments_seen += 1
            line = lines[n - 1]
            if FIGURE_OK.search(line):
                continue
            hit = figure(comments[n])
            if hit:
                problems.append(
                    f"{rel}:{n}: rule 1 (no measured figures in src/ comments): {hit[0]} '{hit[1]}'. "
                    "Keep the decision and its reason, move the figure to docs/journal.md (machine, date) "
                    "and point there; a contract value may end the line with `// figure-ok: <reason>`.")

        if rel.startswith("src" + os.sep + "base" + os.sep):
            continue
        for m in CALL.finditer(code):
            calls_seen += 1
            args, end = args_of(code, m.end() - 1)
            first = code.count("\n", 0, m.start()) + 1
            last = code.count("\n", 0, end) + 1
            if any(COPY_OK.search(lines[k - 1]) for k in range(first, last + 1)):
                continue
            size = args[2].strip() if len(args) == 3 else "?"
            if constant_size(size):
                continue
            problems.append(
                f"{rel}:{first}: rule 2 (data-path copies go through base/memcopy.h): memcpy of '{size}' bytes. "
                "Use tessera::memcopy(dst, src, n) (#include \"base/memcopy.h\"; dst and src must not overlap), "
                "or end the line with `// copy-ok: <reason>` for a header, key or word copy.")

for p in problems:
    print("FAIL " + p)
print(f"check-sources: {comments_seen} comment lines and {calls_seen} memcpy calls outside src/base checked, "
      f"{len(problems)} failed")
sys.exit(1 if problems else 0)
PY
