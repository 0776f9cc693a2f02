#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An error thrown by a Stowage operation: on the file system, a store, a cache, the HTTP cache
/// or the cookie store.
///
/// Every error carries a ``Code`` to match on, a message that says what failed, where, why and
/// what the caller can do, the path involved when there is one, and the underlying cause
/// (usually an ``Errno``).
///
/// ```swift
/// do {
///     try Marks.setExcludedFromBackup(true, at: url)
/// } catch let error as StowageError where error.code == .unsupported {
///     print(error.message)  // the file system has no extended attributes
/// }
/// ```
///
/// A code also matches as a pattern: `catch StowageError.Code.notCached { … }`.
public struct StowageError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure, stable across releases; match on it, not on the message.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case notFound = "not found"
            case permissionDenied = "permission denied"
            case unsupported
            case noSpace = "no space"
            case corrupt
            case invalidArgument = "invalid argument"
            case pathEscapesRoot = "path escapes root"
            case notADirectory = "not a directory"
            case ioError = "I/O error"
            case busy
            case unreachable
            case refused
            case invalidConfiguration = "invalid configuration"
            case notCached = "not cached"
            case tooLarge = "too large"
            case malformed
            case domainMismatch = "domain mismatch"
            case publicSuffix = "public suffix"
            case notSecure = "not secure"
            case closed
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The file or directory does not exist.
        public static let notFound = Code(.notFound)
        /// The process lacks the permission the operation needs.
        public static let permissionDenied = Code(.permissionDenied)
        /// The file system or platform does not support the operation (e.g. extended attributes).
        public static let unsupported = Code(.unsupported)
        /// The volume is full or a quota is exhausted.
        public static let noSpace = Code(.noSpace)
        /// Stored data failed validation.
        public static let corrupt = Code(.corrupt)
        /// An argument of a call was out of range or malformed (a path with a NUL byte, a key
        /// that is not a file name, a relative URL where an absolute one is needed). A bad value
        /// in a `Configuration` or options value is ``invalidConfiguration`` instead.
        public static let invalidArgument = Code(.invalidArgument)
        /// A path would leave the root it must stay in.
        public static let pathEscapesRoot = Code(.pathEscapesRoot)
        /// A directory was expected but the path is something else.
        public static let notADirectory = Code(.notADirectory)
        /// Any other operating-system failure; see ``StowageError/cause``.
        public static let ioError = Code(.ioError)
        /// Another user of the resource (in this or another process) holds it; the message says
        /// who and what to do (close it there, or retry later).
        public static let busy = Code(.busy)
        /// A server (a proxy's admin listener, say) did not answer: not running, or not there.
        public static let unreachable = Code(.unreachable)
        /// A server answered with an error; the message carries its answer.
        public static let refused = Code(.refused)
        /// A configuration value is out of range or the values contradict each other (a negative
        /// capacity, a timeout of zero, a shared level without a disk tier), or the call needs
        /// something this configuration left out; the message names the setting and its range.
        public static let invalidConfiguration = Code(.invalidConfiguration)
        /// The request's policy forbids loading (the HTTP cache's `returnCacheDataDontLoad`, as
        /// `URLRequest.CachePolicy.returnCacheDataDontLoad`) and nothing is stored for it.
        public static let notCached = Code(.notCached)
        /// A value is larger than the limit the caller or the configuration set: a body over a
        /// collect limit, a cookie over its maximum size, user info over its count or size.
        public static let tooLarge = Code(.tooLarge)
        /// Input from the network does not parse: a `Set-Cookie` header with no `name=value`
        /// pair, an empty name or a control character (RFC 6265 §5.2).
        public static let malformed = Code(.malformed)
        /// A cookie's `Domain` attribute does not domain-match the request's host (RFC 6265 §5.3
        /// step 6), or the host is an IP address and the domain is not exactly it.
        public static let domainMismatch = Code(.domainMismatch)
        /// A cookie's `Domain` attribute is a public suffix such as `com` or `co.uk` (RFC 6265
        /// §5.3 step 5): one site may not set a cookie for every site under it.
        public static let publicSuffix = Code(.publicSuffix)
        /// A `Secure` cookie (or a `__Secure-`/`__Host-` name) came over plain `http`, or an
        /// `http` cookie would replace or shadow a `Secure` one (RFC 6265bis §5.6 steps 14 and
        /// 20–21, §5.7 step 16).
        public static let notSecure = Code(.notSecure)
        /// The handle was closed (`DiskCache.close()`); open the store again to use it.
        public static let closed = Code(.closed)

        /// The text logs and messages show.
        public var description: String { base.rawValue }

        /// Lets `catch StowageError.Code.notFound` match a ``StowageError`` by its code.
        public static func ~= (code: Code, error: any Error) -> Bool {
            (error as? StowageError)?.code == code
        }
    }

    /// The kind of failure.
    public var code: Code
    /// What failed, on which path, why, and what the caller can do about it.
    public var message: String
    /// The path the operation was working on, if any.
    public var path: String?
    /// The underlying error, e.g. the ``Errno`` of a failed system call.
    public var cause: (any Error & Sendable)?

    /// Creates an error.
    public init(code: Code, message: String, path: String? = nil, cause: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.path = path
        self.cause = cause
    }

    /// `"<code>: <message>"`, e.g. `"not found: cannot measure '/x': no such file or directory"`.
    public var description: String { "\(code): \(message)" }
}

/// A POSIX error number, as the cause of a ``StowageError``.
public struct Errno: Error, Sendable, Hashable, CustomStringConvertible {
    /// The raw `errno` value.
    public var rawValue: Int32
    /// Wraps a raw `errno` value.
    public init(rawValue: Int32) { self.rawValue = rawValue }
    /// The value of `errno` now.
    package static var current: Errno { Errno(rawValue: errno) }

    /// The symbolic name (`ENOENT`) and the C library's text for it.
    public var description: String {
        "\(Errno.symbolicName(rawValue)) (\(String(cString: strerror(rawValue))))"
    }

    private static func symbolicName(_ value: Int32) -> String {
        switch value {
        case ENOENT: "ENOENT"
        case EACCES: "EACCES"
        case EPERM: "EPERM"
        case ENOTDIR: "ENOTDIR"
        case EISDIR: "EISDIR"
        case ELOOP: "ELOOP"
        case ENOSPC: "ENOSPC"
        case EDQUOT: "EDQUOT"
        case EEXIST: "EEXIST"
        case ENOTEMPTY: "ENOTEMPTY"
        case EROFS: "EROFS"
        case EMFILE: "EMFILE"
        case ENAMETOOLONG: "ENAMETOOLONG"
        case EBUSY: "EBUSY"
        case EXDEV: "EXDEV"
        case EINVAL: "EINVAL"
        case ERANGE: "ERANGE"
        case EIO: "EIO"
        #if canImport(Glibc)
        case ENODATA: "ENODATA"
        #endif
        case ENOTSUP: "ENOTSUP"
        default: "errno \(value)"
        }
    }
}
