/* The program's memory policy (src/base/heap.c says why) and what the
 * process and the machine hold: a huge-page heap reserve, a trim per rank,
 * the memory still available and the resident set. Process-wide (glibc's
 * allocator settings): for a program, never called by the core itself. Not
 * thread-safe with respect to other threads allocating, except
 * mt_heap_release: call the others from the main thread. */
#ifndef MERGETRACE_HEAP_H
#define MERGETRACE_HEAP_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Once, first thing in main (before MPI_Init). */
void mt_heap_setup(void);

/* After a rank is done and its tables are freed (json_bytes: the size of
 * its trace): memory back to the kernel but 8 MiB, once 64 MB of traces
 * went through on this thread since the last time (heap.c says why not
 * all of it after every rank). */
void mt_heap_release(uint64_t json_bytes);

/* Big tables were freed in the middle of the heap (mt_heap_release after
 * a rank; the program when the critical path is done with the rows or the
 * GPU activities): their pages back to the kernel but 8 MiB at the top. */
void mt_heap_give_back(void);

/* What this machine can still give (bytes; Linux MemAvailable, or less
 * where the process's memory cgroup leaves less), this process's resident
 * set now, and its peak resident set so far (getrusage); 0 where unknown. */
uint64_t mt_heap_available(void);
uint64_t mt_heap_resident(void);
uint64_t mt_heap_peak(void);

#ifdef __cplusplus
}
#endif
#endif
