#!/usr/bin/env python3
"""Broken and hostile inputs: each case builds its input at test time (in
WORK, never committed), runs mergetrace and checks the exit code, the one
error line (or a warning line) and, where the run succeeds, report.json
(parsed strictly: UTF-8, no NaN) against numbers worked out here from the
input itself or from the generator's truth.json.  Every input file is
checksummed before and after each run: inputs are never written.

Usage: run_hostile.py --mergetrace BIN --gen scripts/gen_traces.py --work DIR
       [--only NAME] [--big | --big-only]   (the 100 MB string and 10^6 args)
Exit 0 all passed, 1 a failure, 77 a needed tool is missing."""

import argparse
import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import zlib
from decimal import Decimal

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "gen"))
import run_gen_checks  # noqa: E402  (clock_errors: the truth-based clock check)

HDR = ('{"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": %d, "world_size": %d},\n'
       ' "traceEvents": [\n')
TAIL = '\n ],\n "baseTimeNanoseconds": 1767189312000000000}\n'


def ev(**kw):
    e = {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 100, "dur": 1}
    e.update(kw)
    return json.dumps(e)


def trace(events, rank=0, world=1):
    return HDR % (rank, world) + ",\n".join(events) + TAIL


class Fail(Exception):
    pass


class Runner:
    def __init__(self, args):
        self.bin = args.mergetrace
        self.gen = args.gen
        self.work = os.path.abspath(args.work)
        self.env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                        ASAN_OPTIONS="detect_leaks=0")
        self.gen_cache = {}

    def d(self, name):
        p = os.path.join(self.work, name)
        shutil.rmtree(p, ignore_errors=True)
        os.makedirs(p)
        return p

    def write(self, path, data):
        with open(path, "wb") as f:
            f.write(data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data)

    def generate(self, name, *opts):
        """A generated job (cached per option set), copied to a fresh dir."""
        key = opts
        if key not in self.gen_cache:
            src = self.d("gen-%d" % len(self.gen_cache))
            subprocess.run([sys.executable, self.gen, "--out", src, "--quiet"] + list(opts), check=True)
            self.gen_cache[key] = src
        dst = self.d(name)
        shutil.rmtree(dst)
        shutil.copytree(self.gen_cache[key], dst)
        return dst

    def run(self, args, prefix=None, timeout=300):
        """Run mergetrace; checksums every regular file under the input
        paths before and after (inputs are never written)."""
        out = os.path.join(self.work, "out")
        shutil.rmtree(out, ignore_errors=True)
        ins = [a for a in args if os.path.exists(a)]
        before = sums(ins)
        cmd = (prefix or []) + [self.bin, "--no-progress", "--color=never", "-o", out] + args
        p = subprocess.run(cmd, capture_output=True, env=self.env, timeout=timeout)
        after = sums(ins)
        if before != after:
            raise Fail("an input changed during the run: %s" % sorted(set(before.items()) ^ set(after.items())))
        self.out = out
        return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")

    def report(self):
        """report.json, strictly: valid UTF-8, no NaN/Infinity."""
        with open(os.path.join(self.out, "report.json"), "rb") as f:
            raw = f.read()
        text = raw.decode("utf-8")  # raises on invalid UTF-8

        def no_const(c):
            raise Fail("report.json holds %s" % c)
        return json.loads(text, parse_float=Decimal, parse_constant=no_const)


def sums(paths):
    out = {}
    for top in paths:
        walk = [(top, [], [os.path.basename(top)])] if os.path.isfile(top) else os.walk(top)
        for root, _, files in walk:
            base = os.path.dirname(top) if os.path.isfile(top) else root
            for fn in files:
                p = os.path.join(base, fn)
                if os.path.isfile(p) and not os.path.islink(p):
                    with open(p, "rb") as f:
                        out[p] = hashlib.sha256(f.read()).hexdigest()
    return out


def expect(code, err, want_code, pattern):
    lines = [ln for ln in err.splitlines() if ln.strip()]
    if code != want_code:
        raise Fail("exit %d, want %d; stderr: %s" % (code, want_code, err.strip()[:500]))
    if pattern is None:
        if lines:
            raise Fail("unexpected stderr: %s" % err.strip()[:500])
        return
    if len(lines) != 1:
        raise Fail("want one error line, got %d: %s" % (len(lines), err.strip()[:800]))
    if not re.fullmatch(pattern, lines[0]):
        raise Fail("error line %r does not match %r" % (lines[0], pattern))


