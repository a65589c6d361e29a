#!/usr/bin/env python3
"""Self-test of scripts/gen_traces.py: small jobs of every kind and layout are
generated into a temporary directory and checked by check_truth.py; also
determinism, format independence of the simulation, the straggler, the
pipeline modes, usage errors, and that the checker notices a wrong truth.
Standard library only: python3 tests/gen/test_gen_truth.py"""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
GEN = os.path.join(HERE, "..", "..", "scripts", "gen_traces.py")

_spec = importlib.util.spec_from_file_location("check_truth", os.path.join(HERE, "check_truth.py"))
check_truth = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_truth)


def gen(out, *args, expect_rc=0):
    p = subprocess.run([sys.executable, GEN, "--out", out, "--quiet"] + list(args),
                       capture_output=True, text=True)
    if p.returncode != expect_rc:
        raise AssertionError("gen_traces.py %s: rc %d\n%s" % (" ".join(args), p.returncode, p.stderr))
    return p


def truth(d):
    with open(os.path.join(d, "truth.json")) as f:
        return json.load(f)


class GenTruth(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="gen_truth_")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def dir(self, name):
        return os.path.join(self.tmp, name)

    def assertChecks(self, d):
        errs = check_truth.Checker(d).run()
        self.assertEqual(errs, [], "\n".join(errs[:20]))

    def test_layouts(self):
        cases = {
            "dp_new": ["--steps", "3"],
            "dp_old": ["--format", "old", "--steps", "3", "--ranks", "4"],
            "dp_gz_shuffled": ["--gzip", "--shuffle-keys", "--indent", "0", "--steps", "2"],
            "dp_kineto_layout": ["--indent", "2", "--steps", "2", "--ranks", "3", "--ranks-per-node", "2"],
            "dp_old_unlinked": ["--format", "old", "--unlinked", "--steps", "2", "--ranks", "5"],
            "dp_one_rank": ["--ranks", "1", "--buckets", "6", "--steps", "2"],
            "pp_overlapped": ["--kind", "pp", "--chunks", "5"],
            "pp_old_4stages": ["--kind", "pp", "--format", "old", "--pp-stages", "4", "--chunks", "5",
                               "--pp-mode", "partial"],
            "pp_no_tp": ["--kind", "pp", "--ranks", "3", "--pp-stages", "3", "--chunks", "4",
                         "--shuffle-keys", "--gzip"],
            # the twin options of gen_steps
            "dp_host_gap": ["--steps", "2", "--ranks", "4", "--host-gap-us", "300"],
            "pp_slow_comm": ["--kind", "pp", "--chunks", "4", "--slow-comm", "2.5"],
            # the schedules of issue 38's twin matrix
            "fsdp": ["--kind", "fsdp", "--steps", "3"],
            "fsdp_old_4": ["--kind", "fsdp", "--format", "old", "--steps", "2", "--ranks", "4"],
            "tp_8": ["--kind", "tp", "--steps", "2", "--slow-link", "3:2"],
            "tp_2x4_old": ["--kind", "tp", "--tp-size", "4", "--format", "old", "--steps", "2"],
            "f1b_4x2": ["--kind", "1f1b", "--pp-stages", "4", "--steps", "2", "--stage-us", "600"],
            "f1b_old_2x1": ["--kind", "1f1b", "--ranks", "2", "--format", "old", "--steps", "2",
                            "--microbatches", "3", "--late-rank", "1:500"],
        }
        for name, args in cases.items():
            with self.subTest(name):
                d = self.dir(name)
                gen(d, *args)
                self.assertChecks(d)

    def test_deterministic_and_format_independent(self):
        a, b, c = self.dir("det_a"), self.dir("det_b"), self.dir("det_c")
        gen(a, "--seed", "9", "--steps", "2")
        gen(b, "--seed", "9", "--steps", "2")
        gen(c, "--seed", "9", "--steps", "2", "--format", "old", "--gzip", "--shuffle-keys", "--indent", "2")
        for f in sorted(os.listdir(a)):
            with open(os.path.join(a, f), "rb") as x, open(os.path.join(b, f), "rb") as y:
                self.assertEqual(x.read(), y.read(), f)
        self.assertEqual(truth(a)["collectives"], truth(c)["collectives"])

    def test_straggler_late_everywhere(self):
        d = self.dir("strag")
        gen(d, "--steps", "6", "--straggler", "5", "--straggler-delay-us", "300")
        t = truth(d)
        late = []
        last = 0
        for c in t["collectives"][4:]:          # after the first step
            st = c["true_start_ns"]
            others = sorted(v for k, v in st.items() if k != "5")
            late.append(st["5"] - others[len(others) // 2])
            last += st["5"] == max(st.values())
        mean = sum(late) / len(late)
        self.assertTrue(200000 < mean < 360000, late)
        self.assertGreaterEqual(last, 0.9 * len(late))
        waits = [r["collective_wait"] for r in t["ranks"]]
        self.assertEqual(max(range(8), key=lambda r: waits[r]["arrived_last"]), 5)
        self.assertEqual(min(range(8), key=lambda r: waits[r]["wait_ns"]), 5)
        for c in t["collectives"]:
            ends = list(c["true_end_ns"].values())
            self.assertLessEqual(max(ends) - min(ends), t["end_jitter_ns"])

    def test_pipeline_modes(self):
        score = {}
        for mode in ("overlapped", "partial", "serialized"):
            d = self.dir("pp_" + mode)
            gen(d, "--kind", "pp", "--pp-mode", mode, "--chunks", "8")
            self.assertChecks(d)
            score[mode] = truth(d)["pipeline"]["overlap_score"]
        self.assertGreater(score["overlapped"], 0.9)
        self.assertLess(score["serialized"], 0.05)
        self.assertTrue(0.2 < score["partial"] < 0.7, score)

    def test_size_target(self):
        d = self.dir("size")
        gen(d, "--size-mb", "1")
        sizes = [os.path.getsize(os.path.join(d, f)) for f in os.listdir(d) if f.startswith("rank-")]
        self.assertGreaterEqual(max(sizes), 1000000)
        self.assertLess(max(sizes), 1200000)

    def test_checker_catches_wrong_truth(self):
        d = self.dir("mut")
        gen(d, "--steps", "2", "--ranks", "2")
        t = truth(d)
        t["ranks"][1]["counts"]["cat"]["kernel"] += 1
        t["ranks"][0]["gpu"]["overlap_ns"] += 1
        t["collectives"][0]["true_end_ns"]["1"] += 5000
        with open(os.path.join(d, "truth.json"), "w") as f:
            json.dump(t, f)
        errs = check_truth.Checker(d).run()
        self.assertTrue(any("cat" in e for e in errs), errs)
        self.assertTrue(any("overlap_ns" in e for e in errs), errs)
        self.assertTrue(any("collective 0" in e for e in errs), errs)

    def test_twins(self):
        """--host-gap-us and --slow-comm change nothing but the schedule:
        the same compute kernels in the same order with the same
        durations, transfers F times as long, and the truth says which
        option was given."""
        a, b, c = self.dir("tw_a"), self.dir("tw_b"), self.dir("tw_c")
        gen(a, "--seed", "5", "--steps", "3", "--ranks", "4")
        gen(b, "--seed", "5", "--steps", "3", "--ranks", "4", "--host-gap-us", "250")
        gen(c, "--seed", "5", "--steps", "3", "--ranks", "4", "--slow-comm", "2")

        def kernels(d):
            with open(os.path.join(d, "rank-1.json")) as f:
                ev = json.load(f)["traceEvents"]
            return [(e["name"], e["dur"]) for e in ev if e.get("cat") == "kernel"]
        def same(x, y):  # durations written in the rank's clock: 1 ns of rounding where they moved
            self.assertEqual([n for n, _ in x], [n for n, _ in y])
            self.assertLessEqual(max(abs(p - q) for (_, p), (_, q) in zip(x, y)), 0.0011)
        def comp(d):  # an NCCL kernel's duration includes its wait, which the change moves
            return [x for x in kernels(d) if not x[0].startswith("nccl")]
        ka = comp(a)
        same(ka, comp(b))
        same(ka, comp(c))
        # the allreduce of the last arrival lasts its transfer (+ <= 2 us jitter): twice as long
        ta, tc = truth(a), truth(c)
        for x, y in zip(ta["collectives"], tc["collectives"]):
            last = max(x["true_start_ns"], key=x["true_start_ns"].get)
            dx = x["true_end_ns"][last] - x["true_start_ns"][last]
            lc = max(y["true_start_ns"], key=y["true_start_ns"].get)
            dy = y["true_end_ns"][lc] - y["true_start_ns"][lc]
            self.assertLess(abs(dy - 2 * dx), 2 * 2000 + 2, (dx, dy))
        self.assertEqual(truth(b)["host_gap_ns"], 250000)
        self.assertEqual(tc["slow_comm"], 2.0)
        self.assertNotIn("host_gap_ns", ta)
        self.assertNotIn("slow_comm", ta)
        # host-bound: the steps are longer by at least one gap per launch that had to wait
        sa = [x["time_ns"] for x in ta["step_times"]]
        sb = [x["time_ns"] for x in truth(b)["step_times"]]
        self.assertTrue(all(y > x + 250000 for x, y in zip(sa, sb)), (sa, sb))

    def test_new_schedules(self):
        """The 1F1B schedule's transfers (Megatron's: S - 1 - s warm-up
        forwards, then one forward and one backward in turn), a bad link
        (only the instances the rank is in take longer) and a slow kernel
        type on one rank."""
        a = self.dir("f1b")
        gen(a, "--kind", "1f1b", "--pp-stages", "4", "--steps", "2", "--stage-us", "600", "--microbatches", "5")
        t = truth(a)
        for lo, hi, s in ((0, 2, 0), (2, 4, 1), (4, 6, 2), (1, 3, 0)):
            n = [c for c in t["collectives"] if c["kind"] == "sendrecv" and sorted(c["participants"]) == [lo, hi]]
            # per step: w = 3 - s warm-up forwards, 5 - w forward+backward pairs, w backwards
            self.assertEqual(len(n), 2 * (5 + 3 - s), (lo, hi))
        dp = [c for c in t["collectives"] if c["kind"] == "allreduce"]
        self.assertEqual(len(dp), 2 * 4)
        # --slow-link 5:2 in a TP 2x4 job: the transfers (end - last arrival) of
        # the instances with rank 5 in them double, the others stay
        b, c = self.dir("link_a"), self.dir("link_b")
        gen(b, "--kind", "tp", "--tp-size", "4", "--steps", "2", "--seed", "4", "--end-jitter-us", "0")
        gen(c, "--kind", "tp", "--tp-size", "4", "--steps", "2", "--seed", "4", "--end-jitter-us", "0",
            "--slow-link", "5:2")
        def xfers(d):
            out = []
            for x in truth(d)["collectives"]:
                m = max(x["true_start_ns"].values())
                out.append((5 in x["participants"], max(x["true_end_ns"].values()) - m))
            return out
        xb, xc = xfers(b), xfers(c)
        self.assertEqual(len(xb), len(xc))
        self.assertTrue(any(w for w, _ in xb) and not all(w for w, _ in xb))
        for (w, p), (_, q) in zip(xb, xc):
            self.assertEqual(q, 2 * p if w else p)
        self.assertEqual(truth(c)["slow_link"], [5, 2.0])
        self.assertNotIn("slow_link", truth(b))
        # --slow-kernel tn_n:2 --slow-kernel-rank 3: only rank 3's forward GEMMs
        e, f = self.dir("sk_a"), self.dir("sk_b")
        gen(e, "--steps", "2", "--ranks", "4", "--seed", "6")
        gen(f, "--steps", "2", "--ranks", "4", "--seed", "6", "--slow-kernel", "tn_n:2", "--slow-kernel-rank", "3")
        for r in range(4):
            def gemms(d):
                with open(os.path.join(d, "rank-%d.json" % r)) as fh:
                    ev = json.load(fh)["traceEvents"]
                return [(e2["name"], float(e2["dur"])) for e2 in ev
                        if e2.get("cat") == "kernel" and "gemm" in e2["name"]]
            ge, gf = gemms(e), gemms(f)
            self.assertEqual([n for n, _ in ge], [n for n, _ in gf])
            for (n, p), (_, q) in zip(ge, gf):
                want = 2 * p if (r == 3 and "_tn_n_" in n) else p
                self.assertLessEqual(abs(q - want), 0.0021, (r, n, p, q))
        self.assertEqual(truth(f)["slow_kernel_rank"], 3)

    def test_usage_errors(self):
        d = self.dir("bad")
        for args, opt in ((["--straggler", "8"], "--straggler"),
                          (["--kind", "pp", "--ranks", "6", "--pp-stages", "4"], "--pp-stages"),
                          (["--straggler-steps", "x"], "--straggler-steps"),
                          (["--kind", "pp", "--stage-us", "4000,abc"], "--stage-us"),
                          (["--host-gap-us", "-1"], "--host-gap-us"),
                          (["--slow-comm", "0"], "--slow-comm"),
                          (["--tp-size", "4"], "--tp-size"),
                          (["--kind", "tp", "--tp-size", "3"], "--tp-size"),
                          (["--slow-kernel-rank", "1"], "--slow-kernel-rank"),
                          (["--slow-link", "9:2"], "--slow-link"),
                          (["--kind", "fsdp", "--memory"], "--memory"),
                          (["--kind", "1f1b", "--ranks", "6", "--pp-stages", "4"], "--pp-stages")):
            p = gen(d, *args, expect_rc=2)
            self.assertTrue(p.stderr.startswith("gen_traces.py: " + opt + ":"), p.stderr)


if __name__ == "__main__":
    unittest.main()
