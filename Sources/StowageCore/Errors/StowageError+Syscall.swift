#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension StowageError {
    /// Turns a failed system call's `errno` into an error whose message says what to do.
    ///
    /// - Parameters:
    ///   - errno: The error number the call set.
    ///   - operation: What Stowage was doing, as a verb phrase: `"measure"`, `"open directory"`.
    ///   - path: The path involved.
    package static func syscall(_ errno: Errno, _ operation: String, path: String) -> StowageError {
        let (code, advice) = classify(errno.rawValue)
        // Quoted: control characters escaped and a huge path cut, so a message stays readable.
        let message =
            "cannot \(operation) \(PathInput.quoted(path, limit: 1_024)): \(errno)"
            + (advice.isEmpty ? "" : "; \(advice)")
        return StowageError(code: code, message: message, path: path, cause: errno)
    }

    private static func classify(_ value: Int32) -> (Code, String) {
        switch value {
        case ENOENT: (.notFound, "check the path exists")
        case EACCES, EPERM: (.permissionDenied, "check the owner and mode of the path and its parents")
        case ENOSPC, EDQUOT: (.noSpace, "free space on the volume or raise the quota")
        case ENOTDIR: (.notADirectory, "a component of the path is not a directory")
        case ELOOP: (.invalidArgument, "the path is a symbolic link, which Stowage does not follow here")
        case EROFS: (.permissionDenied, "the file system is mounted read-only")
        case ENOTSUP, EOPNOTSUPP:
            (.unsupported, "the file system does not support this operation")
        case EMFILE, ENFILE: (.ioError, "too many open files; raise the limit (ulimit -n) or close files, then retry")
        case ENAMETOOLONG: (.ioError, "the path or one of its names is too long for the file system; shorten it")
        case EIO: (.ioError, "the device reported a read or write failure; check the volume (dmesg) before retrying")
        case EBUSY: (.ioError, "the file or its mount is in use; retry when it is released")
        case EFBIG:
            (
                .ioError,
                "the file would pass the process's file size limit (ulimit -f) or the file system's largest "
                    + "file; raise the limit or write to another volume"
            )
        default: (.ioError, "")
        }
    }

    /// An argument that failed validation.
    package static func invalidArgument(_ message: String, path: String? = nil) -> StowageError {
        StowageError(code: .invalidArgument, message: message, path: path)
    }
}

extension StowageError {
    /// A configuration value that failed validation; `message` names the setting, its value and
    /// the range it must be in.
    package static func invalidConfiguration(_ message: String) -> StowageError {
        StowageError(code: .invalidConfiguration, message: message)
    }
}