def has_line(out, pattern):
    if not any(re.fullmatch(pattern, ln) for ln in out.splitlines()):
        raise Fail("no line matching %r in stdout:\n%s" % (pattern, out[-2000:]))


def event_ends(text):
    """Offsets just past each complete element of traceEvents, found with
    Python's own decoder (independent of the loader)."""
    start = text.index("[", text.index('"traceEvents"')) + 1
    dec = json.JSONDecoder()
    ends, i = [], start
    while True:
        while i < len(text) and text[i] in " \t\r\n,":
            i += 1
        if i >= len(text) or text[i] == "]":
            return ends
        _, i = dec.raw_decode(text, i)
        ends.append(i)


# ---------------------------------------------------------------- cases

def case_empty_dir(R):
    d = R.d("empty")
    code, _, err = R.run([d])
    expect(code, err, 2, re.escape("mergetrace: %s: no *.json, *.jsonl or *.log files (or .gz) or *.sqlite exports in this directory "
                                   "(use -r for sub-directories)" % d))


def case_zero_byte(R):
    d = R.d("zero")
    R.write(d + "/rank-0.json", "")
    code, _, err = R.run([d])
    expect(code, err, 2, re.escape("mergetrace: %s/rank-0.json: rank 0: not a Kineto trace: empty file" % d))


def case_unreadable(R):
    """chmod 000 stops nobody who is root, so as root the file is read as
    user nobody (setpriv) when possible; a dangling link and a directory
    named like a trace are unreadable for everyone."""
    d = R.d("unreadable")
    R.write(d + "/rank-0.json", trace([ev()]))
    os.chmod(d + "/rank-0.json", 0)
    prefix = None
    if os.getuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv:
            prefix = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
    if os.getuid() != 0 or prefix:
        code, _, err = R.run([d], prefix=prefix)
        expect(code, err, 1, re.escape("mergetrace: %s/rank-0.json: rank 0: I/O error: cannot open (Permission denied)"
                                       % d))
    else:
        print("     (root without setpriv: the chmod 000 part is not checked)")
    os.chmod(d + "/rank-0.json", 0o644)
    d = R.d("dangling")
    R.write(d + "/rank-1.json", trace([ev()], 1, 2))
    os.symlink(d + "/gone.json", d + "/rank-0.json")
    code, _, err = R.run([d])
    expect(code, err, 1, re.escape("mergetrace: %s/rank-0.json: cannot read (No such file or directory)" % d))
    d = R.d("dirname")
    R.write(d + "/rank-1.json", trace([ev()], 1, 2))
    os.mkdir(d + "/rank-0.json")
    code, _, err = R.run([d])
    expect(code, err, 2, re.escape("mergetrace: %s/rank-0.json: a directory named like a trace (-r looks inside)" % d))
    os.mkfifo(d + "/rank-0.json/fifo.json")
    code, _, err = R.run([d + "/rank-0.json/fifo.json"], timeout=30)
    expect(code, err, 2, re.escape("mergetrace: %s/rank-0.json/fifo.json: not a regular file" % d))


def case_not_a_trace(R):
    d = R.d("notrace")
    R.write(d + "/config.json", '{"lr": 0.1, "layers": [1, 2]}')
    code, _, err = R.run([d])
    expect(code, err, 2, re.escape('mergetrace: no trace among the 1 JSON file found (%s/config.json: valid JSON '
                                   'but no "traceEvents" array)' % d))


