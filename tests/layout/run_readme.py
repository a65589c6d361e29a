#!/usr/bin/env python3
"""The README's commands run as written (issue 44 item 1).

Usage: run_readme.py MERGETRACE README.md SOURCE_DIR WORK_DIR

Every line of a ```sh block of README.md that starts with `mergetrace` and
names sample_traces is run by /bin/sh in WORK_DIR (a fresh directory holding
a link to SOURCE_DIR/sample_traces), with `mergetrace` meaning the program
under test. It must exit 0, or 3 when it has a --gate (a gate that fails is
what such a line shows), print no "mergetrace:" error line (warnings
and failed gates aside), and leave a
report.json in its output directory. The ```text block that begins with
"$ mergetrace ..." (the README's terminal excerpt) is run the same way and
each of its lines but "..." must be a line the program printed. Fails when
the README has no such command at all."""
import os
import re
import shutil
import subprocess
import sys


def blocks(text, lang):
    return re.findall(r'^```' + lang + r'\n(.*?)^```', text, re.S | re.M)


def run(cmd, work, prog):
    env = dict(os.environ, PATH=os.path.dirname(prog) + os.pathsep + os.environ.get('PATH', ''),
               NO_COLOR='1')
    env.pop('MERGETRACE_MPI', None)
    # the excerpt is a run on two worker threads (one per core of a 2-core
    # machine), whatever this machine's CPUs: -j 2 for every command
    env['MERGETRACE_JOBS'] = '2'
    return subprocess.run(['/bin/sh', '-c', cmd], cwd=work, env=env, capture_output=True,
                          text=True, timeout=300)


def out_dir(cmd, work):
    m = re.search(r'(?:^|\s)(?:-o|--output)\s+(\S+)', cmd)
    return os.path.join(work, m.group(1) if m else 'mergetrace-out')


def main(argv):
    if len(argv) != 5:
        print(__doc__.split('\n\n')[1], file=sys.stderr)
        return 2
    prog, readme, src, work = os.path.abspath(argv[1]), argv[2], argv[3], argv[4]
    if os.path.basename(prog) != 'mergetrace':
        # the commands say `mergetrace`: give the program that name
        os.makedirs(work + '-bin', exist_ok=True)
        link = os.path.join(work + '-bin', 'mergetrace')
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(prog, link)
        prog = link
    text = open(readme, encoding='utf-8').read()
    cmds = [line.strip() for b in blocks(text, 'sh') for line in b.splitlines()
            if line.strip().startswith('mergetrace') and 'sample_traces' in line]
    excerpts = [b for b in blocks(text, 'text') if b.startswith('$ mergetrace')]
    if not cmds and not excerpts:
        print('README: no command that uses sample_traces')
        return 1
    fails = []
    for i, cmd in enumerate(cmds + [e.splitlines()[0][2:] for e in excerpts]):
        w = os.path.join(work, 'c%d' % i)
        shutil.rmtree(w, ignore_errors=True)
        os.makedirs(w)
        os.symlink(os.path.join(os.path.abspath(src), 'sample_traces'), os.path.join(w, 'sample_traces'))
        r = run(cmd, w, prog)
        ok = {0, 3} if '--gate' in cmd else {0}
        errs = [l for l in r.stderr.splitlines() if l.startswith('mergetrace:') and 'gate failed' not in l
                and 'warning:' not in l]
        why = []
        if r.returncode not in ok:
            why.append('exit %d (expected %s)' % (r.returncode, ' or '.join(map(str, sorted(ok)))))
        if errs:
            why.append('error line: ' + errs[0])
        if not os.path.isfile(os.path.join(out_dir(cmd, w), 'report.json')):
            why.append('no report.json in ' + os.path.relpath(out_dir(cmd, w), w))
        if i >= len(cmds):
            printed = set(r.stdout.splitlines())
            for line in excerpts[i - len(cmds)].splitlines()[1:]:
                if line != '...' and line not in printed:
                    why.append('excerpt line not printed: ' + line)
        print('%s: %s' % (cmd, 'ok' if not why else '; '.join(why)))
        if why:
            fails.append(cmd)
    print('%d of %d README commands ran as written' % (len(cmds) + len(excerpts) - len(fails),
                                                       len(cmds) + len(excerpts)))
    return 1 if fails else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
