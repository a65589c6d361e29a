/* The library's version, as the merged trace's "generator" and --version
 * print it. */
#ifndef MERGETRACE_VERSION_H
#define MERGETRACE_VERSION_H

#define MERGETRACE_VERSION "0.1.0"

#endif
