/* Exact decimal parsing: JSON number text -> int64 nanoseconds (from
 * microseconds) or int64/uint64 integers, without going through double. */
#include "base/numparse.h"

#include <stdbool.h>

/* A JSON number split into value = mant * 10^exp10, plus what was dropped
 * beyond the 64-bit mantissa (first dropped digit, and whether any later
 * dropped digit was non-zero). */
typedef struct decimal {
    bool neg;
    uint64_t mant;
    int64_t exp10;
    int first_dropped;   /* -1 when nothing was dropped */
    bool sticky;
} decimal_t;

static mt_status_t split_decimal(const char *s, size_t len, decimal_t *d)
{
    const char *p = s, *end = s + len;
    *d = (decimal_t){.first_dropped = -1};
    if (p < end && *p == '-') {
        d->neg = true;
        p++;
    }
    if (p == end || (unsigned)(*p - '0') > 9)
        return MT_ERR_SYNTAX;
    bool any = false;
    /* Leading zeros carry no information. */
    while (p < end && *p == '0') {
        p++;
        any = true;
    }
    for (; p < end && (unsigned)(*p - '0') <= 9; p++) {
        unsigned dg = (unsigned)(*p - '0');
        any = true;
        if (d->first_dropped < 0 && d->mant <= (UINT64_MAX - dg) / 10) {
            d->mant = d->mant * 10 + dg;
        } else {
            if (d->first_dropped < 0)
                d->first_dropped = (int)dg;
            else if (dg)
                d->sticky = true;
            d->exp10++;
        }
    }
    if (p < end && *p == '.') {
        p++;
        if (p == end || (unsigned)(*p - '0') > 9)
            return MT_ERR_SYNTAX;
        for (; p < end && (unsigned)(*p - '0') <= 9; p++) {
            unsigned dg = (unsigned)(*p - '0');
            if (d->first_dropped < 0 && d->mant <= (UINT64_MAX - dg) / 10) {
                d->mant = d->mant * 10 + dg;
                d->exp10--;
            } else if (d->first_dropped < 0) {
                d->first_dropped = (int)dg;
            } else if (dg) {
                d->sticky = true;
            }
        }
    }
    if (!any)
        return MT_ERR_SYNTAX;
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        bool eneg = false;
        if (p < end && (*p == '+' || *p == '-'))
            eneg = *p++ == '-';
        if (p == end || (unsigned)(*p - '0') > 9)
            return MT_ERR_SYNTAX;
        int64_t e = 0;
        for (; p < end && (unsigned)(*p - '0') <= 9; p++)
            if (e < 1000000)
                e = e * 10 + (*p - '0');
        d->exp10 += eneg ? -e : e;
    }
    return p == end ? MT_OK : MT_ERR_SYNTAX;
}

static const uint64_t pow10_tab[20] = {
    1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull,
    100000000ull, 1000000000ull, 10000000000ull, 100000000000ull, 1000000000000ull,
    10000000000000ull, 100000000000000ull, 1000000000000000ull, 10000000000000000ull,
    100000000000000000ull, 1000000000000000000ull, 10000000000000000000ull,
};

/* |value| * 10^shift rounded half away from zero, into *mag. 0 or
 * MT_ERR_RANGE when it does not fit a uint64. exact: set false when
 * rounding happened. */
static mt_status_t scale_round(const decimal_t *d, int64_t shift, uint64_t *mag, bool *exact)
{
    int64_t e = d->exp10 + shift;
    *exact = true;
    if (d->mant == 0) {
        *mag = 0;
        *exact = d->first_dropped <= 0 && !d->sticky;
        return MT_OK;
    }
    if (e >= 0) {
        if (d->first_dropped >= 0 && e > 0)
            return MT_ERR_RANGE; /* >= 10^19 * 10: cannot fit */
        if (e > 19)
            return MT_ERR_RANGE;
        uint64_t m = d->mant;
        if (e && m > UINT64_MAX / pow10_tab[e])
            return MT_ERR_RANGE;
        m *= pow10_tab[e];
        if (d->first_dropped >= 0) {
            /* e == 0: the dropped digit is the first one below the units. */
            *exact = d->first_dropped == 0 && !d->sticky;
            if (d->first_dropped >= 5) {
                if (m == UINT64_MAX)
                    return MT_ERR_RANGE;
                m++;
            }
        }
        *mag = m;
        return MT_OK;
    }
    if (-e > 19) {
        *mag = 0;
        *exact = false;
        return MT_OK;
    }
    uint64_t div = pow10_tab[-e];
    uint64_t q = d->mant / div, r = d->mant % div;
    *exact = r == 0 && d->first_dropped <= 0 && !d->sticky;
    /* Ties away from zero: round up when r >= div/2 (div is even for e < 0). */
    if (r >= div / 2)
        q++;
    *mag = q;
    return MT_OK;
}

