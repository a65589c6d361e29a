#!/usr/bin/env python3
"""The dependency rule of docs/ARCHITECTURE.md, checked on every #include.

src/ is split into stage folders in data-flow order (LAYERS below). A file
in one folder may include headers of its own folder and of folders before
it, never after: no include circles between folders. Public headers
(include/mergetrace/*.h) belong to the folder that implements them (PUBLIC
below) and obey the same rule; they never include src/ headers. mpi/ and
bench/ use the public headers only; nothing in src/ or include/ includes
<mpi.h>. Exit 0 when every include obeys, else 1 with one line per breach.

Usage: check_layers.py [REPO_ROOT]
       check_layers.py --self-test [REPO_ROOT]   (the rule must catch
       deliberately wrong includes in a copy of the tree)"""
import os
import re
import sys

LAYERS = ["base", "io", "trace", "align", "nccl", "fr", "rank", "cross", "report", "merge", "discover"]

# Each public header and the folder whose code it fronts.
PUBLIC = {
    "version.h": "base", "status.h": "base", "buf.h": "base", "strtab.h": "base", "warnings.h": "base", "heap.h": "base", "launcher.h": "base", "suggest.h": "base", "tworld.h": "base",
    "input.h": "io", "gzout.h": "io",
    "trace.h": "trace", "loader.h": "trace", "classify.h": "trace",
    "link.h": "trace", "rank.h": "trace", "summary.h": "trace", "nsys.h": "trace", "timeline.h": "trace",
    "collectives.h": "align", "comm.h": "align",
    "nccl_input.h": "nccl", "nccl_inspector.h": "nccl", "nccl_join.h": "nccl",
    "fr_hang.h": "fr", "fr_share.h": "fr",
    "analysis.h": "rank", "chunks.h": "rank",
    "crossrank.h": "cross", "critpath.h": "cross", "tljob.h": "cross", "pipeline.h": "cross", "gates.h": "cross",
    "trust.h": "cross", "memory.h": "cross",
    "report.h": "report", "report_html.h": "report", "report_timings.h": "report", "compare.h": "report",
    "merge.h": "merge", "merged_layout.h": "merge", "discover.h": "discover", "outdir.h": "discover", "ingest.h": "discover", "job_state.h": "discover", "tl_run.h": "discover", "job_outputs.h": "discover",
    "mergetrace.h": None,  # the umbrella: every public header, for programs
}

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)


