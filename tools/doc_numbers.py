#!/usr/bin/python3
"""Reruns the figures README.md and docs/ quote and says which moved.

Every documented figure that a command of this repository produces is listed once in
docs/numbers.toml: the file that quotes it, the text it is quoted in, the command, and where in
the command's output the value is. Two kinds, kept apart:

  simulated  a number the simulator computes: deterministic, so the rerun must give the quoted
             digits exactly (rounded as the document rounds them);
  wall       a time measured on a machine (a sweep's wall time): noisy, so the document quotes a
             range and names the machine; the rerun must fall inside the range.

Run it before submitting a change that may move numbers (docs/testing.md, "Documented numbers"):

  /usr/bin/python3 tools/doc_numbers.py                  # every figure
  /usr/bin/python3 tools/doc_numbers.py --only llama     # the figures whose id starts so
  /usr/bin/python3 tools/doc_numbers.py --check-text     # only that each quoted text is still there
  /usr/bin/python3 tools/doc_numbers.py --update         # also rewrite each moved simulated figure

--update writes the current value of each moved simulated figure into its document and into the
manifest, as the document wrote it (its decimals, sign and thousands commas); the prose around
a number is not rewritten, so read each change: a moved figure can make a sentence wrong.

Exit status: 0 when every figure holds, 1 when one moved or its quoted text is gone, 2 for a bad
manifest or a command that failed.
"""
import argparse
import csv
import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KINDS = ("simulated", "wall")


def machine_label():
    """This machine, as a wall figure names it: CPU model and logical CPUs."""
    model = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} CPUs"


def load_manifest(path):
    """The figures of `path`, checked: each has the keys its kind needs."""
    with open(path, "rb") as f:
        data = tomllib.load(f)
    figures = data.get("figure", [])
    seen = set()
    for i, fig in enumerate(figures):
        where = f"{path}: figure {i + 1} ({fig.get('id', '?')})"
        for key in ("id", "doc", "text", "quoted", "kind", "command", "value"):
            if key not in fig:
                raise SystemExit(f"doc_numbers: {where}: missing '{key}'")
        if fig["kind"] not in KINDS:
            raise SystemExit(f"doc_numbers: {where}: kind must be one of {', '.join(KINDS)}")
        if fig["quoted"] not in fig["text"]:
            raise SystemExit(f"doc_numbers: {where}: quoted '{fig['quoted']}' is not in its text '{fig['text']}'")
        if fig["kind"] == "wall" and len(fig.get("range", [])) != 2:
            raise SystemExit(f"doc_numbers: {where}: a wall figure needs range = [low, high]")
        if fig["id"] in seen:
            raise SystemExit(f"doc_numbers: {where}: id given twice")
        seen.add(fig["id"])
    return figures


def text_present(fig):
    """Whether the document still quotes the figure's text (whitespace and line breaks folded)."""
    with open(os.path.join(ROOT, fig["doc"])) as f:
        doc = " ".join(f.read().split())
    return " ".join(fig["text"].split()) in doc


def extract(spec, out_dir, stdout):
    """The value `spec` names: "json:FILE:a.b.c" (FILE under the output folder), "stdout:REGEX"
    (its first group, thousands commas dropped) or "csv:FILE:COL=V,COL=V:COLUMN" (COLUMN of the
    one row of FILE whose columns equal those values)."""
    how, _, rest = spec.partition(":")
    if how == "csv":
        file, match, column = rest.split(":")
        want = dict(kv.split("=", 1) for kv in match.split(",")) if match else {}
        with open(os.path.join(out_dir, file), newline="") as f:
            rows = [r for r in csv.DictReader(f) if all(r.get(k) == v for k, v in want.items())]
        if len(rows) != 1:
            raise ValueError(f"{len(rows)} rows of {file} match {match!r} (expected one)")
        return float(rows[0][column])
    if how == "json":
        file, _, path = rest.partition(":")
        with open(os.path.join(out_dir, file)) as f:
            node = json.load(f)
        for part in path.split("."):
            node = node[int(part)] if isinstance(node, list) else node[part]
        return float(node)
    if how == "stdout":
        m = re.search(rest, stdout, re.M)
        if not m:
            raise ValueError(f"no match for {rest!r} in the command's output")
        return float(m.group(1).replace(",", ""))
    raise ValueError(f"unknown value spec {spec!r} (json:FILE:PATH or stdout:REGEX)")


