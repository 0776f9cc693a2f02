#ifndef CSTOWAGEBENCHSHIMS_H
#define CSTOWAGEBENCHSHIMS_H

// What the bench reads of the C library that Glibc's module map does not show Swift.
#include <stdlib.h>

/// Bytes the process holds allocated through malloc right now: glibc's mallinfo2() `uordblks`
/// (in use in every arena) plus `hblkhd` (chunks mapped on their own, the large buffers), so
/// what a data structure reserves, growth room included, whether its pages were touched yet or
/// not, and not what glibc keeps cached from blocks freed earlier. -1 where the C library has no
/// mallinfo2 (glibc before 2.33, other systems).
long long cstowage_bench_heap_in_use(void);

#endif
