import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A pipe for a child process's standard stream whose two descriptors close on exec.
///
/// `Pipe()` makes descriptors every process spawned meanwhile inherits: with the suites running
/// in parallel, a `redis-server` another test starts at that moment keeps the write end open for
/// its whole life, and a reader waiting for the end of the child's output waits for that server
/// instead. The child still gets its end: spawning duplicates it onto 0, 1 or 2, and a duplicate
/// does not close on exec.
public func childPipe() -> Pipe {
    let pipe = Pipe()
    for descriptor in [pipe.fileHandleForReading.fileDescriptor, pipe.fileHandleForWriting.fileDescriptor] {
        _ = fcntl(descriptor, F_SETFD, fcntl(descriptor, F_GETFD) | FD_CLOEXEC)
    }
    return pipe
}
