// statx(2) is declared by glibc's <sys/stat.h> only with _GNU_SOURCE.
#define _GNU_SOURCE
#include "CStowageShims.h"

// Linux has the l* variants (no symlink following); Apple spells it as an option flag.
int stowage_setxattr(const char *path, const char *name, const void *value, size_t size) {
#if defined(__APPLE__)
    return setxattr(path, name, value, size, 0, XATTR_NOFOLLOW);
#else
    return lsetxattr(path, name, value, size, 0);
#endif
}

ssize_t stowage_getxattr(const char *path, const char *name, void *value, size_t size) {
#if defined(__APPLE__)
    return getxattr(path, name, value, size, 0, XATTR_NOFOLLOW);
#else
    return lgetxattr(path, name, value, size);
#endif
}

ssize_t stowage_fgetxattr(int descriptor, const char *name, void *value, size_t size) {
#if defined(__APPLE__)
    return fgetxattr(descriptor, name, value, size, 0, 0);
#else
    return fgetxattr(descriptor, name, value, size);
#endif
}

int stowage_removexattr(const char *path, const char *name) {
#if defined(__APPLE__)
    return removexattr(path, name, XATTR_NOFOLLOW);
#else
    return lremovexattr(path, name);
#endif
}

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#if defined(__linux__)
#include <sys/sysmacros.h>
#endif

static void stowage_fill_from_stat(const struct stat *source, struct stowage_file_status *status) {
    status->mode = source->st_mode;
    status->link_count = source->st_nlink;
    status->inode = source->st_ino;
    status->device = (unsigned long long)source->st_dev;
    status->blocks = source->st_blocks;
    status->size = source->st_size;
#if defined(__APPLE__)
    status->modification_seconds = source->st_mtimespec.tv_sec;
    status->modification_nanoseconds = source->st_mtimespec.tv_nsec;
    status->birth_seconds = source->st_birthtimespec.tv_sec;
    status->birth_nanoseconds = source->st_birthtimespec.tv_nsec;
    status->has_birth_time = 1;
#else
    status->modification_seconds = source->st_mtim.tv_sec;
    status->modification_nanoseconds = source->st_mtim.tv_nsec;
    status->birth_seconds = 0;
    status->birth_nanoseconds = 0;
    status->has_birth_time = 0;
#endif
    status->mount_id = 0;
    status->has_mount_id = 0;
}

// STATX_MNT_ID (Linux 5.8) tells two mounts of one device apart: a bind mount of a directory
// of the same file system has the same st_dev, so only the mount ID shows the boundary that
// `rm --one-file-system` and `du -x` must not cross.
#if defined(__linux__) && defined(STATX_BTIME)
#ifndef STATX_MNT_ID
#define STATX_MNT_ID 0x00001000U
#endif
static int stowage_statx(int directory, const char *name, int flags, struct stowage_file_status *status) {
    struct statx extended;
    if (statx(directory, name, flags, STATX_BASIC_STATS | STATX_BTIME | STATX_MNT_ID, &extended) != 0) return -1;
    status->mode = extended.stx_mode;
    status->link_count = extended.stx_nlink;
    status->inode = extended.stx_ino;
    status->device = makedev(extended.stx_dev_major, extended.stx_dev_minor);
    status->blocks = (long long)extended.stx_blocks;
    status->size = (long long)extended.stx_size;
    status->modification_seconds = extended.stx_mtime.tv_sec;
    status->modification_nanoseconds = extended.stx_mtime.tv_nsec;
    status->has_birth_time = (extended.stx_mask & STATX_BTIME) ? 1 : 0;
    status->birth_seconds = status->has_birth_time ? extended.stx_btime.tv_sec : 0;
    status->birth_nanoseconds = status->has_birth_time ? extended.stx_btime.tv_nsec : 0;
    status->has_mount_id = (extended.stx_mask & STATX_MNT_ID) ? 1 : 0;
    status->mount_id = status->has_mount_id ? extended.stx_mnt_id : 0;
    return 0;
}
#endif

int stowage_status_at(int directory, const char *name, struct stowage_file_status *status) {
#if defined(__linux__) && defined(STATX_BTIME)
    if (stowage_statx(directory, name, AT_SYMLINK_NOFOLLOW, status) == 0) return 0;
    if (errno != ENOSYS) return -1;
#endif
    struct stat plain;
    if (fstatat(directory, name, &plain, AT_SYMLINK_NOFOLLOW) != 0) return -1;
    stowage_fill_from_stat(&plain, status);
    return 0;
}

int stowage_status_of(int descriptor, struct stowage_file_status *status) {
#if defined(__linux__) && defined(STATX_BTIME)
    if (stowage_statx(descriptor, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, status) == 0) return 0;
    if (errno != ENOSYS) return -1;
#endif
    struct stat plain;
    if (fstat(descriptor, &plain) != 0) return -1;
    stowage_fill_from_stat(&plain, status);
    return 0;
}

#if defined(__linux__)
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

// Linux: openat2(2) with RESOLVE_NO_SYMLINKS (5.6+); -1 with ENOSYS where the kernel or a
// seccomp filter does not offer it, for the caller's component-by-component walk. Not
// RESOLVE_BENEATH: the caller refuses `..` and absolute paths itself, so it would add nothing
// but its EAGAIN when a rename races a lookup.
// Apple: O_NOFOLLOW_ANY (macOS 11, iOS 14), which refuses a link anywhere in the path; `..` is
// refused by the caller on both.
int stowage_open_beneath(int directory, const char *path, int flags) {
#if defined(__linux__) && defined(SYS_openat2)
    struct open_how how;
    memset(&how, 0, sizeof how);
    how.flags = (unsigned long long)(unsigned int)flags;
    how.resolve = RESOLVE_NO_SYMLINKS;
    return (int)syscall(SYS_openat2, directory, path, &how, sizeof how);
#elif defined(__APPLE__) && defined(O_NOFOLLOW_ANY)
    return openat(directory, path, flags | O_NOFOLLOW_ANY);
#else
    (void)directory; (void)path; (void)flags;
    errno = ENOSYS;
    return -1;
#endif
}
