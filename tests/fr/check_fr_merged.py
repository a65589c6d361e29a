#!/usr/bin/env python3
"""Flight Recorder dumps beside Kineto traces (issue 41): their entries in
the traces' merged trace, against the truth of scripts/gen_fr.py
--from-traces (each rank's dump clock shifted from its trace's by a known
amount, discoveries late by at most lag_max_ns; rank 3's dump has no
collective in common with its trace):

- every rank's entries are in the merged trace as a process of the rank
  (pid (R + 1) * 4096 + 4095, "rank R Flight Recorder", a track per group
  named "Flight Recorder: group ..."), one slice per entry;
- each slice's start (the entry's discovered start, else its creation) and
  a completed one's end, put back on the rank's trace clock with the true
  shift and onto the merged clock with the rank's correction (report.json's,
  which puts the rank's kernels exactly where the merged trace has them),
  lie within lag_max_ns (+ 2 ns of
  rounding) of where the merged trace has them; rank 3's, placed with
  shift 0, within 2 ns;
- the terminal says 3 dumps aligned and 1 placed on its wall clock, and
  report.json's hang.merged_trace has the counts and the numbers of the
  truth: the fewest collectives an aligned rank's trace holds, the largest
  median discovery lag (each completion's lag past its kernel's end, less
  the rank's smallest), rank 3's gap (its first time less the trace's last
  X event's end); without --no-merge's merged trace the key is absent;
- the merged trace is valid JSON with every rank's events together, its
  traces' events what tests/merge/check_merged.py expects and the same as
  without the dumps (read back by rank, the Flight Recorder process is
  left out);
- -j 2 and, with MPIEXEC, mpirun -n 1, 2 and 4 write the same merged trace
  and the same hang.merged_trace.

usage: check_fr_merged.py MERGETRACE WORKDIR [MPIEXEC]"""
import json
from decimal import Decimal
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PIDS = 4096
fails = 0


def fail(msg):
    global fails
    fails += 1
    print("FAIL " + msg)


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def ns(us):
    """A "ts" (us, 3 decimals; a Decimal or a float) as integer ns."""
    return int(round(Decimal(str(us)) * 1000))


def kernels_end(doc):
    """A trace's collectives' kernels' ends (ns), by start, and its last X
    event's end (what the trace's span ends at)."""
    base = int(doc.get("baseTimeNanoseconds", 0))
    ks = sorted((base + ns(e["ts"]), base + ns(e["ts"]) + ns(e["dur"])) for e in doc["traceEvents"]
                if e.get("ph") == "X" and e.get("cat") == "kernel"
                and "Seq" in e.get("args", {}) and "Process Group Name" in e.get("args", {}))
    last = max(base + ns(e["ts"]) + ns(e["dur"]) for e in doc["traceEvents"] if e.get("ph") == "X")
    return [k[1] for k in ks], last


