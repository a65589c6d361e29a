#!/usr/bin/env python3
"""Make a larger pair of inputs for the per-event load comparison of the
Nsight Systems reader and the Kineto loader (docs/PERFORMANCE.md): an
nsys SQLite export and a Chrome-trace JSON list of the same events, each
doubled TIMES times (every copy shifted in time past the last, and in the
export its correlation ids too, so copies do not link to each other).

usage: nsys_scale.py EXPORT.sqlite EVENTS.json TIMES OUT_PREFIX
writes OUT_PREFIX.sqlite and OUT_PREFIX.json; not a test."""
import json
import shutil
import sqlite3
import sys

TIMED = ["CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
         "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS"]


def scale_sqlite(src, dst, times):
    shutil.copyfile(src, dst)
    db = sqlite3.connect(dst)
    have = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    tables = [t for t in TIMED if t in have]
    for _ in range(times):
        span = max(db.execute(f"SELECT coalesce(max(end), max(start), 0) FROM {t}").fetchone()[0] or 0
                   for t in tables) + 1
        corr = max(db.execute(f"SELECT coalesce(max(correlationId), 0) FROM {t}").fetchone()[0]
                   for t in tables if t != "NVTX_EVENTS") + 1
        for t in tables:
            n = db.execute(f"SELECT max(rowid) FROM {t}").fetchone()[0] or 0
            db.execute(f"INSERT INTO {t} SELECT * FROM {t} ORDER BY rowid")
            sets = "start = start + ?1, end = end + ?1"
            if t != "NVTX_EVENTS":
                sets += ", correlationId = correlationId + ?2"
            db.execute(f"UPDATE {t} SET {sets} WHERE rowid > ?3", (span, corr, n))
    db.commit()
    db.execute("VACUUM")
    db.close()


def scale_json(src, dst, times):
    with open(src) as f:
        ev = json.load(f)
    for _ in range(times):
        span = max(e["ts"] + e.get("dur", 0) for e in ev if "ts" in e) + 1
        ev = ev + [dict(e, ts=e["ts"] + span) if "ts" in e else e for e in ev]
    with open(dst, "w") as f:
        json.dump(ev, f, separators=(",", ":"))


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    times = int(sys.argv[3])
    scale_sqlite(sys.argv[1], sys.argv[4] + ".sqlite", times)
    scale_json(sys.argv[2], sys.argv[4] + ".json", times)


if __name__ == "__main__":
    main()
