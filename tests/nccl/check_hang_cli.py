#!/usr/bin/env python3
"""The program on the NCCL plugin's files of a job that hung (left by
test_nccl_plugin's test_hang_verdict: four processes of one communicator,
ranks 0, 1 and 3 inside AllReduce #5 when killed, rank 2 in an AllGather;
the files keep the plugin's temporary names): the directory is read with
its hidden temporaries, the exit code is 4, and report.json's "hang" says
what the processes did, by hand and at -j 2. With P2P_DIR (left by
test_hang_p2p: a pipeline of four processes, ranks 1-3 in their recv from
the rank before when killed, rank 0 elsewhere), the same for the verdict
of a send/recv: rank 0 never sent, the chain 3 -> 2 -> 1 -> 0.
Usage: check_hang_cli.py MERGETRACE DIR WORK [P2P_DIR]"""
import json
import os
import subprocess
import sys


def main():
    prog, src, work = sys.argv[1:4]
    p2p = sys.argv[4] if len(sys.argv) > 4 else None
    for d in (src, p2p) if p2p else (src,):
        tmp = [n for n in os.listdir(d) if n.startswith(".") and n.endswith(".jsonl.tmp")]
        if len(tmp) != 4:
            print("FAIL: %s holds %d plugin temporaries, expected 4 (run test_nccl_plugin first)" % (d, len(tmp)))
            return 1
    fails = 0
    for jobs in ("1", "2") if p2p else ():
        out = os.path.join(work, "p2p-j" + jobs)
        env = dict(os.environ, MERGETRACE_JOBS=jobs, ASAN_OPTIONS="detect_leaks=0")
        p = subprocess.run([prog, "--no-progress", "--color=never", "-o", out, p2p], capture_output=True, text=True,
                           env=env, timeout=120)
        h = {}
        if p.returncode == 4:
            with open(os.path.join(out, "report.json"), encoding="utf-8") as f:
                h = json.load(f).get("hang") or {}
        waits = {r["rank"]: r.get("wait_us") for r in h.get("ranks", [])}
        pe = h.get("p2p") or {}
        ok = (p.returncode == 4 and h.get("verdict") == "never_enqueued" and h.get("culprit_ranks") == [0]
              and h.get("group", "").endswith(":p2p") and h.get("profiling_name") == "nccl:recv 1<-0"
              and (pe.get("rank"), pe.get("peer")) == (1, 0) and pe.get("entry", {}).get("p2p_seq_id") == 9
              and [c["rank"] for c in h.get("chain", [])] == [3, 2, 1, 0]
              and all(waits.get(r) and 40000 <= waits[r] <= 5e6 for r in (1, 2, 3)) and waits.get(0) is None
              and "rank 0 never enqueued the matching send" in p.stdout)
        print("%s p2p -j %s: exit %d, verdict %s, culprits %s, chain %s, waits %s" % (
            "ok  " if ok else "FAIL", jobs, p.returncode, h.get("verdict"), h.get("culprit_ranks"),
            [c["rank"] for c in h.get("chain", [])], waits))
        if not ok:
            print(p.stdout[-1500:], p.stderr[-800:])
            fails += 1
    for jobs in ("1", "2"):
        out = os.path.join(work, "j" + jobs)
        env = dict(os.environ, MERGETRACE_JOBS=jobs, ASAN_OPTIONS="detect_leaks=0")
        p = subprocess.run([prog, "--no-progress", "--color=never", "-o", out, src], capture_output=True, text=True,
                           env=env, timeout=120)
        h = {}
        if p.returncode == 4:
            with open(os.path.join(out, "report.json"), encoding="utf-8") as f:
                h = json.load(f).get("hang") or {}
        waits = {r["rank"]: r.get("wait_us") for r in h.get("ranks", [])}
        ok = (p.returncode == 4 and h.get("verdict") == "never_enqueued" and h.get("culprit_ranks") == [2]
              and h.get("group", "").endswith(":AllReduce") and h.get("collective_seq_id") == 6
              and h.get("culprit_last", {}).get("entry", {}).get("profiling_name") == "nccl:all_gather"
              and all(waits.get(r) and 40000 <= waits[r] <= 5e6 for r in (0, 1, 3)) and waits.get(2) is None
              and "rank 2 never enqueued it" in p.stdout)
        print("%s -j %s: exit %d, verdict %s, culprits %s, waits %s" % ("ok  " if ok else "FAIL", jobs, p.returncode,
              h.get("verdict"), h.get("culprit_ranks"), waits))
        if not ok:
            print(p.stdout[-1500:], p.stderr[-800:])
            fails += 1
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
