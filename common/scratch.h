/*
 * scratch.h -- scratch buffers for the arrays and tables of walks and passes over big graphs.
 *
 * common/ holds code compiled into both the host library and the plugins built in this tree
 * (never a way for a plugin to reach the host: each binary has its own copy and its own state).
 * It may use libc and the kernel, nothing of ir/, registry/ or the ABI.
 *
 * Below 1 KiB a block comes from malloc; from 1 KiB it is a mapping (mmap/mremap) kept, when
 * freed, in a small per-thread cache and reused: a walk over a 10M-node graph then takes no
 * page fault and makes no system call in the steady state, a request of 1 KiB or more never
 * makes glibc consolidate the many small blocks an earlier pass freed, and growing a large
 * array moves into a cached mapping of its final size early.  Out of memory aborts with a
 * message.  gp_scratch_zalloc(n, size) is zeroed.  Free only with gp_scratch_free.  See
 * scratch.c for the cache's policy (sizes, lazy freeing after a second, page colouring).
 */
#ifndef GP_SCRATCH_H
#define GP_SCRATCH_H

#include <stddef.h>

void *gp_scratch_alloc(size_t n);
void *gp_scratch_zalloc(size_t n, size_t size);
void *gp_scratch_realloc(void *p, size_t n);
void gp_scratch_free(void *p);

#endif
