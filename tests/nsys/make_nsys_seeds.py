#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz target fuzz_nsys (tests/fuzz/corpus_nsys):
a tiny Nsight Systems-like export made with Python's sqlite3 (two GPU
processes, an NCCL kernel each, runtime calls, NVTX ranges, the session
start), the same in the 2022 schema (EXPORT_META_DATA, no shortName), one
process alone with its StringIds numbered sparsely (ids up to 6 M, as real
exports number them: the reader's cache by binary search), the two
processes with an index on the runtime table's (globalTid, start) as
nsys-ai adds and their calls on threads numbered against time (an index
walk would hand them out in reverse), and
broken variants: cut at several sizes, bytes flipped, a database that is
not an export, an export without GPU tables, and an empty file.

Usage: make_nsys_seeds.py OUT_DIR"""
import os
import sqlite3
import sys

GP = [(1 << 48) | (100 << 24), (1 << 48) | (101 << 24)]


def export(path, old=False, gpu=True, sparse=False, indexed=False):
    """sparse: the first process only, string i stored as id i * 1000003;
    indexed: runtime call k on thread 4 - k, and an index on the runtime
    table's (globalTid, start)."""
    if os.path.exists(path):
        os.remove(path)
    db = sqlite3.connect(path)
    db.execute("PRAGMA page_size=512")
    db.execute("CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL)")
    sid = (lambda i: i * 1000003) if sparse else (lambda i: i)
    procs = GP[:1] if sparse else GP
    db.executemany("INSERT INTO StringIds VALUES (?,?)",
                   [(sid(1), "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
                    (sid(2), "ncclDevKernel_AllReduce_Sum_f32_RING_LL"), (sid(3), "gemm"),
                    (sid(4), "cudaLaunchKernel_v7000"), (sid(5), "ncclAllReduce"), (sid(6), "main")])
    meta = "EXPORT_META_DATA" if old else "META_DATA_EXPORT"
    db.execute("CREATE TABLE %s (name TEXT NOT NULL, value TEXT)" % meta)
    db.execute("INSERT INTO %s VALUES ('EXPORT_SCHEMA_VERSION', ?)" % meta, ("2.9.1" if old else "3.25.0",))
    db.execute("CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT)")
    db.execute("INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (1700000000000000000, 'x')")
    if gpu:
        short = "" if old else ", shortName INTEGER NOT NULL"
        db.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, "
                   "deviceId INTEGER NOT NULL, contextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER, "
                   "globalPid INTEGER, demangledName INTEGER NOT NULL%s, gridX INTEGER, gridY INTEGER, "
                   "gridZ INTEGER, blockX INTEGER)" % short)
        for d, g in enumerate(procs):
            for k in range(3):
                row = [1000 + 100 * k + d, 1050 + 100 * k, d, 1, 7, 10 + k, g, sid(1) if k == 1 else sid(3)]
                if not old:
                    row.append(sid(2) if k == 1 else sid(3))
                row += [1, 1, 1, 128]
                db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (%s)" % ",".join("?" * len(row)), row)
    db.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, "
               "eventClass INTEGER, globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL)")
    db.execute("CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, "
               "text TEXT, globalTid INTEGER, textId INTEGER, domainId INTEGER)")
    db.execute("CREATE TABLE ThreadNames (nameId INTEGER NOT NULL, priority INTEGER, globalTid INTEGER)")
    for d, g in enumerate(procs):
        for k in range(3):
            db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?,?,1,?,?,?)", (900 + 100 * k, 920 + 100 * k,
                                                                                   g + (4 - k if indexed else 1),
                                                                                   10 + k, sid(4)))
        db.execute("INSERT INTO NVTX_EVENTS VALUES (100, NULL, 75, 'NCCL', ?, NULL, 1)", (g + 1,))
        db.execute("INSERT INTO NVTX_EVENTS VALUES (990, 1030, 59, NULL, ?, ?, 1)", (g + 1, sid(5)))
        db.execute("INSERT INTO NVTX_EVENTS VALUES (800, 1300, 59, 'MPI Rank %d', ?, NULL, 0)" % d, (g + 1,))
        db.execute("INSERT INTO NVTX_EVENTS VALUES (850, NULL, 60, 'open', ?, NULL, 0)", (g + 1,))
        db.execute("INSERT INTO ThreadNames VALUES (?, 0, ?)", (sid(6), g + 1))
    if indexed:
        db.execute("CREATE INDEX rt_tid ON CUPTI_ACTIVITY_KIND_RUNTIME(globalTid, start)")
    db.commit()
    db.close()


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    export(os.path.join(out, "two_procs.sqlite"))
    export(os.path.join(out, "schema_2022.sqlite"), old=True)
    export(os.path.join(out, "no_gpu.sqlite"), gpu=False)
    export(os.path.join(out, "sparse_ids.sqlite"), sparse=True)
    export(os.path.join(out, "indexed.sqlite"), indexed=True)
    with open(os.path.join(out, "two_procs.sqlite"), "rb") as f:
        data = f.read()
    for cut in (16, 100, 512, 1024, len(data) // 2, len(data) - 512):
        with open(os.path.join(out, "cut_%d.sqlite" % cut), "wb") as f:
            f.write(data[:cut])
    for at in (20, 100, 600, len(data) // 3, len(data) - 100):
        b = bytearray(data)
        b[at] ^= 0xFF
        with open(os.path.join(out, "flip_%d.sqlite" % at), "wb") as f:
            f.write(bytes(b))
    other = os.path.join(out, "not_nsys.sqlite")
    if os.path.exists(other):
        os.remove(other)
    db = sqlite3.connect(other)
    db.execute("PRAGMA page_size=512")
    db.execute("CREATE TABLE foo (a)")
    db.execute("INSERT INTO foo VALUES (1)")
    db.commit()
    db.close()
    open(os.path.join(out, "empty.sqlite"), "wb").close()


if __name__ == "__main__":
    main()
