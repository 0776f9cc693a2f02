import Foundation
import StowageCore

/// A `Codable` value kept in one file, written atomically, with a format version: the role of
/// `NSKeyedArchiver` and property-list files.
///
/// ```swift
/// struct Profile: Codable, Sendable { var name: String; var tags: [String] }
/// let archive = Archive<Profile>(url: documents.appending(path: "profile.json"), version: 2) { stored in
///     // Version 1 had one tag.
///     struct ProfileV1: Decodable { var name: String; var tag: String }
///     let old = try stored.decode(ProfileV1.self)
///     return Profile(name: old.name, tags: [old.tag])
/// }
/// try await archive.write(profile)
/// let profile = try await archive.read()    // nil when the file does not exist
/// ```
///
/// The file holds an envelope: `{"version": 2, "value": …}` in JSON, or the same dictionary as
/// a binary property list. A write goes to a temporary file that is flushed and renamed over
/// the archive, so a reader (or a crash) never sees half of one. Reading an older version runs
/// the migration and writes the result back in the current version; reading a newer one is an
/// error, as is an older one without a migration.
public struct Archive<Value: Codable & Sendable>: Sendable {
    /// How the envelope is encoded.
    public typealias Format = ArchiveFormat

    /// A stored archive of an older version, handed to the migration.
    public struct StoredVersion: Sendable {
        /// The version the file was written with.
        public let version: Int
        let format: Format
        let data: Data

        /// Decodes the stored value as `type` (the shape it had in ``version``).
        public func decode<Old: Decodable>(_ type: Old.Type) throws -> Old {
            try ArchiveCoding.decode(Envelope<Old>.self, from: data, format: format).value
        }
    }

    /// The archive's file.
    public let url: URL
    /// The encoding of the file.
    public let format: Format
    /// The current format version, stored with each write.
    public let version: Int
    private let migration: (@Sendable (StoredVersion) throws -> Value)?

    /// An archive at `url`, currently at `version`, with an optional migration from older ones.
    public init(
        url: URL,
        format: Format = .json,
        version: Int = 1,
        migration: (@Sendable (StoredVersion) throws -> Value)? = nil
    ) {
        self.url = url
        self.format = format
        self.version = version
        self.migration = migration
    }

    /// Writes `value` atomically: readers see the old archive or the new one, never a mix.
    ///
    /// - Throws: `StowageError` when the value cannot be encoded (`.invalidArgument`) or the
    ///   file cannot be written; the previous archive then stays as it was.
    public func write(_ value: Value) async throws {
        try await BlockingWork.run { try write(value) }
    }

    /// The synchronous overload of `write(_:)`: the same work on the calling thread.
    public func write(_ value: Value) throws {
        let data: Data
        do {
            data = try ArchiveCoding.encode(Envelope(version: version, value: value), format: format)
        } catch {
            throw StowageError(
                code: .invalidArgument,
                message: "cannot encode the \(Value.self) for \(url.path): \(error)",
                path: url.path,
                cause: error
            )
        }
        _ = try url.checkedFileSystemPath(subject: "the archive")
        try AtomicFile.write([UInt8](data), to: url, permissions: 0o600)
    }

    /// Reads the archive; `nil` when the file does not exist.
    ///
    /// - Throws: `StowageError` `.corrupt` (naming the coding path at fault) when the file does
    ///   not decode, `.unsupported` when its version is newer than ``version`` or older without
    ///   a migration.
    public func read() async throws -> Value? {
        try await BlockingWork.run { try read() }
    }

    /// The synchronous overload of `read()`: the same work on the calling thread.
    public func read() throws -> Value? {
        let data: Data
        do {
            // Never blocks on a FIFO; a directory or device in the archive's place is named.
            data = try RegularFile.read(url.fileSystemPath, subject: "the archive")
        } catch let error as StowageError where error.code == .notFound {
            return nil
        }
        let stored = try decoding { try ArchiveCoding.decode(EnvelopeHeader.self, from: data, format: format).version }
        if stored == version {
            return try decoding { try ArchiveCoding.decode(Envelope<Value>.self, from: data, format: format).value }
        }
        guard stored < version else {
            throw StowageError(
                code: .unsupported,
                message: """
                    the archive \(url.path) is version \(stored), newer than this program's \(version); \
                    update the program to read it
                    """,
                path: url.path
            )
        }
        guard let migration else {
            throw StowageError(
                code: .unsupported,
                message: """
                    the archive \(url.path) is version \(stored) and this program writes \(version) without a \
                    migration; pass `migration:` to Archive to convert version \(stored)
                    """,
                path: url.path
            )
        }
        let migrated = try decoding { try migration(StoredVersion(version: stored, format: format, data: data)) }
        try write(migrated)
        return migrated
    }

    private func decoding<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as StowageError {
            throw error
        } catch {
            throw StowageError(
                code: .corrupt,
                message: "the archive \(url.path) does not decode as \(Value.self): \(ArchiveCoding.describe(error))",
                path: url.path,
                cause: error
            )
        }
    }
}

/// How an ``Archive`` encodes its file.
public enum ArchiveFormat: Sendable, Hashable {
    /// Sorted, human-readable JSON.
    case json
    /// A binary property list (`bplist00`), what `NSKeyedArchiver` and UserDefaults write.
    case binaryPropertyList
}

/// The envelope around an archived value.
struct Envelope<Value> {
    var version: Int
    var value: Value
}

extension Envelope: Encodable where Value: Encodable {}
extension Envelope: Decodable where Value: Decodable {}

/// The envelope without its value: read first to learn the version.
struct EnvelopeHeader: Decodable {
    var version: Int
}

/// JSON and binary property-list coding of envelopes, and readable decoding errors.
enum ArchiveCoding {
    static func encode<T: Encodable>(_ value: T, format: ArchiveFormat) throws -> Data {
        switch format {
        case .json:
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
            encoder.dateEncodingStrategy = .iso8601
            return try encoder.encode(value)
        case .binaryPropertyList:
            let encoder = PropertyListEncoder()
            encoder.outputFormat = .binary
            return try encoder.encode(value)
        }
    }

    static func decode<T: Decodable>(_ type: T.Type, from data: Data, format: ArchiveFormat) throws -> T {
        switch format {
        case .json:
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            return try decoder.decode(type, from: data)
        case .binaryPropertyList:
            return try PropertyListDecoder().decode(type, from: data)
        }
    }

    /// "key `value.tags[2]`: expected String, found a number" rather than Foundation's dump.
    static func describe(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "\(error)" }
        func path(_ context: DecodingError.Context) -> String {
            let path = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            return path.isEmpty ? "the top level" : "key `\(path.dropFirst(path.hasPrefix(".") ? 1 : 0))`"
        }
        switch error {
        case .typeMismatch(let type, let context):
            return "\(path(context)): expected \(type) (\(context.debugDescription))"
        case .valueNotFound(let type, let context):
            return "\(path(context)): missing \(type) value"
        case .keyNotFound(let key, let context):
            return "\(path(context)): missing key `\(key.stringValue)`"
        case .dataCorrupted(let context):
            return "\(path(context)): \(context.debugDescription)"
        @unknown default:
            return "\(error)"
        }
    }
}
