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
