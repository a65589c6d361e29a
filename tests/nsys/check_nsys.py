#!/usr/bin/env python3
"""mergetrace on the Nsight Systems exports of ../shared/corpus, checked
against numbers this script computes itself with SQL (Python's sqlite3),
never through mergetrace's reader:

* per GPU process: kernels (count and summed end - start per device and
  stream, from the merged trace, exact to the ns), NCCL kernels, memcpy,
  memset, synchronisation and CUDA API rows, NVTX ranges and marks, against
  report.json's counts;
* mfu_2gpu_before (two processes, one clock): ranks 0 and 1, every NCCL
  kernel matched (instances = the per-process SendRecv count), a clock
  offset near zero (and the median end difference of the k-th NCCL
  kernels, computed here);
* the nsightful conversion of power_iteration__baseline (an independent
  Chrome trace of the same file): kernel names, counts and summed
  durations equal ours;
* a truncated export, an SQLite database that is not an export and an
  export without GPU tables: exit 2 and exactly one line on stderr;
* given MPIEXEC, each export with several GPU processes under `-n 2` (one
  part per process) as under one process (all parts in one read):
  report.json byte for byte, the merged trace's events as sorted lines.

Usage: check_nsys.py MERGETRACE CORPUS_DIR WORK_DIR [MPIEXEC]   (exit 77: no corpus)"""
import gzip
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
from decimal import Decimal

FILES = [
    "GindaChen__nsys-ai/tests/fixtures/mfu_2gpu_before.sqlite",
    "GindaChen__nsys-ai/tests/fixtures/mfu_2gpu_after.sqlite",
    "GindaChen__nsys-ai/tests/fixtures/h100_2gpu_1s.sqlite",
    "GindaChen__nsys-ai/tests/fixtures/mock.sqlite",
    "hpcgroup__pipit/pipit/tests/data/saxpy-mpi-cuda_nsys_perlmutter0.sqlite",
    "brycelelbach__nsightful/tests/power_iteration__baseline.sqlite",
]

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def tables(db):
    return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def cols(db, t):
    return {r[1] for r in db.execute("PRAGMA table_info(%s)" % t)}


