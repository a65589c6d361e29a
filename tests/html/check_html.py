#!/usr/bin/env python3
"""report.html tests (ctest label html).

  check_html.py static  --mergetrace BIN --mpiexec MPIEXEC --root SRC --out DIR
      Runs mergetrace on sample_traces/dp8, sample_traces/pp8 and the
      hostile-names fixture (tests/data/hostile), parses each report.html with
      Python's html.parser and checks: the section ids, nothing fetched from
      outside, one inline script, the hostile names present as text and no
      element or attribute made from them, the lateness numbers of the
      hostile fixture against values worked out from its generator, the same
      bytes with 1 and 2 processes, and that --no-html writes no page.

  check_html.py browser --mergetrace BIN --root SRC --out DIR
      The same three pages rendered by headless Chromium (/usr/bin/chromium):
      the screenshot is not blank, the DOM after load holds the sections and
      the hostile names as text and no injected element, and the console
      logged nothing, and clicking a table header sorts the table. Exits 77
      (skipped) without Chromium.
"""
import argparse
import glob
import html.parser
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pngread import read_png  # noqa: E402

SECTIONS = ["inputs", "gpu-time", "stragglers", "collectives", "projection", "kernels", "clocks"]
# tests/data/hostile/make_hostile.py
HOSTILE = ["<script>alert(1)</script>", "\"><img src=x onerror=alert(1)>", "&amp; 'single' \"double\"",
           "<svg onload=alert(2)>",
           "\"><img src=x onerror=al"]  # the process group label, cut to 23 bytes
SETS = ["sample_traces/dp8", "sample_traces/pp8", "tests/data/hostile"]
SKIP = 77
# Debian's chromium; MT_CHROMIUM overrides (a missing path shows the skip)
CHROMIUM = os.environ.get("MT_CHROMIUM", "/usr/bin/chromium")

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


class Page(html.parser.HTMLParser):
    """Elements, attributes and text of a page."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags = []      # (tag, attrs dict)
        self.text = []      # text nodes (entities decoded)
        self.ids = set()
        self.script_text = []
        self._in_script = False
        self.titles = []    # text of SVG <title> elements
        self._in_title = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        if "id" in a:
            self.ids.add(a["id"])
        self._in_script = tag == "script"
        self._in_title = tag == "title"

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False
        if tag == "title":
            self._in_title = False

    def handle_data(self, data):
        if self._in_script:
            self.script_text.append(data)
        else:
            self.text.append(data)
        if self._in_title:
            self.titles.append(data)


def parse(text):
    p = Page()
    p.feed(text)
    p.close()
    return p


def check_page(name, text, hostile):
    """Checks that hold for the file as written and for the browser's DOM."""
    p = parse(text)
    for s in SECTIONS:
        if s not in p.ids:
            fail(f"{name}: no element with id {s!r}")
    scripts = [a for t, a in p.tags if t == "script"]
    if len(scripts) != 1 or any("src" in a for a in scripts):
        fail(f"{name}: expected one inline script, found {scripts}")
    for tag, a in p.tags:
        if tag in ("img", "iframe", "link", "object", "embed", "image", "foreignobject", "video", "audio"):
            fail(f"{name}: unexpected <{tag}> element {a}")
        for k, v in a.items():
            if k.startswith("on"):
                fail(f"{name}: event handler attribute {k}={v!r} on <{tag}>")
            if k in ("src", "href", "xlink:href") and v and not v.startswith("#") and k != "xmlns":
                fail(f"{name}: <{tag} {k}={v!r}> points outside the page")
    for m in re.finditer(r"url\(([^)]*)\)", text):
        if not m.group(1).startswith("#"):
            fail(f"{name}: url({m.group(1)}) outside the page")
    if "@import" in text or "http://" in text.replace("http://www.w3.org/2000/svg", ""):
        fail(f"{name}: a reference outside the page")
    if "https://" in text:
        fail(f"{name}: a reference outside the page")
    joined = "".join(p.text)
    if hostile:
        for h in HOSTILE:
            if h not in joined:
                fail(f"{name}: hostile name {h!r} is not in the page's text")
        script = "".join(p.script_text)
        if "alert" in script:
            fail(f"{name}: the page's script holds trace text")
    return p


def run(cmd, **kw):
    # Open MPI's singleton start-up allocations are not ours: no leak check
    # under ASan (as tests/cli does)
    kw.setdefault("env", dict(os.environ, ASAN_OPTIONS="detect_leaks=0"))
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def make_reports(args, out):
    """mergetrace -o out/<set> for each set; returns {set: report.html path}."""
    pages = {}
    for s in SETS:
        d = os.path.join(out, os.path.basename(s))
        shutil.rmtree(d, ignore_errors=True)
        r = run([args.mergetrace, "-q", "--no-merge", "-o", d, os.path.join(args.root, s)])
        if r.returncode != 0:
            fail(f"mergetrace on {s}: exit {r.returncode}: {r.stderr.strip()}")
            continue
        pages[s] = os.path.join(d, "report.html")
    return pages