def truncation_cases(R, gz):
    src = R.generate("trunc-src", "--ranks", "2", "--steps", "2")
    text = open(src + "/rank-1.json").read()
    ends = event_ends(text)
    full = text.encode()
    blob = gzip.compress(full, 6) if gz else full
    name = "rank-1.json.gz" if gz else "rank-1.json"
    d = R.d("trunc-gz" if gz else "trunc")
    shutil.copy(src + "/rank-0.json", d)
    n = len(blob)
    last = n - 1 if gz else len(full.rstrip()) - 1  # plain: a cut in the trailing newline loses nothing
    cuts = sorted(set([n // 2, last] + [n * k // 23 for k in range(3, 23)]))
    for cut in cuts:
        part = blob[:cut]
        R.write(d + "/" + name, part)
        if gz:
            plain = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(part)
        else:
            plain = part
        want = sum(1 for e in ends if e <= len(plain))
        code, out, err = R.run([d, "--no-merge"])
        expect(code, err, 0, None)
        r = R.report()
        inp = {i["rank"]: i for i in r["inputs"]}[1]
        if not inp["truncated"] or inp["events"] != want:
            raise Fail("cut at %d of %d: events %d truncated %s, want %d events, truncated"
                       % (cut, n, inp["events"], inp["truncated"], want))
        has_line(out, re.escape("  rank 1: %s/%s is truncated at byte %d: %d events loaded, the rest is lost "
                                "(--strict makes this an error)" % (d, name, inp["truncated_at"], want)))
    R.write(d + "/" + name, blob[: n // 2])
    code, _, err = R.run(["--strict", d])
    expect(code, err, 2, re.escape("mergetrace: %s/%s: rank 1: byte " % (d, name)) +
           r"\d+: truncated input: input ends inside the trace \(\d+ events before the cut; without --strict they are kept\)")
    return len(cuts)


def case_truncated_plain(R):
    print("     %d cuts" % truncation_cases(R, False))


def case_truncated_gzip(R):
    print("     %d cuts" % truncation_cases(R, True))
    d = R.d("gz-header")
    R.write(d + "/rank-0.json.gz", gzip.compress(trace([ev()]).encode())[:7])
    code, _, err = R.run([d])
    expect(code, err, 2, re.escape("mergetrace: %s/rank-0.json.gz: rank 0: byte 0: truncated input: "
                                   "the gzip stream is cut short before any JSON" % d))


def case_corrupt_gzip(R):
    """A two-member file whose second member's deflate data is damaged."""
    d = R.d("corrupt-gz")
    text = trace([ev(ts=100 + i, name="k%d" % i) for i in range(2000)]).encode()
    a = gzip.compress(text[: len(text) // 2])
    b = bytearray(gzip.compress(text[len(text) // 2:]))
    b[len(b) // 2] ^= 0xFF
    R.write(d + "/rank-0.json.gz", a + bytes(b))
    code, _, err = R.run([d])
    expect(code, err, 2, re.escape("mergetrace: %s/rank-0.json.gz: rank 0: corrupt gzip data: " % d) +
           r"[a-z ]+ at compressed offset \d+")


def case_identical_ts(R):
    d = R.d("same-ts")
    R.write(d + "/rank-0.json", trace([ev(ts=5, dur=2, name="k%d" % i, tid=7 + i % 3) for i in range(100)]))
    code, _, err = R.run([d])
    expect(code, err, 0, None)
    r = R.report()
    if r["inputs"][0]["events"] != 100 or r["merged"]["events"] < 100:
        raise Fail("events %s, merged %s" % (r["inputs"][0]["events"], r["merged"]))


def case_negative_dur(R):
    d = R.d("neg-dur")
    R.write(d + "/rank-0.json", trace([ev(dur=-5), ev(ts=200, dur=3), ev(ts=300, dur=-1)]))
    code, out, err = R.run([d])
    expect(code, err, 0, None)
    has_line(out, re.escape("  rank 0: 2 events had a negative duration (taken as 0)"))
    R.report()


def case_many_args(R):
    d = R.d("many-args")
    args = ",".join('"a%d": %d' % (i, i) for i in range(10 ** 6))
    big = '{"ph": "X", "cat": "kernel", "name": "big", "pid": 0, "tid": 7, "ts": 1, "dur": 1, "args": {%s}}' % args
    R.write(d + "/rank-0.json", trace([ev(), big]))
    code, _, err = R.run([d, "--merged-format", "json"])
    expect(code, err, 0, None)
    merged = json.load(open(R.out + "/merged.json"))
    got = [e for e in merged["traceEvents"] if e.get("name") == "big"]
    if len(got) != 1 or len(got[0]["args"]) != 10 ** 6 or got[0]["args"]["a999999"] != 999999:
        raise Fail("the 10^6 args did not come through the merged trace")


def case_huge_string(R):
    d = R.d("huge-string")
    R.write(d + "/rank-0.json", trace([ev(name="x" * (100 * 1000 * 1000)), ev(ts=200)]))
    code, _, err = R.run([d, "--merged-format", "json"])
    expect(code, err, 0, None)
    r = R.report()
    if r["inputs"][0]["events"] != 2:
        raise Fail("events %s" % r["inputs"][0]["events"])
    names = [len(e["name"]) for e in json.load(open(R.out + "/merged.json"))["traceEvents"] if e.get("ph") == "X"]
    if sorted(names) != [1, 100 * 1000 * 1000]:
        raise Fail("merged names %s" % names)


def case_nul_bytes(R):
    d = R.d("nul")
    text = trace([ev(), '{"ph": "X", "cat": "kernel", "name": "a\x00b", "pid": 0, "tid": 7, "ts": 1, "dur": 1}'])
    R.write(d + "/rank-0.json", text)
    off = text.index("\x00")
    line = text[:off].count("\n") + 1
    col = off - text.rfind("\n", 0, off)
    code, _, err = R.run([d])
    expect(code, err, 2, re.escape("mergetrace: %s/rank-0.json: rank 0: byte %d (line %d:%d): invalid JSON: "
                                   "expected a string character or '\"', found byte 0x00" % (d, off, line, col)))


def case_control_names(R):
    """A file name with a newline and a terminal escape cannot forge a line
    of stderr or of the terminal summary: it is shown escaped."""
    d = R.d("ctlname")
    bad = "x\x1b[2J\nmergetrace: all good.json"
    R.write(d + "/" + bad, '{"traceEvents": [{"ph": "X", "ts": "soon"}]}')
    code, out, err = R.run([d])
    expect(code, err, 2, re.escape("mergetrace: %s/x\\x1b[2J\\nmergetrace: all good.json: " % d) + ".*")
    os.unlink(d + "/" + bad)
    # a trace with no distributedInfo.rank: the file name is in a warning of the summary
    R.write(d + "/rank-0.json", trace([ev()], rank=0, world=2))
    R.write(d + "/rank-1\nmergetrace: all good.json", '{"schemaVersion": 1, "traceEvents": [%s]%s' % (ev(), TAIL[3:]))
    code, out, err = R.run([d])
    if code != 0 or "\x1b" in out + err or any(ln.startswith("mergetrace: all good") for ln in out.splitlines()):
        raise Fail("exit %d; a control character in a file name reached the terminal: %r" % (code, (out + err)[-800:]))
    if "rank-1\\nmergetrace: all good.json" not in out:
        raise Fail("the escaped name is not in the summary: %r" % out[-800:])


def case_bad_utf8(R):
    d = R.d("utf8")
    def raw_ev(**kw):  # the surrogates become raw bytes 0xff, 0xc0 ... when written
        return json.dumps(dict({"ph": "X", "cat": "kernel", "pid": 0, "tid": 7, "dur": 1}, **kw), ensure_ascii=False)
    raw = trace([raw_ev(ts=1, name="bad\udcff\udcfename", args={"k\udcff": "v\udced\udca0\udc80"}),
                 raw_ev(ts=5, name="ok"), raw_ev(ts=6, name="\udcc0\udcaf"),
                 ev(ts=7, name="esc\udcff")])  # json.dumps escapes this one: a lone surrogate escape
    R.write(d + "/rank-0.json", raw)
    code, out, err = R.run([d])
    expect(code, err, 0, None)
    has_line(out, re.escape("  rank 0: 3 strings held invalid UTF-8 (replaced by U+FFFD)"))
    r = R.report()  # strict UTF-8 and JSON
    names = json.dumps(r, ensure_ascii=False, default=str)
    if "bad\ufffd\ufffdname" not in names:
        raise Fail("report.json does not show the replaced name (top kernels)")
    # the merged trace too is strict UTF-8 JSON, with the same replacement
    merged = json.loads(gzip.open(R.out + "/merged.json.gz").read().decode("utf-8"))
    got = sorted(e["name"] for e in merged["traceEvents"] if e.get("ph") == "X")
    want = sorted(["bad\ufffd\ufffdname", "ok", "\ufffd\ufffd", "esc\udcff"])  # escapes are copied as written
    if got != want:
        raise Fail("merged names %r, want %r" % (got, want))
    args = [e["args"] for e in merged["traceEvents"] if e.get("name", "").startswith("bad")]
    if args != [{"k\ufffd": "v\ufffd\ufffd\ufffd"}]:
        raise Fail("merged args %r" % args)


def case_deep_nesting(R):
    d = R.d("deep")
    deep = '{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 1, "args": {"d": %s}}'
    R.write(d + "/rank-0.json", trace([deep % ("[" * 100000 + "]" * 100000),
                                       deep % ('{"a":' * 100000 + "1" + "}" * 100000), ev(ts=9)]))
    code, _, err = R.run([d])
    expect(code, err, 0, None)
    if R.report()["inputs"][0]["events"] != 3:
        raise Fail("want 3 events")
    d2 = R.d("deep-open")
    R.write(d2 + "/rank-0.json", trace([deep % ("[" * 100000 + "]" * 99999)]))
    code, _, err = R.run([d2])
    expect(code, err, 2, re.escape("mergetrace: %s/rank-0.json: rank 0: byte " % d2) + r"\d+ \(line \d+:\d+\): "
           r"invalid JSON: .*")


def case_big_numbers(R):
    d = R.d("bignum")
    text = trace([ev(ts=99999999999999999999999)])
    R.write(d + "/rank-0.json", text)
    off = text.index("99999999999999999999999")
    code, _, err = R.run([d])
    expect(code, err, 2, re.escape('mergetrace: %s/rank-0.json: rank 0: byte %d (line 3:%d): number out of range: '
                                   '"ts" does not fit a 64-bit integer' % (d, off, off - text.rfind("\n", 0, off))))
    text = trace([ev(dur=18446744073709551616)])
    R.write(d + "/rank-0.json", text)
    code, _, err = R.run([d])
    expect(code, err, 2, r'.*: number out of range: "dur" does not fit a 64-bit integer')
    # ids beyond uint64 are not used, but the event is kept
    R.write(d + "/rank-0.json", trace([ev(pid=18446744073709551616, tid=-9223372036854775809), ev(ts=3)]))
    code, _, err = R.run([d])
    expect(code, err, 0, None)
    if R.report()["inputs"][0]["events"] != 2:
        raise Fail("want 2 events")
    for bad, what, lo in (("99999999999999999999", "rank", 0), ("-3", "rank", 0), ("2147483647", "rank", 0),
                          ('"1"', "rank", 0), ("0", "world_size", 1), ("18446744073709551615", "world_size", 1)):
        text = trace([ev()])
        key = '"%s": %s' % (what, "0" if what == "rank" else "1")
        text = text.replace(key, '"%s": %s' % (what, bad), 1)
        R.write(d + "/rank-0.json", text)
        off = text.index('"%s": ' % what) + len(what) + 4
        code, _, err = R.run([d])
        expect(code, err, 2, re.escape("mergetrace: %s/rank-0.json: rank 0: byte %d (line 1:%d): number out of range: "
                                       "distributedInfo.%s: expected an integer from %d to 2147483646"
                                       % (d, off, off + 1, what, lo)))


def case_world_huge(R):
    """A world_size past 2^24: the absent ranks are still counted and said
    (they were dropped without a word), listed up to 65,536."""
    d = R.d("worldhuge")
    R.write(d + "/rank-3.json", trace([ev()], rank=3, world=1 << 25))
    code, out, err = R.run(["--no-merge", d])
    expect(code, err, 0, None)
    has_line(out, r"\s*33554431 of 33554432 ranks have no trace: 0 1 2 4 5 .* \.\.\.")
    with open(R.out + "/report.json") as f:
        ranks = json.load(f)["ranks"]
    if ranks["missing_count"] != (1 << 25) - 1 or len(ranks["missing"]) != 65536 or ranks["missing"][:4] != [0, 1, 2, 4]:
        raise Fail("report.json ranks: count %r, %d listed" % (ranks.get("missing_count"), len(ranks.get("missing", []))))


def case_duplicate_ranks(R):
    d = R.d("dup")
    R.write(d + "/a.json", trace([ev()], 1, 2))
    R.write(d + "/b.json", trace([ev()], 1, 2))
    code, _, err = R.run([d])
    expect(code, err, 2, re.escape("mergetrace: rank 1 appears twice: %s/a.json and %s/b.json (use --rank-map to say "
                                   "which is which)" % (d, d)))


def case_world_size_disagree(R):
    d = R.d("world")
    R.write(d + "/rank-0.json", trace([ev()], 0, 2))
    R.write(d + "/rank-1.json", trace([ev()], 1, 4))
    code, out, err = R.run([d])
    expect(code, err, 2, re.escape("mergetrace: %s/rank-0.json and %s/rank-1.json are not of one run: world sizes 2 "
                                   "and 4 (--force merges them anyway)" % (d, d)))
    code, out, err = R.run([d, "--force"])
    expect(code, err, 0, None)
    has_line(out, re.escape("  the traces disagree on world_size; using the largest, 4"))
    has_line(out, re.escape("  2 of 4 ranks have no trace: 2 3"))
    r = R.report()
    if r["world_size"] != 4 or r["ranks"]["missing"] != [2, 3]:
        raise Fail("world_size %s missing %s" % (r["world_size"], r["ranks"]))


def edit_collectives(path, fn):
    t = json.load(open(path))
    fn(t["traceEvents"])
    json.dump(t, open(path, "w"))


def case_half_collectives(R):
    d = R.generate("half", "--ranks", "4", "--steps", "3")
    truth = json.load(open(d + "/truth.json"))
    n_inst = len(truth["collectives"])

    def drop(evs):
        k = [0]

        def keep(e):
            if e.get("cat") == "kernel" and e.get("name", "").startswith("ncclDev"):
                k[0] += 1
                return k[0] % 2 == 1
            return True
        evs[:] = [e for e in evs if keep(e)]
    edit_collectives(d + "/rank-1.json", drop)
    code, out, err = R.run([d])
    expect(code, err, 0, None)
    m = R.report()["matching"]
    half = n_inst // 2
    if (m["full"], m["partial"], m["mismatched"]) != (n_inst - half, half, 0):
        raise Fail("matching %s, want %d full %d partial" % (m, n_inst - half, half))
    has_line(out, re.escape("  %d collective instances lack some participants (those ranks' traces miss the kernels: "
                            "cut short, dropped events, or not the same job)" % half))


def case_mismatched_collectives(R):
    d = R.generate("mism", "--ranks", "4", "--steps", "3")
    truth = json.load(open(d + "/truth.json"))
    n_inst = len(truth["collectives"])

    def grow(evs):
        for e in evs:
            a = e.get("args", {})
            if "In msg nelems" in a and a.get("Seq", 1) % 3 == 0:
                a["In msg nelems"] += 1
                a["Out msg nelems"] += 1
    edit_collectives(d + "/rank-2.json", grow)
    want = sum(1 for s in range(1, n_inst + 1) if s % 3 == 0)
    code, out, err = R.run([d])
    expect(code, err, 0, None)
    m = R.report()["matching"]
    if (m["full"], m["mismatched"]) != (n_inst - want, want):
        raise Fail("matching %s, want %d mismatched" % (m, want))
    has_line(out, re.escape("  %d collective instances disagree across ranks (collective or size): not used for "
                            "alignment" % want))


def case_hours_offset(R):
    d = R.generate("hours", "--ranks", "4", "--ranks-per-node", "1", "--steps", "3", "--max-offset-ms", "10800000")
    truth = json.load(open(d + "/truth.json"))
    offs = [r["clock_offset_ns"] for r in truth["ranks"]]
    if max(offs) - min(offs) < 3600 * 10 ** 9:
        raise Fail("the generated clocks are not hours apart: %s" % offs)
    code, out, err = R.run([d, "--json", "--no-merge"])
    expect(code, err, 0, None)
    got = json.loads(out, parse_float=Decimal)
    errors, worst = run_gen_checks.clock_errors("hours", got, truth)
    if errors:
        raise Fail("; ".join(errors))
    print("     offsets %.1f h apart, clock error p99 %.0f ns" % ((max(offs) - min(offs)) / 3.6e12, worst))


def case_two_jobs(R):
    a = R.generate("jobA", "--ranks", "4", "--steps", "3", "--seed", "1")
    b = R.generate("jobB", "--ranks", "4", "--steps", "3", "--seed", "7", "--max-offset-ms", "5000")
    d = R.d("two-jobs")
    for src, r in ((a, 0), (a, 1), (b, 2), (b, 3)):
        shutil.copy("%s/rank-%d.json" % (src, r), d)
    # both halves ran the default group's collectives, and share none: two runs
    code, out, err = R.run([d])
    expect(code, err, 2, re.escape("mergetrace: %s/rank-1.json and %s/rank-2.json are not of one run: ranks 1 and 2 "
                                   "share a process group but none of its collectives (--force merges them anyway)"
                                   % (d, d)))
    code, out, err = R.run([d, "--force"])
    expect(code, err, 0, None)
    has_line(out, re.escape("  the ranks form 2 groups that share no collective: ranks 0 1 | ranks 2 3"))
    has_line(out, re.escape("  they look like traces of different jobs: only group 0 (with the reference rank) is "
                            "aligned"))
    r = R.report()
    groups = [(c["rank"], c["group"], c["connected"]) for c in r["clock"]["ranks"]]
    if groups != [(0, 0, True), (1, 0, True), (2, 1, False), (3, 1, False)]:
        raise Fail("clock groups %s" % groups)
    # one job alone: one group, no such warning
    code, out, err = R.run([a])
    expect(code, err, 0, None)
    if "groups that share no collective" in out:
        raise Fail("the two-jobs warning on one job")
    if {c["group"] for c in R.report()["clock"]["ranks"]} != {0}:
        raise Fail("one job, several groups")


def case_output_paths(R):
    """Names in the trace never become output paths: the output directory
    holds report.json, report.html and merged.json.gz only, and nothing else appears."""
    d = R.d("paths")
    meta = '{"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "../../escape.json"}}'
    R.write(d + "/rank-0.json", trace([meta, ev(name="/tmp/evil.json"), ev(ts=200, name="../x")]))
    before = sorted(os.listdir(R.work))
    code, _, err = R.run([d])
    expect(code, err, 0, None)
    if sorted(os.listdir(R.out)) != ["merged.json.gz", "report.html", "report.json"]:
        raise Fail("output directory holds %s" % os.listdir(R.out))
    if sorted(os.listdir(R.work)) != sorted(set(before) | {"out"}):
        raise Fail("new files beside the outputs: %s" % (set(os.listdir(R.work)) - set(before)))
    if os.path.exists("/tmp/evil.json") or os.path.exists(os.path.join(R.work, "..", "escape.json")):
        raise Fail("a trace name became a file")


def tiny_job(R, name):
    """Two ranks sharing one allreduce (a job that aligns), in a fresh dir."""
    d = R.d(name)
    for r in (0, 1):
        R.write("%s/rank-%d.json" % (d, r), trace([
            ev(name="ncclDevKernel_AllReduce_Sum_f32_RING_LL", ts=100 + r, dur=10,
               args={"Collective name": "allreduce", "Process Group Name": "0", "Seq": 1, "Group size": 2,
                     "In msg nelems": 1024, "dtype": "Float"}),
            ev(name="gemm", ts=200, dur=5)], rank=r, world=2))
    return d


def case_own_outputs(R):
    """-o into the input directory, twice: the second run skips and lists
    what the first wrote (merged trace, report.json, timings.json) instead
    of failing on them as traces of an unknown rank."""
    d = tiny_job(R, "inplace")
    cmd = [R.bin, "--no-progress", "--color=never", "-o", d, d]
    for i in range(2):
        p = subprocess.run(cmd + (["--timings"] if i == 0 else []), capture_output=True, env=R.env, timeout=300)
        err = p.stderr.decode() if i == 1 else ""
        expect(p.returncode, err, 0, None)
    out = p.stdout.decode()
    for name, what in (("merged.json.gz", "a merged trace"), ("report.json", "a report.json"),
                       ("timings.json", "a timings.json")):
        has_line(out, re.escape("  skipped %s/%s: %s written by mergetrace" % (d, name, what)))
    R.out = d
    skipped = sorted(k["path"] for k in R.report()["skipped"])
    if skipped != sorted(d + "/" + n for n in ("merged.json.gz", "report.json", "timings.json")):
        raise Fail("report.json skipped %s" % skipped)
    # the second run wrote no timings.json: the first one's is gone, and said so
    has_line(out, re.escape("removed timings.json of an earlier run from %s (this run does not write it)" % d))
    if sorted(os.listdir(d)) != ["merged.json.gz", "rank-0.json", "rank-1.json", "report.html", "report.json"]:
        raise Fail("the directory holds %s" % sorted(os.listdir(d)))


def case_stale_outputs(R):
    """What a run does not write among mergetrace's own names is removed
    (and said), never another file: the directory never mixes two runs."""
    d = tiny_job(R, "stale-in")
    o = os.path.join(R.work, "stale-out")
    shutil.rmtree(o, ignore_errors=True)
    os.makedirs(o)
    for n in ("notes.txt", "report.json.bak", "merged.json.tmp.1"):
        R.write(os.path.join(o, n), "mine\n")

    def run(*opts):
        p = subprocess.run([R.bin, "--no-progress", "--color=never", "-o", o] + list(opts) + [d],
                           capture_output=True, env=R.env, timeout=300)
        expect(p.returncode, p.stderr.decode(), 0, None)
        return p.stdout.decode()

    mine = ["merged.json.tmp.1", "notes.txt", "report.json.bak"]
    out = run()
    if "removed" in out:
        raise Fail("a first run removed something: %s" % out[-500:])
    if sorted(os.listdir(o)) != sorted(mine + ["merged.json.gz", "report.html", "report.json"]):
        raise Fail("after the first run: %s" % sorted(os.listdir(o)))
    out = run("--no-html", "--merged-format", "json")
    has_line(out, re.escape("removed report.html and merged.json.gz of an earlier run from %s "
                            "(this run does not write them)" % o))
    if sorted(os.listdir(o)) != sorted(mine + ["merged.json", "report.json"]):
        raise Fail("after --no-html --merged-format json: %s" % sorted(os.listdir(o)))
    out = run("--no-merge", "--no-html")
    has_line(out, re.escape("removed merged.json of an earlier run from %s (this run does not write it)" % o))
    if sorted(os.listdir(o)) != sorted(mine + ["report.json"]):
        raise Fail("after --no-merge: %s" % sorted(os.listdir(o)))
    # --json: stdout is report.json, so the note goes to stderr
    run()
    p = subprocess.run([R.bin, "--no-progress", "--json", "--no-merge", "-o", o, d], capture_output=True, env=R.env,
                       timeout=300)
    json.loads(p.stdout.decode())
    expect(p.returncode, p.stderr.decode(), 0, re.escape(
        "mergetrace: removed merged.json.gz of an earlier run from %s (this run does not write it)" % o))


def case_symlink_loop(R):
    """-r with a link back up the tree: each directory is read once (device
    and inode), the link is listed as not followed, and a second link to a
    directory read already is not followed either."""
    d = tiny_job(R, "loop")
    os.makedirs(d + "/a/b")
    os.symlink("..", d + "/a/up")          # loop/a/up -> loop
    os.symlink("b", d + "/a/c")            # loop/a/c -> loop/a/b (read as a/b first: names in order)
    code, out, err = R.run(["-r", d])
    expect(code, err, 0, None)
    has_line(out, re.escape("  did not follow %s/a/up: a link to %s, read already" % (d, d)))
    has_line(out, re.escape("  did not follow %s/a/c: a link to %s/a/b, read already" % (d, d)))
    r = R.report()
    if [i["path"] for i in r["inputs"]] != [d + "/rank-0.json", d + "/rank-1.json"]:
        raise Fail("inputs %s" % [i["path"] for i in r["inputs"]])
    if sorted(k["path"] for k in r["skipped"]) != [d + "/a/c", d + "/a/up"]:
        raise Fail("skipped %s" % r["skipped"])


CASES = [("empty_dir", case_empty_dir), ("zero_byte", case_zero_byte), ("unreadable", case_unreadable),
         ("not_a_trace", case_not_a_trace), ("truncated_plain", case_truncated_plain),
         ("truncated_gzip", case_truncated_gzip), ("corrupt_gzip", case_corrupt_gzip),
         ("identical_ts", case_identical_ts), ("negative_dur", case_negative_dur), ("nul_bytes", case_nul_bytes),
         ("control_names", case_control_names), ("world_huge", case_world_huge),
         ("bad_utf8", case_bad_utf8), ("deep_nesting", case_deep_nesting), ("big_numbers", case_big_numbers),
         ("duplicate_ranks", case_duplicate_ranks), ("world_size_disagree", case_world_size_disagree),
         ("half_collectives", case_half_collectives), ("mismatched_collectives", case_mismatched_collectives),
         ("hours_offset", case_hours_offset), ("two_jobs", case_two_jobs), ("output_paths", case_output_paths),
         ("own_outputs", case_own_outputs), ("stale_outputs", case_stale_outputs),
         ("symlink_loop", case_symlink_loop)]
BIG = [("many_args", case_many_args), ("huge_string", case_huge_string)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mergetrace", required=True)
    ap.add_argument("--gen", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--only")
    ap.add_argument("--big", action="store_true")
    ap.add_argument("--big-only", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    R = Runner(a)
    cases = BIG if a.big_only else CASES + (BIG if a.big or a.only else [])
    fails = 0
    for name, fn in cases:
        if a.only and name != a.only:
            continue
        try:
            fn(R)
            print("ok   %s" % name)
        except (Fail, subprocess.TimeoutExpired, OSError, ValueError, KeyError) as e:
            print("FAIL %s: %s" % (name, e))
            fails += 1
    print("%d failed" % fails)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
