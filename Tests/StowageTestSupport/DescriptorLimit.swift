#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Raises this process's soft limit on open descriptors to at least `count`, where the hard
/// limit allows: a deep-tree test holds one descriptor per level. Raising the soft limit takes
/// nothing from the suites running alongside.
public func raiseDescriptorLimit(toAtLeast count: Int) {
    var limit = rlimit()
    getrlimit(descriptorResource, &limit)
    let needed = rlim_t(count)
    if limit.rlim_cur < needed && limit.rlim_max >= needed {
        limit.rlim_cur = needed
        setrlimit(descriptorResource, &limit)
    }
}

#if canImport(Glibc)
// Glibc imports RLIMIT_NOFILE as an enum case of __rlimit_resource.
private let descriptorResource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
#else
private let descriptorResource = RLIMIT_NOFILE
#endif
