/* The memory a process's cgroup leaves, read from files whose places are
 * given (src/base/heap.c reads the system's; tests a tree of their own). */
#ifndef MT_BASE_CGROUP_H
#define MT_BASE_CGROUP_H

#include <stdint.h>

/* What the memory cgroup named in self_cgroup (the format of
 * /proc/self/cgroup) and its ancestors leave under sysfs (the format of
 * /sys/fs/cgroup): limit less usage, the least over the levels. cgroup v2
 * (memory.max, memory.current) or v1's memory controller under
 * sysfs/memory (memory.limit_in_bytes, memory.usage_in_bytes); UINT64_MAX
 * when no level has a limit or nothing can be read. */
uint64_t mt_heap_cgroup_room(const char *self_cgroup, const char *sysfs);

#endif
