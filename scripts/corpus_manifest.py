#!/usr/bin/env python3
"""Regenerate tests/unit/corpus_manifest.h from ../shared/corpus/MANIFEST.tsv.

The counts in MANIFEST.tsv were made independently of mergetrace (Python's
json module over each file); the corpus test compares the loader with them.
Usage: scripts/corpus_manifest.py [MANIFEST.tsv] > tests/unit/corpus_manifest.h
"""
import csv
import json
import sys

src = sys.argv[1] if len(sys.argv) > 1 else '../shared/corpus/MANIFEST.tsv'
rows = list(csv.DictReader(open(src), delimiter='\t'))
out = ['/* Independent event counts of ../shared/corpus, transcribed from its',
       ' * MANIFEST.tsv (counted there with Python\'s json module by whoever built',
       ' * the corpus): events, per phase, per category (non-M events), and NCCL',
       ' * kernels per collective. Regenerate with scripts/corpus_manifest.py. */',
       'typedef struct corpus_row {', '    const char *path;',
       '    long events, ph_x, ph_i, ph_s, ph_f, ph_m;',
       '    const char *cats;   /* "cat:count,..." ("None" = no cat) */',
       '    const char *nccl;   /* "Kind:count,..." or "" */', '} corpus_row_t;', '',
       'static const corpus_row_t corpus_rows[] = {']
for r in rows:
    ph = json.loads(r['phases'])
    nccl = ''
    if r['nccl_kernels'].startswith('yes'):
        nccl = ','.join(f'{k}:{v}' for k, v in json.loads(r['nccl_kernels'][4:]).items())
    out.append('    {"%s", %s, %d, %d, %d, %d, %d, "%s", "%s"},' % (
        r['local_file'], r['event_count'], ph.get('X', 0), ph.get('i', 0), ph.get('s', 0),
        ph.get('f', 0), ph.get('M', 0), r['cats'], nccl))
out.append('};')
sys.stdout.write('\n'.join(out) + '\n')