def truth(path):
    """Per GPU process (by OS pid): what the export holds, by SQL."""
    db = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    have = tables(db)
    procs = {}
    for gp, in db.execute("SELECT DISTINCT globalPid FROM CUPTI_ACTIVITY_KIND_KERNEL"):
        pid = (gp >> 24) & 0xFFFFFF
        lo, hi = gp, gp + 0xFFFFFF
        p = {"streams": {}, "nccl": 0}
        for dev, stream, n, ns in db.execute(
                "SELECT deviceId, streamId, count(*), sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL "
                "WHERE globalPid = ? GROUP BY 1, 2", (gp,)):
            p["streams"][(dev, stream)] = (n, ns)
        name_col = "shortName" if "shortName" in cols(db, "CUPTI_ACTIVITY_KIND_KERNEL") else "demangledName"
        p["nccl"] = db.execute(
            "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.%s "
            "WHERE k.globalPid = ? AND (s.value LIKE 'ncclKernel%%' OR s.value LIKE 'ncclDevKernel%%')" % name_col,
            (gp,)).fetchone()[0]
        p["nccl_ends"] = [r[0] for r in db.execute(
            "SELECT k.end FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.%s "
            "WHERE k.globalPid = ? AND s.value LIKE 'nccl%%' ORDER BY k.start" % name_col, (gp,))]
        for key, t in (("memcpy", "CUPTI_ACTIVITY_KIND_MEMCPY"), ("memset", "CUPTI_ACTIVITY_KIND_MEMSET"),
                       ("sync", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION")):
            p[key] = db.execute("SELECT count(*) FROM %s WHERE globalPid = ?" % t, (gp,)).fetchone()[0] \
                if t in have else 0
        p["api"] = db.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE globalTid BETWEEN ? AND ?",
                              (lo, hi)).fetchone()[0] if "CUPTI_ACTIVITY_KIND_RUNTIME" in have else 0
        p["nvtx"] = db.execute(
            "SELECT count(*) FROM NVTX_EVENTS WHERE globalTid BETWEEN ? AND ? AND "
            "((eventType IN (59, 60) AND end IS NOT NULL) OR eventType = 34)",
            (lo, hi)).fetchone()[0] if "NVTX_EVENTS" in have else 0
        procs[pid] = p
    short = {}
    if "shortName" in cols(db, "CUPTI_ACTIVITY_KIND_KERNEL"):
        for dm, sh in db.execute("SELECT DISTINCT d.value, s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                                 "JOIN StringIds d ON d.id = k.demangledName JOIN StringIds s ON s.id = k.shortName"):
            short[dm] = sh
    db.close()
    return procs, short


def us_to_ns(text):
    return int(Decimal(text) * 1000)


def merged_kernels(path):
    """(rank, device, stream) -> [count, ns] and name -> [count, ns] of the
    merged trace's kernels, durations parsed exactly from their text."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        data = json.load(f, parse_float=Decimal)
    names = {}
    for e in data["traceEvents"]:
        if e.get("ph") == "M" and e.get("name") == "process_name":
            names[e["pid"]] = e["args"]["name"]
    per_stream, per_name = {}, {}
    for e in data["traceEvents"]:
        if e.get("cat") != "kernel":
            continue
        label = names[e["pid"]].split()  # "rank R GPU D"
        key = (int(label[1]), int(label[3]), e["tid"])
        ns = int(Decimal(e["dur"]) * 1000)
        s = per_stream.setdefault(key, [0, 0])
        s[0] += 1
        s[1] += ns
        k = per_name.setdefault((int(label[1]), e["name"]), [0, 0])
        k[0] += 1
        k[1] += ns
    return per_stream, per_name


def run(cmd):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)


def main():
    bin_, corpus, work = sys.argv[1:4]
    mpiexec = sys.argv[4] if len(sys.argv) > 4 else None
    if not os.path.exists(os.path.join(corpus, FILES[0])):
        print("SKIP: no Nsight Systems exports in", corpus)
        return 77
    if os.getuid() == 0:
        os.environ.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    os.environ["OMPI_MCA_btl_vader_single_copy_mechanism"] = "none"
    os.environ["ASAN_OPTIONS"] = "detect_leaks=0"
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)

    for rel in FILES:
        path = os.path.join(corpus, rel)
        out = os.path.join(work, os.path.basename(rel))
        p = run([bin_, "-q", "--no-html", "--no-drift", "-o", out, path])
        if "built without SQLite" in p.stderr:
            print("SKIP: mergetrace was built without SQLite")
            return 77
        check(p.returncode == 0, "%s: exit %d: %s" % (rel, p.returncode, p.stderr.strip()))
        if p.returncode:
            continue
        rep = json.load(open(os.path.join(out, "report.json")))
        procs, short = truth(path)
        check(len(rep["inputs"]) == len(procs), "%s: %d inputs for %d GPU processes" % (rel, len(rep["inputs"]),
                                                                                      len(procs)))
        stream_sums, name_sums = merged_kernels(os.path.join(out, "merged.json.gz"))
        by_pid = {}
        for inp in rep["inputs"]:
            pid = int(inp["path"].rsplit("#pid", 1)[1]) if "#pid" in inp["path"] else next(iter(procs))
            by_pid[pid] = inp
        for pid, tr in sorted(procs.items()):
            inp = by_pid.get(pid)
            check(inp is not None, "%s: no input for pid %d" % (rel, pid))
            if not inp:
                continue
            c, r = inp["counts"], inp["rank"]
            kernels = sum(n for n, _ in tr["streams"].values())
            got = {"kernels": c["kernels_compute"] + c["kernels_comm"], "nccl": c["kernels_comm"],
                   "memcpy": c["memcpy"], "memset": c["memset"], "sync": c["sync"],
                   "api": c["cat"].get("cuda_runtime", 0) + c["cat"].get("cuda_driver", 0),
                   "nvtx": c["cat"].get("user_annotation", 0)}
            want = {"kernels": kernels, "nccl": tr["nccl"], "memcpy": tr["memcpy"], "memset": tr["memset"],
                    "sync": tr["sync"], "api": tr["api"], "nvtx": tr["nvtx"]}
            check(got == want, "%s pid %d: report %s, SQL %s" % (rel, pid, got, want))
            # the session's UTC start, straight from its table (absent before 2021)
            with sqlite3.connect("file:%s?mode=ro" % path, uri=True) as db:
                start = None
                if "TARGET_INFO_SESSION_START_TIME" in tables(db):
                    row = db.execute("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME").fetchone()
                    start = row[0] if row else None
            check(inp.get("format") == "nsys" and inp.get("session_start_utc_ns") == start,
                  "%s pid %d: session start %s in report.json, %s in the export" %
                  (rel, pid, inp.get("session_start_utc_ns"), start))
            for (dev, stream), (n, ns) in sorted(tr["streams"].items()):
                m = stream_sums.get((r, dev, stream), [0, 0])
                check(m == [n, ns], "%s pid %d device %d stream %d: merged %s, SQL %s" % (rel, pid, dev, stream,
                                                                                        m, [n, ns]))
            print("%s pid %d -> rank %d: %d kernels (%d NCCL), %d ns on %d stream(s), %d memcpy, %d memset, %d sync, "
                  "%d API calls, %d NVTX ranges/marks: agree" % (os.path.basename(rel), pid, r, kernels, tr["nccl"],
                                                                  sum(ns for _, ns in tr["streams"].values()),
                                                                  len(tr["streams"]), tr["memcpy"], tr["memset"],
                                                                  tr["sync"], tr["api"], tr["nvtx"]))
        if mpiexec and len(procs) > 1:
            out2 = out + ".np2"
            p = run([mpiexec, "--oversubscribe", "-n", "2", bin_, "-q", "--no-html", "--no-drift", "-o", out2, path])
            check(p.returncode == 0, "%s -n 2: exit %d: %s" % (rel, p.returncode, p.stderr.strip()))
            if p.returncode == 0:
                same = open(os.path.join(out, "report.json"), "rb").read() == \
                    open(os.path.join(out2, "report.json"), "rb").read()
                check(same, "%s: report.json under -n 2 differs from one process's" % rel)
                lines = [sorted(gzip.open(os.path.join(d, "merged.json.gz")).read().replace(b",\n", b"\n")
                                .split(b"\n")) for d in (out, out2)]
                check(lines[0] == lines[1], "%s: merged trace under -n 2 differs from one process's" % rel)
                if same and lines[0] == lines[1]:
                    print("%s: -n 2 (a part per process) = one process (one read): report.json, %d merged lines" %
                          (os.path.basename(rel), len(lines[0])))
        if len(procs) > 1:
            # the summary names what was read, each file once (issue 39
            # papercut: 'loaded 4.9 MB of JSON' for one 2.4 MB .sqlite of
            # two GPUs)
            p = run([bin_, "--no-html", "--no-merge", "--color=never", "-o", out + ".sum", path])
            want = "loaded %.1f MB of SQLite, " % (os.path.getsize(path) / 1e6)
            got = p.stdout.splitlines()[1] if p.returncode == 0 and len(p.stdout.splitlines()) > 1 else p.stderr
            check(got.startswith(want), "%s: summary %r, want %r..." % (rel, got[:60], want))
        # NVTX ranges named per call by PyTorch's emit_nvtx ("FlashAttnFunc,
        # seq = 46447, op_id = ...") are one annotation per name, as kernel
        # names are (issue 39 papercut: count 1 each, one row per call)
        with sqlite3.connect("file:%s?mode=ro" % path, uri=True) as db:
            per_call = db.execute("SELECT count(*) FROM NVTX_EVENTS WHERE text LIKE 'FlashAttnFunc, seq = %' "
                                  "AND end IS NOT NULL").fetchone()[0] if "NVTX_EVENTS" in tables(db) else 0
        if per_call:
            names = [x["name"] for x in rep["projection"]]
            check(not any(", seq = " in x or ", op_id = " in x for x in names),
                  "%s: projection rows named per call: %s" % (rel, [x for x in names if ", seq = " in x][:2]))
            got = sum(x["count"] for x in rep["projection"] if x["name"] == "FlashAttnFunc")
            check(got == per_call, "%s: FlashAttnFunc ranges %d in the projection, %d in NVTX_EVENTS"
                  % (rel, got, per_call))
        if rel.endswith("mfu_2gpu_after.sqlite"):
            # a baseline may be any input the program reads (issue 39
            # papercut: '--baseline before.sqlite' was 'invalid JSON ... byte
            # 0'): the same comparison as with the before run's output
            before = os.path.join(corpus, "GindaChen__nsys-ai/tests/fixtures/mfu_2gpu_before.sqlite")
            b_out, c1, c2 = out + ".before", out + ".vsdir", out + ".vsfile"
            ps = [run([bin_, "-q", "--no-merge", "--no-html", "-o", b_out, before]),
                  run([bin_, "-q", "--no-merge", "--no-html", "-o", c1, "--baseline", b_out, path]),
                  run([bin_, "-q", "--no-merge", "--no-html", "-o", c2, "--baseline", before, path])]
            check(all(p.returncode == 0 for p in ps), "--baseline before.sqlite: exits %s: %s"
                  % ([p.returncode for p in ps], ps[2].stderr.strip()[:200]))
            if all(p.returncode == 0 for p in ps):
                cmp = [json.load(open(os.path.join(d, "compare.json"))) for d in (c1, c2)]
                for c in cmp:
                    c.pop("baseline", None)
                check(cmp[0] == cmp[1], "--baseline before.sqlite: compare.json differs from --baseline DIR's")
        if rel.endswith("mfu_2gpu_before.sqlite"):
            ranks = {pid: inp["rank"] for pid, inp in by_pid.items()}
            check(ranks == {144: 0, 145: 1}, "mfu: ranks %s" % ranks)
            n = tr["nccl"]
            m = rep["matching"]
            check(m["full"] == n and m["rows"] == 2 * n, "mfu: matching %s for %d NCCL kernels per rank" % (m, n))
            off = [c["offset_us"] for c in rep["clock"]["ranks"] if c["rank"] == 1][0]
            ends = [procs[145]["nccl_ends"][k] - procs[144]["nccl_ends"][k] for k in range(n)]
            med = statistics.median(ends) / 1000
            print("mfu_2gpu_before: %d SendRecv instances matched; rank 1 offset %.3f us (one clock: 0); median "
                  "end difference of the k-th NCCL kernels (SQL) %.3f us" % (m["full"], off, med))
            check(abs(off) < 50, "mfu: offset %.3f us on one clock" % off)
        if rel.endswith("power_iteration__baseline.sqlite"):
            conv = json.load(open(path[:-len(".sqlite")] + ".json"), parse_float=Decimal)
            theirs = {}
            for e in conv:
                if e.get("cat") == "cuda" and e.get("ph") == "X":
                    s = theirs.setdefault(e["name"], [0, 0])
                    s[0] += 1
                    s[1] += int(e["dur"] * 1000)
            ours = {}
            for (rank, name), (n, ns) in name_sums.items():
                s = ours.setdefault(short.get(name, name), [0, 0])
                s[0] += n
                s[1] += ns
            check(ours == theirs, "nsightful: kernels differ: ours %d names, theirs %d" % (len(ours), len(theirs)))
            print("power_iteration__baseline: %d kernel names, %d kernels, %d ns: equal to nsightful's conversion" %
                  (len(ours), sum(v[0] for v in ours.values()), sum(v[1] for v in ours.values())))

    # Broken inputs: one line each, exit 2.
    src = os.path.join(corpus, FILES[0])
    cut = os.path.join(work, "cut.sqlite")
    with open(src, "rb") as f, open(cut, "wb") as g:
        g.write(f.read(1 << 20))
    other = os.path.join(work, "other.sqlite")
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE results (run TEXT, value REAL)")
    db.commit()
    db.close()
    nogpu = os.path.join(work, "nogpu.sqlite")
    shutil.copyfile(os.path.join(corpus, FILES[3]), nogpu)
    os.chmod(nogpu, 0o644)
    db = sqlite3.connect(nogpu)
    db.execute("DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL")
    db.commit()
    db.close()
    # Times that do not fit: a kernel starting at INT64_MIN (end - start
    # overflowed), a kernel whose end is text (read as 0 before), a runtime
    # call ending 9e18 ns from 0 (caught only in the merged write, exit 1)
    bad_times = []
    for tag, sql in (("kmin", "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = -9223372036854775808 WHERE rowid = "
                              "(SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL)"),
                     ("ktext", "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET \"end\" = 'soon' WHERE rowid = "
                               "(SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL)"),
                     ("rbig", "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET \"end\" = 9000000000000000000 WHERE rowid = "
                              "(SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_RUNTIME)")):
        f = os.path.join(work, "times-%s.sqlite" % tag)
        shutil.copyfile(os.path.join(corpus, FILES[3]), f)
        os.chmod(f, 0o644)
        db = sqlite3.connect(f)
        db.execute(sql)
        db.commit()
        db.close()
        bad_times.append(f)
    for f in bad_times:
        p = run([bin_, "-q", "--no-html", "-o", os.path.join(work, "bad"), f])
        lines = p.stderr.strip().splitlines()
        ok = p.returncode == 2 and len(lines) == 1 and "CUPTI_ACTIVITY_KIND_" in lines[0] and (
            "not an integer" in lines[0] or "2^62" in lines[0])
        check(ok, "%s: exit %d, stderr %r" % (os.path.basename(f), p.returncode, p.stderr))
        if ok:
            print("%s: exit 2, %s" % (os.path.basename(f), lines[0]))
    # A string of another encoding in StringIds (a kernel's name): report.json
    # and report.html stay UTF-8 (U+FFFD for each bad byte)
    latin = os.path.join(work, "latin1.sqlite")
    shutil.copyfile(os.path.join(corpus, FILES[3]), latin)
    os.chmod(latin, 0o644)
    db = sqlite3.connect(latin)
    db.execute("UPDATE StringIds SET value = CAST(X'6b65726e656cff5fe9' AS TEXT) WHERE id = "
               "(SELECT demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 1)")
    db.commit()
    db.close()
    p = run([bin_, "-q", "-o", os.path.join(work, "latin1"), latin])
    ok = p.returncode == 0
    try:
        with open(os.path.join(work, "latin1", "report.json"), encoding="utf-8") as f:
            text = f.read()
        json.loads(text)
        with open(os.path.join(work, "latin1", "report.html"), encoding="utf-8") as f:
            f.read()
        ok = ok and "kernel\ufffd_\ufffd" in text
    except (OSError, ValueError) as e:
        ok = False
        print("latin1.sqlite: %s" % e)
    check(ok, "latin1.sqlite: exit %d; report.json / report.html not UTF-8 or the name not cleaned" % p.returncode)
    for f, text in ((cut, "not a usable Nsight Systems export: the SQLite database is truncated or corrupt"),
                    (other, "not a usable Nsight Systems export: an SQLite database, but not an Nsight Systems export"),
                    (nogpu, "not a usable Nsight Systems export: an Nsight Systems export without GPU activity")):
        p = run([bin_, "-q", "--no-html", "-o", os.path.join(work, "bad"), f])
        lines = p.stderr.strip().splitlines()
        ok = p.returncode == 2 and len(lines) == 1 and lines[0].startswith("mergetrace: %s: %s" % (f, text))
        check(ok, "%s: exit %d, stderr %r" % (os.path.basename(f), p.returncode, p.stderr))
        if ok:
            print("%s: exit 2, %s" % (os.path.basename(f), lines[0]))
    # one process's export named by rank: the rank comes from the file name,
    # and the warning does not ask an Nsight export for Kineto's distributedInfo
    named = os.path.join(work, "named")
    os.makedirs(named, exist_ok=True)
    shutil.copy(os.path.join(corpus, FILES[5]), os.path.join(named, "rank-2.sqlite"))
    p = run([bin_, "--no-merge", "--no-html", "--color=never", "-o", os.path.join(work, "named-out"), named])
    want = "  rank 2: rank-2.sqlite (an Nsight Systems export) names no rank; rank taken from the file name"
    check(p.returncode == 0 and want in p.stdout.splitlines() and "distributedInfo" not in p.stdout,
          "rank-2.sqlite: exit %d, warnings %r" % (p.returncode, p.stdout[p.stdout.find("warnings"):]))
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("all agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
