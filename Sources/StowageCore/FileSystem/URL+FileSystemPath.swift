import Foundation

extension URL {
    /// The file-system path of a file URL, without percent-encoding and without the trailing
    /// slash a directory URL carries (except for `/` itself): the form shown to people and
    /// passed to system calls.
    package var fileSystemPath: String {
        let path = path(percentEncoded: false)
        return path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
    }
}

extension URL {
    /// ``fileSystemPath``, checked by ``PathInput`` first: the form for a URL that came from a
    /// caller, before it reaches a system call.
    ///
    /// - Parameter subject: What the path is for, for the message: `"cannot measure"`.
    /// - Throws: ``StowageError`` `.invalidArgument` for an empty path or one with NUL or
    ///   control bytes.
    package func checkedFileSystemPath(subject: String) throws -> String {
        let path = fileSystemPath
        try PathInput.check(path, subject: subject)
        return path
    }
}