def lateness_truth():
    """Mean lateness (us) per (rank, step) of the hostile fixture, from its
    generator's arrivals: rank 0 at 320, rank 1 at 320 + 3 s, rank 2 at 380
    (us after the step start, true clock); one collective per step, so the
    mean is the lateness itself; the median of three is the middle one."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "hostile"))
    import make_hostile as mh
    out = {}
    for s in range(mh.STEPS):
        arr = [320 + mh.LATE_US[r] + 3 * s * (r == 1) for r in range(mh.RANKS)]
        med = sorted(arr)[1]
        for r in range(mh.RANKS):
            out[(r, s)] = arr[r] - med
    return out


def cmd_static(args):
    out = args.out
    os.makedirs(out, exist_ok=True)
    pages = make_reports(args, out)
    for s, path in pages.items():
        with open(path, encoding="utf-8") as f:
            text = f.read()
        hostile = s.endswith("hostile")
        p = check_page(s, text, hostile)
        # the file itself: no payload survives unescaped
        for bad in ("<script>alert", "<img", "<svg onload"):
            if bad in text:
                fail(f"{s}: unescaped {bad!r} in report.html")
        if s.endswith("pp8"):
            # the pipeline section shows report.json's verdict and numbers
            with open(os.path.join(os.path.dirname(path), "report.json"), encoding="utf-8") as f:
                pipe = json.load(f)["pipeline"]
            if "pipeline" not in p.ids:
                fail(f"{s}: no pipeline section")
            joined = "".join(p.text)
            if pipe["verdict"] not in joined:
                fail(f"{s}: the verdict {pipe['verdict']!r} is not on the page")
            for c in pipe["per_chunk"]:
                if c["period_us"] is not None and "%.3f" % (c["period_us"] / 1000) not in joined:
                    fail(f"{s}: chunk {c['k']}'s period is not in the chunk table")
        elif "pipeline" in p.ids:
            fail(f"{s}: a pipeline section for a job without a pipeline")
        # the steps section (strips, what-if table) exactly when report.json has steps
        with open(os.path.join(os.path.dirname(path), "report.json"), encoding="utf-8") as f:
            has_steps = json.load(f).get("steps") is not None
        if has_steps != ("steps" in p.ids):
            fail(f"{s}: report.json steps {has_steps}, steps section on the page {'steps' in p.ids}")
        if hostile:
            truth = lateness_truth()
            titles = "\n".join(p.titles)
            for (r, st), v in sorted(truth.items()):
                want = f"rank {r} step {st}: mean lateness {'+' if v > 0 else ''}{v:.1f} us"
                if want not in titles:
                    fail(f"{s}: heat map cell {want!r} not found")
            # beside each row, the terminal's figure (issue 39 item 8): the
            # rank's median lateness (nearest rank, the lower middle) over
            # the steps' collectives where it arrived last
            joined = "".join(p.text)
            for r in range(3):
                when = sorted(v for (rr, st), v in truth.items()
                              if rr == r and v == max(truth[(q, st)] for q in range(3)) and v > 0)
                if when and f"+{when[(len(when) - 1) // 2] / 1000:.3f} ms" not in joined:
                    fail(f"{s}: heat map: rank {r} when last +{when[(len(when) - 1) // 2] / 1000:.3f} ms not shown")
            # the sample before/after picture: after correction every end
            # is on the median (the fixture's kernels end together)
            for r in range(3):
                if f"rank {r}: 0.0 us from the median end" not in titles:
                    fail(f"{s}: rank {r}'s corrected end is not on the median")
    # same bytes with 2 processes
    if args.mpiexec and "sample_traces/dp8" in pages:
        d1 = os.path.join(out, "dp8")
        with open(os.path.join(d1, "report.html"), "rb") as f:
            one = f.read()
        env = dict(os.environ, OMPI_MCA_btl_vader_single_copy_mechanism="none",
                   ASAN_OPTIONS="detect_leaks=0")  # Open MPI's own allocations are not ours
        if os.getuid() == 0:
            env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        r = run(["timeout", "120", args.mpiexec, "-n", "2", "--oversubscribe", args.mergetrace, "-q", "--no-merge",
                 "-o", d1, os.path.join(args.root, "sample_traces/dp8")], env=env)
        if r.returncode != 0:
            fail(f"mpiexec -n 2: exit {r.returncode}: {r.stderr.strip()[-500:]}")
        else:
            with open(os.path.join(d1, "report.html"), "rb") as f:
                if f.read() != one:
                    fail("report.html differs between 1 and 2 processes")
    # --no-html
    d = os.path.join(out, "nohtml")
    shutil.rmtree(d, ignore_errors=True)
    r = run([args.mergetrace, "-q", "--no-merge", "--no-html", "-o", d, os.path.join(args.root, SETS[0])])
    if r.returncode != 0 or not os.path.exists(os.path.join(d, "report.json")) or \
            os.path.exists(os.path.join(d, "report.html")):
        fail("--no-html: expected report.json and no report.html")
    leftovers = glob.glob(os.path.join(out, "*", "report.html.tmp.*"))
    if leftovers:
        fail(f"temporary files left: {leftovers}")
    return 1 if failures else 0


def chromium_cmd(profile):
    return [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--no-first-run", "--disable-extensions", "--disable-sync", "--mute-audio",
            f"--user-data-dir={profile}"]


def cmd_browser(args):
    if not os.access(CHROMIUM, os.X_OK):
        print(f"SKIP: {CHROMIUM} is not installed (scripts/test installs chromium when it can)")
        return SKIP
    out = args.out
    os.makedirs(out, exist_ok=True)
    pages = make_reports(args, out)
    for s, path in pages.items():
        name = os.path.basename(s)
        url = "file://" + os.path.abspath(path)
        png = os.path.join(out, f"{name}.png")
        if os.path.exists(png):
            os.remove(png)
        with tempfile.TemporaryDirectory() as prof:
            r = run(chromium_cmd(prof) + ["--enable-logging=stderr", "--v=0", "--hide-scrollbars",
                                          f"--screenshot={png}", "--window-size=1280,2000", url], timeout=120)
        log = r.stderr
        if r.returncode != 0 or not os.path.exists(png):
            fail(f"{name}: chromium --screenshot failed (exit {r.returncode}): {log[-800:]}")
            continue
        for line in log.splitlines():
            if "CONSOLE" in line or "Uncaught" in line:
                fail(f"{name}: the page logged: {line.strip()}")
        w, h, ch, rows = read_png(png)
        colours, inked = set(), 0
        step = 3
        for y in range(0, h, step):
            row = rows[y]
            for x in range(0, w * ch, ch * step):
                px = row[x:x + min(ch, 3)]
                colours.add(px)
                if px != b"\xff" * len(px):
                    inked += 1
        total = ((h + step - 1) // step) * ((w + step - 1) // step)
        print(f"{name}: screenshot {w}x{h}, {len(colours)} distinct colours, {100.0 * inked / total:.1f}% inked")
        if len(colours) < 16 or inked < total // 50:
            fail(f"{name}: the screenshot looks blank ({len(colours)} colours, {inked} of {total} pixels inked)")
        with tempfile.TemporaryDirectory() as prof:
            r = run(chromium_cmd(prof) + ["--enable-logging=stderr", "--v=0", "--dump-dom", url], timeout=120)
        if r.returncode != 0 or "<body" not in r.stdout:
            fail(f"{name}: chromium --dump-dom failed (exit {r.returncode}): {r.stderr[-800:]}")
            continue
        with open(os.path.join(out, f"{name}.dom.html"), "w", encoding="utf-8") as f:
            f.write(r.stdout)
        for line in r.stderr.splitlines():
            if "CONSOLE" in line or "Uncaught" in line:
                fail(f"{name}: the page logged: {line.strip()}")
        check_page(name + " (DOM)", r.stdout, s.endswith("hostile"))
        if not re.search(r'<html[^>]*class="js"', r.stdout):
            fail(f"{name}: the page's script did not run to its end (no class js on <html>)")
    if "sample_traces/pp8" in pages:
        check_sorting(pages["sample_traces/pp8"], out)
    return 1 if failures else 0


# Appended to a copy of a page: click the "span ms" header of the GPU time
# table twice and write the column after each click into <pre id="probe">.
SORT_PROBE = """<script>
(function(){
var t=document.querySelector('#gpu-time table'),th=t.tHead.rows[0].cells[1],out=[];
function col(){var r=t.tBodies[0].rows,v=[];for(var i=0;i<r.length;i++)v.push(parseFloat(r[i].cells[1].getAttribute('data-v')));return v;}
out.push(col());th.click();out.push(col());th.click();out.push(col());
var p=document.createElement('pre');p.id='probe';p.textContent=JSON.stringify(out);document.body.appendChild(p);
})();
</script>"""


def check_sorting(path, out):
    """The page's table sorting, in the browser: one click sorts
    descending, the next ascending."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    probe = os.path.join(out, "sort_probe.html")
    with open(probe, "w", encoding="utf-8") as f:
        f.write(text.replace("</body>", SORT_PROBE + "</body>"))
    with tempfile.TemporaryDirectory() as prof:
        r = run(chromium_cmd(prof) + ["--dump-dom", "file://" + os.path.abspath(probe)], timeout=120)
    m = re.search(r'<pre id="probe">([^<]*)</pre>', r.stdout)
    if not m:
        fail(f"sorting probe: no result ({r.stderr[-400:]})")
        return
    import json
    before, down, up = json.loads(m.group(1))
    if down != sorted(before, reverse=True) or up != sorted(before) or len(before) < 2:
        fail(f"sorting probe: {before} -> {down} -> {up}")
    else:
        print(f"sorting: {len(before)} rows sorted descending, then ascending")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["static", "browser"])
    ap.add_argument("--mergetrace", required=True)
    ap.add_argument("--mpiexec", default="")
    ap.add_argument("--root", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    rc = cmd_static(args) if args.mode == "static" else cmd_browser(args)
    if rc == 0:
        print("OK")
    return rc


if __name__ == "__main__":
    sys.exit(main())
