#!/usr/bin/env python3
"""No circles between the core's files: file A uses file B when A's object
refers to a symbol B's object defines (nm); a set of files that use each
other round a loop is a circle, reported with the symbols that close it.
check_layers.py keeps the folders in order; this keeps the files inside a
folder in order too (a reader can start from the leaves).

Usage: check_circles.py OBJECT...       exit 0 without a circle, else 1
       check_circles.py --self-test     builds a circle in a temporary
                                        directory and expects it caught"""
import os
import re
import subprocess
import sys
import tempfile


def symbols(obj):
    """(defined, undefined) global symbols of one object file."""
    out = subprocess.run(["nm", "-P", obj], capture_output=True, text=True, check=True).stdout
    defs, uses = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        if parts[1] == "U":
            uses.add(parts[0])
        elif parts[1] in "TDBRVWG":
            defs.add(parts[0])
    return defs, uses


def source_name(obj):
    """src/x/y.c for .../src/x/y.c.o (CMake's object names)."""
    m = re.search(r"(src/.*?)\.o$", obj)
    return m.group(1) if m else os.path.basename(obj)


def circles(objs):
    owner, uses = {}, {}
    for o in objs:
        d, u = symbols(o)
        for s in d:
            owner[s] = o
        uses[o] = u
    edges = {o: {owner[s] for s in uses[o] if s in owner and owner[s] != o} for o in objs}
    # Tarjan's strongly connected components, iteratively
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]
    for root in objs:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(comp)
    report = []
    for comp in found:
        names = sorted(source_name(o) for o in comp)
        why = sorted("%s uses %s from %s" % (source_name(a), s, source_name(owner[s]))
                     for a in comp for s in uses[a] if s in owner and owner[s] in comp and owner[s] != a)
        report.append("circle between files: %s (%s)" % (", ".join(names), "; ".join(why)))
    return report


def self_test():
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "src", "x")
        os.makedirs(src)
        files = {"a.c": "int b(void);\nint a(void) { return b(); }\n",
                 "b.c": "int a(void);\nint b(void) { return 1; }\nint c(void) { return a(); }\n",
                 "leaf.c": "int a(void);\nint leaf(void) { return a(); }\n"}
        objs = []
        for name, text in files.items():
            with open(os.path.join(src, name), "w") as f:
                f.write(text)
            obj = os.path.join(src, name + ".o")
            subprocess.run(["cc", "-c", "-o", obj, os.path.join(src, name)], check=True)
            objs.append(obj)
        got = circles(objs)
        ok = len(got) == 1 and "src/x/a.c, src/x/b.c" in got[0] and "leaf" not in got[0] and \
            "src/x/a.c uses b from src/x/b.c" in got[0]
        print("caught: %s" % got[0] if ok else "NOT CAUGHT as expected: %s" % got)
        none = circles([objs[0], objs[2]])
        print("no circle without b.c: %s" % ("yes" if not none else none))
        return 0 if ok and not none else 1


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    objs = [a for a in sys.argv[1:] if a.endswith(".o")]
    if not objs:
        print("usage: check_circles.py OBJECT... | --self-test")
        return 2
    bad = circles(objs)
    for b in bad:
        print(b)
    print("%d circle(s) between the core's %d files" % (len(bad), len(objs)) if bad
          else "no circle between the core's %d files" % len(objs))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
