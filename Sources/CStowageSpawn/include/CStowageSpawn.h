#ifndef CSTOWAGESPAWN_H
#define CSTOWAGESPAWN_H

#include <spawn.h>

/// Adds "close every descriptor from `lowest` up" to `actions`: glibc's
/// posix_spawn_file_actions_addclosefrom_np (glibc 2.34), which Glibc's module map hides from
/// Swift because it needs _GNU_SOURCE. Returns ENOTSUP where the C library has no such action
/// (Darwin, where POSIX_SPAWN_CLOEXEC_DEFAULT does the same).
int cstowage_spawn_add_closefrom(posix_spawn_file_actions_t *actions, int lowest);

/// Adds "change to `path`" to `actions`: posix_spawn_file_actions_addchdir_np (glibc 2.29,
/// macOS 10.15).
int cstowage_spawn_add_chdir(posix_spawn_file_actions_t *actions, const char *path);

#endif
