#!/usr/bin/env python3
"""The hang analysis (src/fr/fr_hang.c, through the fr_hang_json tool) on
every scenario of scripts/gen_fr.py, in both encodings, against the
generator's truth: the verdict, the group and collective, the culprits,
the ranks without a dump, the slow-down, each rank's clock offset and
each stuck rank's wait (within 1 us). The two encodings must agree, and the
terminal verdict must equal tests/fr/golden/<scenario>.txt (--update
rewrites the goldens). Then each scenario rewritten as gloo's recorder
writes dumps (gloo_shaped): no states, no group ranks.

usage: check_fr_truth.py FR_HANG_JSON WORKDIR [--update]"""
import glob
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


# The scenarios whose answer the sequence numbers and sizes alone decide,
# and the one whose rank without a dump gloo's dumps cannot name.
GLOO_DECIDED = ("skip", "slow_rank", "stuck_other", "size_mismatch", "p2p_size")


def gloo_shaped(tool, work):
    """Each scenario's JSON dumps rewritten as gloo's recorder writes them
    (PyTorch 2.11, tests/data/real/frgloo4): every entry "scheduled" and
    retired, no discovered start or completion, no duration, and pg_config
    one "" placeholder with no ranks. Where sequence numbers and sizes
    decide, the verdict, group, collective and culprits are the truth's;
    with a rank without a dump (missing_dump) no member is known missing,
    and the terminal must say that nothing tells."""
    fails = 0
    for sc in sorted(os.listdir(work)):
        if sc.startswith("gloo-") or not os.path.isdir(os.path.join(work, sc)):
            continue
        dst = os.path.join(work, "gloo-" + sc)
        os.makedirs(dst, exist_ok=True)
        for f in sorted(glob.glob(os.path.join(work, sc, "json", "*"))):
            with open(f) as fh:
                d = json.load(fh)
            for e in d.get("entries", []):
                e.update(state="scheduled", retired=True, time_discovered_started_ns=0,
                         time_discovered_completed_ns=0)
                e.pop("duration_ms", None)
            d["pg_config"] = {"": {"name": "", "desc": "", "ranks": "[]"}}
            with open(os.path.join(dst, os.path.basename(f)), "w") as fh:
                json.dump(d, fh)
        with open(os.path.join(work, sc, "truth.json")) as f:
            t = json.load(f)
        p = subprocess.run([tool] + sorted(glob.glob(os.path.join(dst, "*"))), capture_output=True, text=True,
                           env=dict(os.environ, FR_TEXT="1"))
        if p.returncode != 0:
            print("FAIL gloo-%s: rc %d %s" % (sc, p.returncode, p.stderr.strip()))
            fails += 1
            continue
        g = json.loads(p.stdout.split("\n", 1)[0])
        if sc in GLOO_DECIDED:
            for k in ("verdict", "group", "collective_seq_id", "profiling_name"):
                if g[k] != t[k]:
                    print("FAIL gloo-%s: %s %r, truth %r" % (sc, k, g[k], t[k]))
                    fails += 1
            if sorted(g["culprit_ranks"]) != sorted(t["culprit_ranks"]):
                print("FAIL gloo-%s: culprits %r, truth %r" % (sc, g["culprit_ranks"], t["culprit_ranks"]))
                fails += 1
        elif sc == "missing_dump" and (g["verdict"] != "no_hang" or "cannot be told" not in p.stdout):
            print("FAIL gloo-%s: %s, and the terminal does not say nothing tells:\n%s" % (sc, g["verdict"], p.stdout))
            fails += 1
    return fails


def main():
    tool, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "gen_fr.py"), "--out", work], check=True)
    fails = 0
    for sc in sorted(os.listdir(work)):
        with open(os.path.join(work, sc, "truth.json")) as f:
            t = json.load(f)
        outs = {}
        for enc in ("pickle", "json"):
            files = sorted(glob.glob(os.path.join(work, sc, enc, "*")))
            p = subprocess.run([tool] + files, capture_output=True, text=True, env=dict(os.environ, FR_TEXT="1"))
            if p.returncode != 0:
                print("FAIL %s/%s: rc %d %s" % (sc, enc, p.returncode, p.stderr.strip()))
                fails += 1
                continue
            outs[enc] = p.stdout
            first, text = p.stdout.split("\n", 1)
            g = json.loads(first)
            golden = os.path.join(HERE, "golden", sc + ".txt")
            if "--update" in sys.argv[3:]:
                with open(golden, "w") as f:
                    f.write(text)
            with open(golden) as f:
                if f.read() != text:
                    print("FAIL %s/%s: the terminal verdict differs from %s:\n%s" % (sc, enc, golden, text))
                    fails += 1
            if len(text.splitlines()) > 8:
                print("FAIL %s/%s: more than 8 lines" % (sc, enc))
                fails += 1
            errs = []
            for k in ("verdict", "group", "group_desc", "collective_seq_id", "profiling_name", "slowdown_before"):
                if g[k] != t[k]:
                    errs.append("%s %r, truth %r" % (k, g[k], t[k]))
            # point-to-point scenarios: the waiting chain and the send/recv
            # the verdict is of (waiter, peer, its p2p_seq_id)
            for k in ("chain", "p2p"):
                if k in t and g.get(k) != t[k]:
                    errs.append("%s %r, truth %r" % (k, g.get(k), t[k]))
            for k in ("culprit_ranks", "no_dump_ranks"):
                if sorted(g[k]) != sorted(t[k]):
                    errs.append("%s %r, truth %r" % (k, g[k], t[k]))
            if set(g["waits_ns"]) != set(t["waits_s"]):
                errs.append("waits for ranks %s, truth %s" % (sorted(g["waits_ns"]), sorted(t["waits_s"])))
            for r, w in t["waits_s"].items():
                if r in g["waits_ns"] and abs(g["waits_ns"][r] / 1e9 - w) > 1e-6:
                    errs.append("rank %s waited %.9f s, truth %.9f" % (r, g["waits_ns"][r] / 1e9, w))
            for r, o in g["offsets_ns"].items():
                want = t["offsets_ns"][int(r)] - t["offsets_ns"][0]
                if abs(o - want) > 1000:
                    errs.append("rank %s offset %d ns, truth %d" % (r, o, want))
            for e in errs:
                print("FAIL %s/%s: %s" % (sc, enc, e))
            fails += len(errs)
        if len(outs) == 2 and outs["pickle"] != outs["json"]:
            print("FAIL %s: the pickle and JSON dumps give different results" % sc)
            fails += 1
    fails += gloo_shaped(tool, work)
    print("fr_truth: %d scenarios, %d failures" % (len(os.listdir(work)), fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
