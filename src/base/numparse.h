/* Exact parsing of JSON number text: microseconds to integer nanoseconds
 * and integers, with no floating point on the way. */
#ifndef MT_BASE_NUMPARSE_H
#define MT_BASE_NUMPARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mergetrace/status.h"

/* Parse a JSON number's text exactly into nanoseconds from microseconds:
 * round(value * 1000) with ties away from zero, no floating point.
 * Accepts JSON number syntax (sign, fraction, exponent). Returns MT_OK,
 * MT_ERR_SYNTAX (not a number) or MT_ERR_RANGE (beyond int64). */
mt_status_t mt_parse_us_to_ns(const char *s, size_t len, int64_t *ns);

/* True when s[0..len) is exactly one number in strict JSON syntax. */
bool mt_number_valid(const char *s, size_t len);

/* Parse a JSON integer (no fraction/exponent... unless its value is an exact
 * integer, like 30669.0 or 1e3) into int64 / uint64. MT_ERR_RANGE on
 * overflow or a negative value for the unsigned form. */
mt_status_t mt_parse_int64(const char *s, size_t len, int64_t *v);
mt_status_t mt_parse_uint64(const char *s, size_t len, uint64_t *v);

/* The value of one hexadecimal digit (0-9, a-f, A-F), -1 for any other
 * byte. */
int mt_parse_hex_digit(char c);

#endif
