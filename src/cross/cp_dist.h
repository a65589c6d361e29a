/* The reduced whole-job statistics of the critical path (cp_dist.c,
 * critpath.h mt_cp_dist_reduce) as its readers see them: the straggler
 * what-if's factors (cp_run.c), the ideal what-if's typical values and
 * the Kineto typical value's staged median (cp_ideal.c). Internal to
 * src/cross/ and the unit tests. */
#ifndef MT_CROSS_CP_DIST_H
#define MT_CROSS_CP_DIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mergetrace/critpath.h"

/* One name's typical value (mt_cp_ideal_t "ideal"). */
typedef struct cp_dist_typ {
    uint64_t h;           /* the name's hash (critpath_int.h cp_name_hash) */
    int64_t v;
} cp_dist_typ_t;

/* A straggler's factor for one name (critpath.h "what-if", straggler). */
typedef struct cp_dist_fac {
    uint64_t h;
    int32_t rank;
    int32_t pad_;
    double f;
} cp_dist_fac_t;

struct mt_cp_dist {
    cp_dist_typ_t *typ;   /* by h; names with a value in a used step */
    size_t n_typ;
    cp_dist_fac_t *fac;   /* by (h, rank); only factors below 1 */
    size_t n_fac;
    size_t n_comm;        /* of typ, the comm names' (medians by histogram rounds) */
    unsigned rounds;      /* histogram rounds run */
    bool from_owners;     /* the members' transfers were worked out by the instances' owners */
    uint64_t sent, received; /* this process's payload bytes */
};

/* The typical value of the name of hash h into *v: true when d has one. */
bool cp_dist_typical(const mt_cp_dist_t *d, uint64_t h, int64_t *v);

/* The straggler factor of rank's activities of the name of hash h: 1.0
 * when none. */
double cp_dist_factor(const mt_cp_dist_t *d, uint64_t h, int32_t rank);

/* The typical value of a Kineto job's kernel name from its ranks' means
 * v[0..n), rank k of stage st[k] (-1 unknown, else below nst): the median
 * over the ranks, or, with two stages or more, the median over the
 * stages of each stage's median rank. sc holds n + 2 nst + 1 values of
 * scratch; v is reordered. (cp_dist.c says why by stage.) */
int64_t cp_staged_median(int64_t *v, const int32_t *st, size_t n, size_t nst, int64_t *sc);

#endif