def placed_truth(job, truth, rep):
    """report.json's hang.merged_trace against the truth (gen_fr.py
    --from-traces: a rank's first entries are its trace's collectives, by
    start; rank 3's none)."""
    want = {"aligned": 0, "wall_clock": 0, "left_out": 0, "no_trace": 0, "pairs_min": None, "lag_max_us": 0,
            "gap_max_us": 0}
    for rs, entries in sorted(truth["entries"].items()):
        r = int(rs)
        with open(os.path.join(job, "rank-%d.json" % r)) as f:
            ends, last = kernels_end(json.load(f))
        ids = sorted(entries, key=int)
        if r in truth["unaligned"]:
            want["wall_clock"] += 1
            lo = min(t for i in ids for t in entries[i] if t is not None)
            want["gap_max_us"] = max(want["gap_max_us"], Decimal(lo - last) / 1000)
            continue
        want["aligned"] += 1
        lags = [entries[i][2] - end for i, end in zip(ids, ends)]
        lags = sorted(x - min(lags) for x in lags)
        want["lag_max_us"] = max(want["lag_max_us"], Decimal(lags[len(lags) // 2]) / 1000)
        want["pairs_min"] = len(ends) if want["pairs_min"] is None else min(want["pairs_min"], len(ends))
    got = rep.get("hang", {}).get("merged_trace")
    if got != want:
        fail("report.json's hang.merged_trace %r, the truth %r" % (got, want))
    else:
        print("hang.merged_trace as the truth: %r" % got)


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    prog, work = sys.argv[1], sys.argv[2]
    mpiexec = sys.argv[3] if len(sys.argv) > 3 and sys.argv[3] else None
    shutil.rmtree(work, ignore_errors=True)
    job = os.path.join(work, "job")
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "gen_traces.py"), "--out", job, "--ranks", "4",
                    "--steps", "3", "--quiet"], check=True)
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "gen_fr.py"), "--from-traces", job, "--out", job],
                   check=True)
    with open(os.path.join(job, "fr_truth.json")) as f:
        truth = json.load(f)
    out = os.path.join(work, "out")
    p = run([prog, "--color=never", "--merged-format", "json", "-o", out, job])
    if p.returncode != 4:
        fail("exit %d (a hang: 4): %s" % (p.returncode, p.stderr.strip()[-400:]))
        print("%d failed" % fails)
        return 1
    if "rank 1 never enqueued it" not in p.stdout:
        fail("the verdict: %r" % p.stdout[-600:])
    if ("Flight Recorder entries of 3 dumps beside the traces" not in p.stdout
            or "1 dump with no collective in common with its trace placed on its wall clock" not in p.stdout):
        fail("the terminal does not say how the dumps were placed: %r" % p.stdout[-600:])
    with open(os.path.join(out, "merged.json")) as f:
        merged = json.load(f, parse_float=Decimal)  # us since the epoch with ns decimals: more than a double holds
    with open(os.path.join(out, "report.json")) as f:
        rep = json.load(f, parse_float=Decimal)
    evs = merged["traceEvents"]
    placed_truth(job, truth, rep)
    q = run([prog, "-q", "--no-merge", "-o", os.path.join(work, "out_nomerge"), job])
    with open(os.path.join(work, "out_nomerge", "report.json")) as f:
        if q.returncode != 4 or "merged_trace" in json.load(f).get("hang", {}):
            fail("--no-merge: exit %d, or report.json's hang has merged_trace" % q.returncode)

    # every rank's events together (what a reader by rank needs)
    seen, last = set(), None
    for e in evs:
        r = e["pid"] // PIDS - 1
        if r != last:
            if r in seen:
                fail("rank %d's events are not together" % r)
            seen.add(r)
            last = r

    lag = truth["lag_max_ns"]
    for rs, entries in sorted(truth["entries"].items()):
        r = int(rs)
        shift = truth["shift_ns"][rs]
        fr_pid = (r + 1) * PIDS + PIDS - 1
        mine = [e for e in evs if e["pid"] == fr_pid]
        names = [e["args"]["name"] for e in mine if e["ph"] == "M" and e["name"] == "process_name"]
        if names != ["rank %d Flight Recorder" % r]:
            fail("rank %d: the Flight Recorder process is named %r" % (r, names))
        tracks = [e["args"]["name"] for e in mine if e["ph"] == "M" and e["name"] == "thread_name"]
        if "Flight Recorder: group 0 (default_pg)" not in tracks:
            fail("rank %d: no track of group 0: %r" % (r, tracks))
        slices = {str(e["args"]["record_id"]): e for e in mine if e["ph"] == "X"}
        if sorted(slices) != sorted(entries):
            fail("rank %d: slices of records %s, the dump has %s" % (r, sorted(slices), sorted(entries)))
            continue
        # the rank's clock correction: report.json's (the traces' alignment,
        # checked by its own tests), and its kernels here and in the merged
        # trace agreeing with it
        clk = next(c for c in rep["clock"]["ranks"] if c["rank"] == r)
        off, drift, anchor = ns(clk["offset_us"]), float(clk["drift_ppm"]) * 1e-6, ns(clk["anchor_us"])
        corr = lambda t: t + off + int(round(drift * (t - anchor)))  # integers: ns since the epoch
        with open(os.path.join(job, "rank-%d.json" % r)) as f:
            doc = json.load(f)
        base = int(doc.get("baseTimeNanoseconds", 0))  # ts (us relative to it) fit a double
        raw = {e["args"]["correlation"]: base + ns(e["ts"]) for e in doc["traceEvents"]
               if e.get("cat") == "kernel" and "correlation" in e.get("args", {})}
        got = {e["args"]["correlation"]: ns(e["ts"]) for e in evs
               if e["pid"] // PIDS - 1 == r and e.get("cat") == "kernel" and "correlation" in e.get("args", {})}
        keys = sorted(k for k in raw if k in got)
        if not keys or max(abs(got[k] - corr(raw[k])) for k in keys) > 1:
            fail("rank %d: its kernels are not where report.json's clock puts them" % r)
            continue
        tol = 2 if r in truth["unaligned"] else lag + 2  # ns: rounding
        worst = 0
        for rid, (created, started, completed) in entries.items():
            e = slices[rid]
            a = started if started is not None else created
            want = corr(a)
            have = ns(e["ts"])
            worst = max(worst, abs(have - want))
            if abs(have - want) > tol:
                fail("rank %d record %s: starts at %d ns, the truth %d (%+d ns; tolerance %d)"
                     % (r, rid, have, want, have - want, tol))
            if completed is not None:
                want_end = corr(completed)
                have_end = have + ns(e["dur"])
                worst = max(worst, abs(have_end - want_end))
                if abs(have_end - want_end) > tol:
                    fail("rank %d record %s: ends at %d ns, the truth %d (%+d ns)"
                         % (r, rid, have_end, want_end, have_end - want_end))
        print("rank %d: %d entries, shift %d ns, worst error %.3f us (tolerance %.3f us)"
              % (r, len(entries), shift, worst / 1e3, tol / 1e3))

    # the traces' events as tests/merge/check_merged.py expects them (it
    # passes the Flight Recorder process over)
    clocks = os.path.join(work, "clocks.json")
    with open(clocks, "w") as f:
        json.dump({"ranks": [{"rank": c["rank"], "path": os.path.join(job, "rank-%d.json" % c["rank"]),
                              "offset_ns": ns(c["offset_us"]), "drift_ppm": float(c["drift_ppm"]),
                              "anchor_ns": ns(c["anchor_us"])} for c in rep["clock"]["ranks"]]}, f)
    q = run([sys.executable, os.path.join(ROOT, "tests", "merge", "check_merged.py"), os.path.join(out, "merged.json"),
             "--clocks", clocks, "--input"] + [os.path.join(job, "rank-%d.json" % r) for r in range(4)])
    if q.returncode != 0:
        fail("check_merged.py: %s" % q.stdout.strip()[-600:])

    # the same run without the dumps: the traces' own events unchanged
    plain = os.path.join(work, "plain")
    os.makedirs(plain)
    for fn in os.listdir(job):
        if fn.startswith("rank-"):
            shutil.copy(os.path.join(job, fn), plain)
    q = run([prog, "-q", "--merged-format", "json", "-o", os.path.join(work, "out_plain"), plain])
    if q.returncode != 0:
        fail("without the dumps: exit %d: %s" % (q.returncode, q.stderr.strip()[-300:]))
    else:
        with open(os.path.join(work, "out_plain", "merged.json")) as f:
            pev = json.load(f, parse_float=Decimal)["traceEvents"]
        if [e for e in evs if e["pid"] % PIDS != PIDS - 1] != pev:
            fail("the traces' events differ from a run without the dumps")

    # read back by rank: the Flight Recorder process is left out
    q = run([prog, "-q", "--json", "-o", os.path.join(work, "out_back"), os.path.join(out, "merged.json")])
    if q.returncode != 0:
        fail("reading the merged trace back: exit %d: %s" % (q.returncode, q.stderr.strip()[-300:]))
    else:
        back = json.loads(q.stdout)
        r = run([prog, "-q", "--json", "-o", os.path.join(work, "out_back_plain"),
                 os.path.join(work, "out_plain", "merged.json")])
        plain_back = json.loads(r.stdout) if r.returncode == 0 else {}
        a = [(i.get("rank"), i.get("events")) for i in back.get("inputs", [])]
        b = [(i.get("rank"), i.get("events")) for i in plain_back.get("inputs", [])]
        if not a or a != b:
            fail("read back: inputs %r, without the dumps %r" % (a, b))

    ref = open(os.path.join(out, "merged.json"), "rb").read()
    o2 = os.path.join(work, "j2")
    q = run([prog, "-j", "2", "-q", "--merged-format", "json", "-o", o2, job])
    if q.returncode != 4 or open(os.path.join(o2, "merged.json"), "rb").read() != ref:
        fail("-j 2: exit %d, or the merged trace differs from -j 1" % q.returncode)
    placed = rep["hang"].get("merged_trace")
    if q.returncode == 4 and json.load(open(os.path.join(o2, "report.json")), parse_float=Decimal)["hang"].get(
            "merged_trace") != placed:
        fail("-j 2: hang.merged_trace differs from -j 1")
    if mpiexec:
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   OMPI_MCA_btl_vader_single_copy_mechanism="none",
                   ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "") + ":detect_leaks=0")
        for n in (1, 2, 4):
            o2 = os.path.join(work, "np%d" % n)
            q = run([mpiexec, "--oversubscribe", "-n", str(n), prog, "-q", "--merged-format", "json", "-o", o2,
                     job], env=env)
            if q.returncode != 4:
                fail("-n %d: exit %d: %s" % (n, q.returncode, q.stderr.strip()[-300:]))
            elif open(os.path.join(o2, "merged.json"), "rb").read() != ref:
                fail("-n %d: the merged trace differs from the one-process run" % n)
            elif json.load(open(os.path.join(o2, "report.json")), parse_float=Decimal)["hang"].get(
                    "merged_trace") != placed:
                fail("-n %d: hang.merged_trace differs from the one-process run" % n)
    print("%s: %d failed" % ("FAIL" if fails else "OK", fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
