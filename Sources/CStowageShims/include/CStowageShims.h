#ifndef C_STOWAGE_SHIMS_H
#define C_STOWAGE_SHIMS_H

// Declarations Swift's Glibc module does not export on every distribution.
#include <sys/types.h>

#if defined(__linux__) || defined(__APPLE__)
#include <sys/xattr.h>
#endif

/// Sets an extended attribute on `path` without following a final symbolic link.
int stowage_setxattr(const char *path, const char *name, const void *value, size_t size);
/// Reads an extended attribute of `path` without following a final symbolic link.
ssize_t stowage_getxattr(const char *path, const char *name, void *value, size_t size);
/// Removes an extended attribute of `path` without following a final symbolic link.
int stowage_removexattr(const char *path, const char *name);

#endif
