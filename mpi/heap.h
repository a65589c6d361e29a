/* The program's memory policy (mpi/heap.c says why). Not thread-safe
 * with respect to other threads allocating: call from the main thread. */
#ifndef MT_MPI_HEAP_H
#define MT_MPI_HEAP_H

#include <stdint.h>

/* Once, first thing in main (before MPI_Init). */
void heap_setup(void);

/* After a rank is done and its tables are freed (json_bytes: the size of
 * its trace): memory back to the kernel but 8 MiB, once 64 MB of traces
 * went through since the last time (heap.c says why not all of it after
 * every rank). */
void heap_release(uint64_t json_bytes);

/* Big tables were freed in the middle of the heap (heap_release after a
 * rank; mpi/job.c when the critical path is done with the rows or the GPU
 * activities): their pages back to the kernel but 8 MiB at the top. */
void heap_give_back(void);

/* What this machine can still give (bytes; Linux MemAvailable), and this
 * process's resident set now; 0 where unknown. For the memory budget of
 * process 0 (mpi/job.c job_plan). */
uint64_t heap_available(void);
uint64_t heap_resident(void);

#endif
