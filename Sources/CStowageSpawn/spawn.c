#define _GNU_SOURCE
#include "CStowageSpawn.h"

#include <errno.h>

int cstowage_spawn_add_closefrom(posix_spawn_file_actions_t *actions, int lowest) {
#if defined(__GLIBC__)
    return posix_spawn_file_actions_addclosefrom_np(actions, lowest);
#else
    (void)actions;
    (void)lowest;
    return ENOTSUP;
#endif
}

int cstowage_spawn_add_chdir(posix_spawn_file_actions_t *actions, const char *path) {
    return posix_spawn_file_actions_addchdir_np(actions, path);
}
