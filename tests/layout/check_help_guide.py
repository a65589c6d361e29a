#!/usr/bin/env python3
"""`mergetrace --help` and docs/guide.md's option tables checked against each
other (issue 44 item 1): the same options, each with the same argument name,
the same exit codes and the same --gate metrics, so that neither can drift
from the other.

Usage: check_help_guide.py MERGETRACE GUIDE.md
       check_help_guide.py --self-test MERGETRACE GUIDE.md

The options of --help are its indented option lines ("  -o, --output DIR  ...",
"      --no-html  ..."); the guide's are the first cells of the tables under
"## Options by task" ("| `-o, --output DIR` | ..."). The exit codes are those
of --help's "Exit codes:" paragraph and the first column of the guide's exit
code table. --self-test drops one option from a copy of the guide and renames
another, changes an exit code and drops a --gate metric, and expects the
check to report each."""
import re
import subprocess
import sys

# an option line: its argument name, when it has one, holds a capital, ':' or
# '=' (DIR, A:B, kernel:GLOB=F); the description may follow after one space
# when the option fills the column (--pp-stages LIST stages ...)
HELP_OPT = re.compile(r'^ {2,8}(?:(-\w), )?(--[a-z][a-z0-9-]*)(?: ([^\s]*[A-Z:=][^\s]*))?(?: |$)')
GUIDE_OPT = re.compile(r'^\| `(?:(-\w), )?(--[a-z][a-z0-9-]*)(?: ([^`]+))?` \|')


def help_options(text):
    opts = {}
    for line in text.splitlines():
        m = HELP_OPT.match(line)
        if m:
            opts[m.group(2)] = (m.group(1) or '', m.group(3) or '')
    codes = set()
    m = re.search(r'^Exit codes:(.*?)(?:\n\n|\Z)', text, re.S | re.M)
    if m:
        codes = set(re.findall(r'(?:^|; )(\d+) ', m.group(1).replace('\n', ' ').strip()))
    return opts, codes


def guide_options(text):
    sec = re.search(r'^## Options by task\n(.*?)(?=^## )', text, re.S | re.M)
    if not sec:
        return None, None
    opts = {}
    for line in sec.group(1).splitlines():
        m = GUIDE_OPT.match(line)
        if m:
            if m.group(2) in opts:
                opts[m.group(2) + ' (twice)'] = ('', '')
            opts[m.group(2)] = (m.group(1) or '', m.group(3) or '')
    codes = set()
    ex = re.search(r'^## Exit codes and errors\n(.*?)(?=^## |\Z)', text, re.S | re.M)
    if ex:
        codes = set(re.findall(r'^\| (\d+) \|', ex.group(1), re.M))
    return opts, codes


METRIC = re.compile(r'\b[a-z]+(?:_[a-z0-9]+)+\b')


def gate_metrics(help_text, guide_text):
    """The --gate metrics: in --help, the lines from "--gate EXPR" to "X is";
    in the guide, the paragraph "The metrics of `--gate`: ..."."""
    h = re.search(r'--gate EXPR(.*?)\n\s*X is', help_text, re.S)
    g = re.search(r'^The metrics of `--gate`:(.*?)(?:\n\n)', guide_text, re.S | re.M)
    return (set(METRIC.findall(h.group(1))) if h else set(),
            set(METRIC.findall(g.group(1))) if g else set())


def compare(help_text, guide_text):
    hopts, hcodes = help_options(help_text)
    gopts, gcodes = guide_options(guide_text)
    errs = []
    hm, gm = gate_metrics(help_text, guide_text)
    if not hm:
        errs.append('--help: no --gate metrics found')
    if hm != gm:
        errs.append('--gate metrics: only in --help %s, only in the guide %s' % (sorted(hm - gm), sorted(gm - hm)))
    if gopts is None:
        return ['docs/guide.md: no "## Options by task" section']
    if len(hopts) < 20:
        errs.append('--help: only %d options found: has its layout changed?' % len(hopts))
    for o in sorted(set(hopts) - set(gopts)):
        errs.append('%s: in --help, not in the guide\'s option tables' % o)
    for o in sorted(set(gopts) - set(hopts)):
        errs.append('%s: in the guide\'s option tables, not in --help' % o)
    for o in sorted(set(hopts) & set(gopts)):
        if hopts[o] != gopts[o]:
            errs.append('%s: --help says %r, the guide %r (short option, argument)' % (o, hopts[o], gopts[o]))
    if not hcodes:
        errs.append('--help: no "Exit codes:" paragraph')
    if hcodes != gcodes:
        errs.append('exit codes: --help %s, the guide %s' % (sorted(hcodes, key=int), sorted(gcodes, key=int)))
    return errs


def main(argv):
    selftest = argv[1:2] == ['--self-test']
    args = argv[2:] if selftest else argv[1:]
    if len(args) != 2:
        print(__doc__.split('\n\n')[1], file=sys.stderr)
        return 2
    help_text = subprocess.run([args[0], '--help'], capture_output=True, text=True, check=True).stdout
    guide_text = open(args[1], encoding='utf-8').read()
    errs = compare(help_text, guide_text)
    if selftest:
        if errs:
            print('self-test: the guide itself does not pass:', *errs, sep='\n  ')
            return 1
        broken = re.sub(r'^\| `--no-drift` \|.*\n', '', guide_text, flags=re.M)
        broken = broken.replace('| `--rank-map FILE` |', '| `--rank-map PATH` |')
        broken = re.sub(r'^\| 64 \|', '| 65 |', broken, flags=re.M)
        broken = broken.replace('`period_p50_us`, ', '', 1)
        got = compare(help_text, broken)
        want = ['--no-drift: in --help', '--rank-map: --help says', 'exit codes:', '--gate metrics:']
        missing = [w for w in want if not any(e.startswith(w) for e in got)]
        if missing or len(got) != 4:
            print('self-test: expected 4 reports starting', want, 'got', got)
            return 1
        print('self-test: the four breaches reported:', *got, sep='\n  ')
        return 0
    if errs:
        print('--help and docs/guide.md disagree:', *errs, sep='\n  ')
        return 1
    hopts, hcodes = help_options(help_text)
    print('--help and docs/guide.md: the same %d options, exit codes %s and %d --gate metrics'
          % (len(hopts), ' '.join(sorted(hcodes, key=int)), len(gate_metrics(help_text, guide_text)[0])))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
