#ifndef C_STOWAGE_SHIMS_H
#define C_STOWAGE_SHIMS_H

// Declarations Swift's Glibc module does not export on every distribution.
#include <sys/types.h>

#if defined(__linux__) || defined(__APPLE__)
#include <sys/xattr.h>
#endif

#include <stdint.h>

/// Loads a 64-bit value another process may store concurrently (a `MAP_SHARED` page).
/// Swift's `Atomic` cannot live at an address it did not allocate, so shared memory goes
/// through these two sequentially consistent C11 builtins.
static inline uint64_t stowage_atomic_load_u64(const uint64_t *address) {
    return __atomic_load_n(address, __ATOMIC_SEQ_CST);
}

/// Stores a 64-bit value that other processes read with `stowage_atomic_load_u64`.
static inline void stowage_atomic_store_u64(uint64_t *address, uint64_t value) {
    __atomic_store_n(address, value, __ATOMIC_SEQ_CST);
}

/// Adds to a 64-bit value in shared memory atomically; returns the value before.
static inline uint64_t stowage_atomic_fetch_add_u64(uint64_t *address, uint64_t value) {
    return __atomic_fetch_add(address, value, __ATOMIC_SEQ_CST);
}

/// Sets bits of a 64-bit value in shared memory atomically; returns the value before.
static inline uint64_t stowage_atomic_fetch_or_u64(uint64_t *address, uint64_t bits) {
    return __atomic_fetch_or(address, bits, __ATOMIC_SEQ_CST);
}

/// Sets an extended attribute on `path` without following a final symbolic link.
int stowage_setxattr(const char *path, const char *name, const void *value, size_t size);
/// Reads an extended attribute of `path` without following a final symbolic link.
ssize_t stowage_getxattr(const char *path, const char *name, void *value, size_t size);
/// Reads an extended attribute of the file open at `descriptor`.
ssize_t stowage_fgetxattr(int descriptor, const char *name, void *value, size_t size);
/// Removes an extended attribute of `path` without following a final symbolic link.
int stowage_removexattr(const char *path, const char *name);

/// What Stowage's walks need to know about one directory entry.
struct stowage_file_status {
    unsigned int mode;
    unsigned long long link_count;
    unsigned long long inode;
    unsigned long long device;
    long long blocks;
    long long size;
    long long modification_seconds;
    long long modification_nanoseconds;
    long long birth_seconds;
    long long birth_nanoseconds;
    /// 1 when the file system reported a birth time, 0 when it has none.
    int has_birth_time;
    /// The mount's unique ID (`statx`'s `stx_mnt_id`): two bind mounts of one device differ here.
    unsigned long long mount_id;
    /// 1 when `mount_id` was reported (Linux 5.8+), 0 elsewhere.
    int has_mount_id;
};

/// Examines `name` in the directory open at `directory` without following a final symbolic
/// link: `statx(2)` with the birth time on Linux (falling back to `fstatat` where the kernel has
/// no statx), `fstatat` with `st_birthtimespec` on Apple platforms. Returns 0 or -1 with errno.
int stowage_status_at(int directory, const char *name, struct stowage_file_status *status);

/// Examines the file open at `descriptor` itself, as `stowage_status_at` examines an entry
/// (`statx` with `AT_EMPTY_PATH`, `fstat` where there is none). Returns 0 or -1 with errno.
int stowage_status_of(int descriptor, struct stowage_file_status *status);

/// Opens `path` (relative, no `..`) below the directory open at `directory` without following a
/// symbolic link anywhere on the way; -1 with `errno` (`ELOOP` for a link, `ENOSYS` where the
/// system has no such call).
int stowage_open_beneath(int directory, const char *path, int flags);

/// CRC-32C (Castagnoli) of `count` bytes at `bytes`, continuing from `crc` (0 to start):
/// the SSE 4.2 / ARMv8 CRC instruction where the CPU has it, a table otherwise.
uint32_t stowage_crc32c(uint32_t crc, const void *bytes, size_t count);

/// Whether ``stowage_crc32c`` uses the CPU's CRC instruction on this machine.
int stowage_crc32c_is_hardware(void);

/// The table-driven CRC-32C, for tests that compare it with the hardware path.
uint32_t stowage_crc32c_software(uint32_t crc, const void *bytes, size_t count);

#endif
