/* The program's memory policy (mpi/heap.c says why). Not thread-safe
 * with respect to other threads allocating: call from the main thread. */
#ifndef MT_MPI_HEAP_H
#define MT_MPI_HEAP_H

/* Once, first thing in main (before MPI_Init). */
void heap_setup(void);

/* After a rank is done and its tables are freed: memory back to the kernel. */
void heap_release(void);

#endif
