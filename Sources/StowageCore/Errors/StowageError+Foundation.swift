import Foundation

extension StowageError {
    /// Turns the error of a Foundation file call (`URL.resourceValues(forKeys:)`,
    /// `URL.setResourceValues(_:)`) into a ``StowageError``.
    ///
    /// Foundation wraps the system call's `errno` as `NSUnderlyingErrorKey` of a `CocoaError`;
    /// when it is there, the error is classified exactly as ``syscall(_:_:path:)`` classifies
    /// that `errno`. Otherwise the Cocoa code decides (`fileReadNoSuchFile` is `.notFound`, …)
    /// and Foundation's description becomes the message.
    ///
    /// - Parameters:
    ///   - error: What Foundation threw.
    ///   - operation: What Stowage was doing, as a verb phrase: `"exclude from backup"`.
    ///   - path: The path involved.
    package static func foundation(_ error: any Error, _ operation: String, path: String) -> StowageError {
        let nsError = error as NSError
        if nsError.domain == NSPOSIXErrorDomain {
            return .syscall(Errno(rawValue: Int32(truncatingIfNeeded: nsError.code)), operation, path: path)
        }
        if let underlying = nsError.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain
        {
            return .syscall(Errno(rawValue: Int32(truncatingIfNeeded: underlying.code)), operation, path: path)
        }
        let code: Code =
            switch nsError.domain == NSCocoaErrorDomain ? CocoaError.Code(rawValue: nsError.code) : nil {
            case CocoaError.Code.fileNoSuchFile, CocoaError.Code.fileReadNoSuchFile: .notFound
            case CocoaError.Code.fileReadNoPermission, CocoaError.Code.fileWriteNoPermission,
                CocoaError.Code.fileWriteVolumeReadOnly:
                .permissionDenied
            case CocoaError.Code.fileWriteOutOfSpace: .noSpace
            case CocoaError.Code.featureUnsupported: .unsupported
            default: .ioError
            }
        return StowageError(
            code: code,
            message: "cannot \(operation) \(PathInput.quoted(path, limit: 1_024)): \(nsError.localizedDescription)",
            path: path,
            cause: error
        )
    }
}