def decimals_of(quoted):
    """Digits after the point of a quoted number ("34.2" -> 1, "1,280" -> 0)."""
    num = re.search(r"[-+]?[\d,]*\.?\d+", quoted).group(0)
    return len(num.split(".")[1]) if "." in num else 0


def quoted_number(quoted):
    return float(re.search(r"[-+]?[\d,]*\.?\d+", quoted).group(0).replace(",", ""))


def formatted_like(quoted, value):
    """`value` written as the number in `quoted` is: its decimals, a leading '+' and thousands commas."""
    num = re.search(r"[-+]?[\d,]*\.?\d+", quoted).group(0)
    d = decimals_of(quoted)
    text = f"{value:,.{d}f}" if "," in num else f"{value:.{d}f}"
    if num.startswith("+") and value >= 0:
        text = "+" + text
    return quoted.replace(num, text, 1)


def folded_match(doc, text):
    """The one place `text` appears in `doc` (whitespace runs matching any whitespace), or None."""
    hits = list(re.finditer(r"\s+".join(re.escape(w) for w in text.split()), doc))
    return hits[0] if len(hits) == 1 else None


def find_number(text, quoted):
    """Where `quoted` stands in `text` as a whole number (not inside a longer one: "51.4" is not
    found in "151.4"), or -1."""
    m = re.search(r"(?<![\d.])" + re.escape(quoted) + r"(?![\d])", text)
    return m.start() if m else -1


