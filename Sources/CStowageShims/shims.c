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

int stowage_removexattr(const char *path, const char *name) {
#if defined(__APPLE__)
    return removexattr(path, name, XATTR_NOFOLLOW);
#else
    return lremovexattr(path, name);
#endif
}
