import Foundation
import StowageTestSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Creates the directories `names` one inside the other under `base`, relative to open
/// descriptors (`mkdirat`/`openat`), so the chain may be longer than `PATH_MAX`, and writes
/// `bytes` bytes to `file` at the bottom. Returns the bottom directory's descriptor, which the
/// caller closes.
func makeChain(under base: String, _ names: [String], file: String, bytes: Int) throws -> Int32 {
    var directory = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    guard directory >= 0 else { throw TestFailure("cannot open \(base): \(errno)") }
    for name in names {
        guard mkdirat(directory, name, 0o755) == 0 || errno == EEXIST else {
            close(directory)
            throw TestFailure("mkdirat \(name): \(errno)")
        }
        let child = openat(directory, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        close(directory)
        guard child >= 0 else { throw TestFailure("openat \(name): \(errno)") }
        directory = child
    }
    let descriptor = openat(directory, file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
    guard descriptor >= 0 else {
        close(directory)
        throw TestFailure("create \(file): \(errno)")
    }
    let data = [UInt8](repeating: 0x61, count: bytes)
    let written = data.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
    close(descriptor)
    guard written == bytes else {
        close(directory)
        throw TestFailure("write \(file): \(errno)")
    }
    return directory
}

/// Removes `directory` with `rm -rf`, which goes as deep as the tree does and takes names of
/// any bytes (FileManager builds paths, which stop at `PATH_MAX`, from `String` names).
func removeDeepContents(of directory: TemporaryDirectory) {
    _ = try? runCommand(["rm", "-rf", "--", directory.path])
}

/// Runs `work` on a thread whose stack is `stackSize` bytes, as the walks may run on a thread
/// with a small stack (a dispatch worker, an app's secondary thread).
func onSmallStack<T: Sendable>(
    _ stackSize: Int = 256 * 1024,
    _ work: @escaping @Sendable () throws -> T
) async throws -> T {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        let thread = Thread { continuation.resume(with: Result { try work() }) }
        thread.stackSize = stackSize
        thread.start()
    }
}