static mt_status_t to_int64(const decimal_t *d, uint64_t mag, int64_t *v)
{
    if (d->neg) {
        if (mag > (uint64_t)INT64_MAX + 1)
            return MT_ERR_RANGE;
        *v = mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag;
    } else {
        if (mag > (uint64_t)INT64_MAX)
            return MT_ERR_RANGE;
        *v = (int64_t)mag;
    }
    return MT_OK;
}

bool mt_number_valid(const char *s, size_t len)
{
    const char *p = s, *e = s + len;
    if (p < e && *p == '-')
        p++;
    if (p == e)
        return false;
    if (*p == '0') {
        p++;
    } else if ((unsigned)(*p - '1') <= 8) {
        while (p < e && (unsigned)(*p - '0') <= 9)
            p++;
    } else {
        return false;
    }
    if (p < e && *p == '.') {
        const char *f = ++p;
        while (p < e && (unsigned)(*p - '0') <= 9)
            p++;
        if (p == f)
            return false;
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < e && (*p == '+' || *p == '-'))
            p++;
        const char *x = p;
        while (p < e && (unsigned)(*p - '0') <= 9)
            p++;
        if (p == x)
            return false;
    }
    return p == e;
}

mt_status_t mt_parse_us_to_ns(const char *s, size_t len, int64_t *ns)
{
    /* Fast path for what Kineto writes: [-]digits[.digits] with at most 18
     * significant digits in all ("1694128201435418", "1365627949863.953"). */
    const char *p = s, *end = s + len;
    bool neg = false;
    if (p < end && *p == '-') {
        neg = true;
        p++;
    }
    const char *ip = p;
    uint64_t v = 0;
    while (p < end && (unsigned)(*p - '0') <= 9)
        v = v * 10 + (unsigned)(*p++ - '0');
    size_t nint = (size_t)(p - ip);
    if (nint && nint <= 15 && (nint == 1 || *ip != '0')) {
        if (p == end) {
            *ns = (int64_t)(v * 1000);
            if (neg)
                *ns = -*ns;
            return MT_OK;
        }
        if (*p == '.') {
            const char *fp = ++p;
            uint64_t f = 0;
            while (p < end && (unsigned)(*p - '0') <= 9 && p - fp < 3)
                f = f * 10 + (unsigned)(*p++ - '0');
            size_t nf = (size_t)(p - fp);
            if (p == end && nf > 0) {
                static const uint64_t sc[4] = {0, 100, 10, 1};
                uint64_t r = v * 1000 + f * sc[nf];
                *ns = neg ? -(int64_t)r : (int64_t)r;
                return MT_OK;
            }
        }
    }
    decimal_t d;
    mt_status_t st = split_decimal(s, len, &d);
    if (st)
        return st;
    uint64_t mag;
    bool exact;
    st = scale_round(&d, 3, &mag, &exact);
    if (st)
        return st;
    return to_int64(&d, mag, ns);
}

/* Plain digits, at most 18 of them: no overflow possible (ids, counts). */
static inline bool small_digits(const char *s, size_t len, uint64_t *v)
{
    if (!len || len > 18)
        return false;
    uint64_t x = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned d = (unsigned)(s[i] - '0');
        if (d > 9)
            return false;
        x = x * 10 + d;
    }
    if (s[0] == '0' && len > 1)
        return false; /* leading zero: leave it to the general path */
    *v = x;
    return true;
}

mt_status_t mt_parse_int64(const char *s, size_t len, int64_t *v)
{
    uint64_t u;
    if (small_digits(s, len, &u)) {
        *v = (int64_t)u;
        return MT_OK;
    }
    if (len > 1 && s[0] == '-' && small_digits(s + 1, len - 1, &u)) {
        *v = -(int64_t)u;
        return MT_OK;
    }
    decimal_t d;
    mt_status_t st = split_decimal(s, len, &d);
    if (st)
        return st;
    uint64_t mag;
    bool exact;
    st = scale_round(&d, 0, &mag, &exact);
    if (st)
        return st;
    if (!exact)
        return MT_ERR_RANGE;
    return to_int64(&d, mag, v);
}

mt_status_t mt_parse_uint64(const char *s, size_t len, uint64_t *v)
{
    if (small_digits(s, len, v))
        return MT_OK;
    decimal_t d;
    mt_status_t st = split_decimal(s, len, &d);
    if (st)
        return st;
    uint64_t mag;
    bool exact;
    st = scale_round(&d, 0, &mag, &exact);
    if (st)
        return st;
    if (!exact || (d.neg && mag))
        return MT_ERR_RANGE;
    *v = mag;
    return MT_OK;
}

int mt_parse_hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}