def update_figure(fig, now_quoted, manifest_text, figures):
    """Writes `now_quoted` for `fig`'s quoted number into its document (the one place its text
    appears, line breaks as they are) and returns the manifest text with the figure's text and
    quoted updated; None when the document's text is not found exactly once."""
    path = os.path.join(ROOT, fig["doc"])
    with open(path) as f:
        doc = f.read()
    words = fig["text"].split()
    pattern = r"\s+".join(re.escape(w) for w in words)
    hits = list(re.finditer(pattern, doc))
    if len(hits) != 1:
        return None
    span = doc[hits[0].start():hits[0].end()]
    at = find_number(span, fig["quoted"])
    if at < 0:  # the quoted number spans a line break: not rewritten
        return None
    new_span = span[:at] + now_quoted + span[at + len(fig["quoted"]):]
    t_at = find_number(fig["text"], fig["quoted"])
    new_text = fig["text"][:t_at] + now_quoted + fig["text"][t_at + len(fig["quoted"]):]

    def toml_str(v):
        return json.dumps(v)  # a TOML basic string is a JSON string for this text
    # every figure quoting these words (two numbers of one sentence) gets the new text
    old_line, new_line = "text = " + toml_str(fig["text"]), "text = " + toml_str(new_text)
    if old_line not in manifest_text:
        return None
    manifest_text = manifest_text.replace(old_line, new_line)
    block = re.search(r'id = ' + re.escape(toml_str(fig["id"])) + r'\n(.*?)(?=\n\[\[figure\]\]|\Z)', manifest_text, re.S)
    if not block:
        return None
    body = block.group(1).replace("quoted = " + toml_str(fig["quoted"]), "quoted = " + toml_str(now_quoted), 1)
    manifest_text = manifest_text[:block.start(1)] + body + manifest_text[block.end(1):]
    new_doc = doc[:hits[0].start()] + new_span + doc[hits[0].end():]
    # other figures whose words take in the edited number (a table row quoted cell by cell) are
    # the same words with the new number
    edit_at, delta = hits[0].start() + at, len(now_quoted) - len(fig["quoted"])
    for other in figures:
        if other is fig or other["doc"] != fig["doc"] or other["text"] == fig["text"]:
            continue
        m = folded_match(doc, other["text"])
        if not m or not (m.start() <= edit_at < m.end()):
            continue
        other_new = " ".join(new_doc[m.start():m.end() + delta].split())
        line_old, line_new = "text = " + toml_str(other["text"]), "text = " + toml_str(other_new)
        if line_old in manifest_text:
            manifest_text = manifest_text.replace(line_old, line_new)
            other["text"] = other_new
    with open(path, "w") as f:  # the document last: nothing is written when the manifest has no such entry
        f.write(new_doc)
    for other in figures:  # figures sharing the exact words
        if other is not fig and other["doc"] == fig["doc"] and other["text"] == fig["text"]:
            other["text"] = new_text
    fig["text"], fig["quoted"] = new_text, now_quoted
    return manifest_text


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--manifest", default=os.path.join(ROOT, "docs", "numbers.toml"))
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "archsim"), help="the archsim binary")
    ap.add_argument("--only", default="", help="only the figures whose id starts with this")
    ap.add_argument("--check-text", action="store_true", help="only check that every quoted text is still in its document")
    ap.add_argument("--runs", default="", help="keep each command's outputs under this folder and reuse them on the next call "
                    "(to re-check or --update without running again); default: a temporary folder")
    ap.add_argument("--update", action="store_true", help="write each moved simulated figure's current value into its document and the manifest")
    args = ap.parse_args()
    figures = [f for f in load_manifest(args.manifest) if f["id"].startswith(args.only)]
    missing = [f for f in figures if not text_present(f)]
    for f in missing:
        print(f"TEXT GONE  {f['id']}: {f['doc']} no longer says '{f['text']}' (update docs/numbers.toml with the document)")
    if args.check_text:
        print(f"{len(figures) - len(missing)} of {len(figures)} quoted texts found")
        return 1 if missing else 0
    runs = {}  # one run per distinct command
    moved = failed = held = 0
    label = machine_label()
    with tempfile.TemporaryDirectory(prefix="doc_numbers_") as tmp:
        keep = os.path.abspath(args.runs) if args.runs else tmp
        for fig in figures:
            cmd = fig["command"]
            if cmd not in runs:
                out_dir = os.path.join(keep, hashlib.sha1(cmd.encode()).hexdigest()[:16])
                done = os.path.join(out_dir, ".doc_numbers.json")
                if args.runs and os.path.exists(done):  # kept from an earlier call
                    with open(done) as f:
                        kept = json.load(f)
                    p = subprocess.CompletedProcess(cmd, kept["rc"], kept["stdout"], kept["stderr"])
                    runs[cmd] = (out_dir, p, kept["wall_s"])
                else:
                    shutil.rmtree(out_dir, ignore_errors=True)
                    os.makedirs(out_dir)
                    line = cmd.replace("{bin}", shlex.quote(args.bin)).replace("{out}", shlex.quote(out_dir))
                    t0 = time.monotonic()
                    p = subprocess.run(line, shell=True, cwd=ROOT, capture_output=True, text=True)
                    runs[cmd] = (out_dir, p, time.monotonic() - t0)
                    with open(done, "w") as f:
                        json.dump({"rc": p.returncode, "stdout": p.stdout, "stderr": p.stderr, "wall_s": runs[cmd][2]}, f)
            out_dir, p, wall_s = runs[cmd]
            if p.returncode != 0:
                print(f"FAILED     {fig['id']}: exit {p.returncode}: {p.stderr.strip().splitlines()[-1:] or ''}")
                failed += 1
                continue
            try:
                value = wall_s if fig["value"] == "wall_s" else extract(fig["value"], out_dir, p.stdout)
            except (OSError, KeyError, IndexError, ValueError) as e:
                print(f"FAILED     {fig['id']}: {e}")
                failed += 1
                continue
            value *= fig.get("scale", 1.0)
            quoted = fig["quoted"]
            if fig["kind"] == "simulated":
                d = decimals_of(quoted)
                now = f"{round(value, d):,.{d}f}" if "," in quoted else f"{round(value, d):.{d}f}"
                ok = abs(round(value, d) - quoted_number(quoted)) < 0.5 * 10 ** -d
                status = "ok" if ok else "MOVED"
                print(f"{status:<10} {fig['id']}: {fig['doc']} quotes {quoted}, now {now} (simulated, exact to the quoted digits)")
                if not ok and args.update:
                    with open(args.manifest) as f:
                        manifest_text = f.read()
                    new_quoted = formatted_like(quoted, value)
                    old_text = fig["text"]
                    updated = update_figure(fig, new_quoted, manifest_text, figures)
                    if updated is None:
                        print(f"           not updated: '{old_text}' is not found once in {fig['doc']} with the number on one line")
                    else:
                        with open(args.manifest, "w") as f:
                            f.write(updated)
                        print(f"           updated: {fig['doc']} now says '{fig['text']}'")
            else:
                lo, hi = fig["range"]
                ok = lo <= value <= hi
                status = "ok" if ok else "MOVED"
                print(f"{status:<10} {fig['id']}: {fig['doc']} quotes {quoted} (range {lo}-{hi}), now {value:.3g} "
                      f"(wall time on {label}; noisy)")
            moved += not ok
            held += ok and fig not in missing
    print(f"\n{len(figures)} figures: {held} hold, {moved} moved, "
          f"{failed} failed, {len(missing)} quoted texts gone")
    return 2 if failed else (1 if moved or missing else 0)


if __name__ == "__main__":
    sys.exit(main())