def includes(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    for m in INCLUDE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        yield line, m.group(1), m.group(2)


def layer_of_header(root, name):
    """(layer index, None) for a quoted include, or (None, why) when it breaks a rule."""
    if name.startswith("mergetrace/"):
        base = name[len("mergetrace/"):]
        if base not in PUBLIC:
            return None, "public header %s is not in check_layers.py's PUBLIC table" % name
        if not os.path.exists(os.path.join(root, "include", name)):
            return None, "no such public header"
        folder = PUBLIC[base]
        return (len(LAYERS) if folder is None else LAYERS.index(folder)), None
    folder = name.split("/", 1)[0]
    if folder in LAYERS and "/" in name:
        if not os.path.exists(os.path.join(root, "src", name)):
            return None, "no such header under src/"
        return LAYERS.index(folder), None
    return None, "not a stage header (expected \"mergetrace/x.h\" or \"<folder>/x.h\")"


def check(root):
    bad = []

    def say(path, line, msg):
        bad.append("%s:%d: %s" % (os.path.relpath(path, root), line, msg))

    def walk(top, exts):
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if f.endswith(exts):
                    yield os.path.join(d, f)

    # src/: only its own folder and the folders before it
    for path in walk("src", (".c", ".h")):
        rel = os.path.relpath(path, os.path.join(root, "src"))
        folder = rel.split(os.sep)[0]
        if folder not in LAYERS or os.sep not in rel:
            say(path, 1, "file outside the stage folders %s" % LAYERS)
            continue
        me = LAYERS.index(folder)
        for line, kind, name in includes(path):
            if kind == "<":
                if name == "mpi.h":
                    say(path, line, "the core never includes <mpi.h>")
                continue
            lay, why = layer_of_header(root, name)
            if why:
                say(path, line, "#include \"%s\": %s" % (name, why))
            elif lay > me:
                say(path, line, "#include \"%s\": %s/ may not use %s/ (after it in %s)"
                    % (name, folder, LAYERS[lay] if lay < len(LAYERS) else "the umbrella", " < ".join(LAYERS)))

    # public headers: the same rule, and never a src/ header
    for path in walk("include", (".h",)):
        base = os.path.basename(path)
        if base not in PUBLIC:
            say(path, 1, "public header not in check_layers.py's PUBLIC table")
            continue
        me = len(LAYERS) if PUBLIC[base] is None else LAYERS.index(PUBLIC[base])
        for line, kind, name in includes(path):
            if kind == "<":
                if name == "mpi.h":
                    say(path, line, "public headers never include <mpi.h>")
                continue
            if not name.startswith("mergetrace/"):
                say(path, line, "#include \"%s\": a public header includes only public headers" % name)
                continue
            lay, why = layer_of_header(root, name)
            if why:
                say(path, line, "#include \"%s\": %s" % (name, why))
            elif lay > me:
                say(path, line, "#include \"%s\": a %s header may not use %s (after it)"
                    % (name, PUBLIC[base], LAYERS[lay] if lay < len(LAYERS) else "the umbrella"))

    # the umbrella names every public header
    umbrella = os.path.join(root, "include", "mergetrace", "mergetrace.h")
    named = {n for _, k, n in includes(umbrella) if k == '"'}
    for base in sorted(PUBLIC):
        if base != "mergetrace.h" and "mergetrace/" + base not in named:
            say(umbrella, 1, "the umbrella header does not include mergetrace/%s" % base)

    # the program and the benchmarks: public headers and their own only
    for top in ("mpi", "bench"):
        for path in walk(top, (".c", ".h")):
            own = os.path.dirname(path)
            for line, kind, name in includes(path):
                if kind == "<":
                    continue
                if name.startswith("mergetrace/") or os.path.exists(os.path.join(own, name)) or (
                        top == "bench" and os.path.exists(os.path.join(root, "mpi", name))):
                    continue
                say(path, line, "#include \"%s\": %s/ uses the public API (include/mergetrace/) only" % (name, top))

    # the program's messages go through say() (mpi/say.h), which escapes a
    # control character in a file name; only the progress line (it starts
    # with a carriage return and names no file) is written directly
    for path in walk("mpi", (".c",)):
        if path.endswith("say.c"):
            continue
        with open(os.path.join(root, path), encoding="utf-8") as f:
            text = f.read()
        for m in re.finditer(r"\bv?fprintf\(\s*stderr\s*,\s*(\S)", text):
            if not text.startswith('"\\r', m.start(1)):
                say(path, text.count("\n", 0, m.start()) + 1, "a message on stderr goes through say() (mpi/say.h)")
    return bad


def self_test(root):
    """Copy the tree, break the rule in several ways, and expect each caught."""
    import shutil
    import tempfile
    cases = [
        ("src/base/buf.c", '#include "cross/passes.h"\n', "base/ may not use cross/"),
        ("src/trace/loader.c", '#include "mergetrace/report.h"\n', "trace/ may not use report/"),
        ("src/align/clock.c", "#include <mpi.h>\n", "never includes <mpi.h>"),
        ("include/mergetrace/trace.h", '#include "base/grow.h"\n', "only public headers"),
        ("include/mergetrace/buf.h", '#include "mergetrace/merge.h"\n', "may not use merge"),
        ("mpi/options.c", '#include "rank/passes.h"\n', "public API (include/mergetrace/) only"),
        ("mpi/job.c", 'static void f(void) { fprintf(stderr, "%s\\n", "x"); }\n', "goes through say()"),
    ]
    failed = 0
    for rel, line, expect in cases:
        with tempfile.TemporaryDirectory() as tmp:
            for top in ("src", "include", "mpi", "bench"):
                shutil.copytree(os.path.join(root, top), os.path.join(tmp, top))
            with open(os.path.join(tmp, rel), "a", encoding="utf-8") as f:
                f.write(line)
            bad = check(tmp)
            hit = [b for b in bad if b.startswith(rel + ":") and expect in b]
            if hit and len(bad) == 1:
                print("caught: %s" % hit[0])
            else:
                failed += 1
                print("NOT CAUGHT as expected: %s in %s -> %s" % (line.strip(), rel, bad))
    print("%d passed, %d failed" % (len(cases) - failed, failed))
    return 1 if failed else 0


def main():
    args = sys.argv[1:]
    test = bool(args) and args[0] == "--self-test"
    if test:
        args = args[1:]
    root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    root = os.path.abspath(root)
    if test:
        return self_test(root)
    bad = check(root)
    for b in bad:
        print(b)
    print("dependency rule: %d breach(es)" % len(bad) if bad else "dependency rule: every include obeys it")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
