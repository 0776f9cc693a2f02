import Foundation
import StowageCore

/// The clean tasks the cleaner runs: `APUserCacheCleaner`'s `PurgeableCache.plist`, or the same in JSON.
///
/// The property list is an array of dictionaries, each either
/// - `Path` (a string: a container path such as `Library/Caches/images`) with an optional
///   `Entries` (an array of strings: names or `*`/`?` patterns inside `Path`; missing or empty
///   means everything inside), or
/// - `Class` (a string) with `Selectors` (an array of strings): handlers registered in code.
///
/// ```xml
/// <array>
///     <dict>
///         <key>Path</key><string>Library/Caches/images</string>
///         <key>Entries</key><array><string>*.jpg</string></array>
///     </dict>
///     <dict>
///         <key>Class</key><string>ImageStore</string>
///         <key>Selectors</key><array><string>clearMemory</string></array>
///     </dict>
/// </array>
/// ```
///
/// The JSON form is the same array: `[{"Path": "Library/Caches/images", "Entries": ["*.jpg"]},
/// {"Class": "ImageStore", "Selectors": ["clearMemory"]}]`.
public struct CleanManifest: Sendable, Hashable {
    /// The tasks, in manifest order.
    public var tasks: [CleanTask]

    /// The manifest's file formats.
    public enum Format: String, Sendable, Hashable {
        /// An XML, binary or OpenStep property list.
        case propertyList
        /// JSON.
        case json
    }

    /// A manifest of `tasks`.
    public init(tasks: [CleanTask]) {
        self.tasks = tasks
    }

    /// Reads a manifest file; `.json` files are JSON, anything else is tried as a property list.
    ///
    /// - Throws: `StowageError` `.notFound` and friends when the file cannot be read;
    ///   `.invalidArgument` when it is not a regular file (a directory, a FIFO, a device), is
    ///   over 64 MiB, or is malformed, naming the line, item or key at fault.
    public init(contentsOf url: URL) throws {
        let data = try RegularFile.read(url.fileSystemPath, subject: "the clean manifest")
        let format: Format? = url.pathExtension.lowercased() == "json" ? .json : nil
        try self.init(data: data, format: format, source: url.lastPathComponent)
    }

    /// Parses a manifest.
    ///
    /// - Parameters:
    ///   - data: The file's bytes.
    ///   - format: The format, or `nil` to tell from the content (JSON starts with `[` or `{`).
    ///   - source: A name for messages, e.g. the file's name.
    /// - Throws: `StowageError` `.invalidArgument` naming the line, item or key at fault.
    public init(data: Data, format: Format? = nil, source: String = "manifest") throws {
        let firstByte = data.first { ![0x20, 0x09, 0x0A, 0x0D, 0xEF, 0xBB, 0xBF].contains($0) }
        let format =
            format ?? (firstByte == UInt8(ascii: "[") || firstByte == UInt8(ascii: "{") ? .json : .propertyList)
        let root =
            switch format {
            case .json: try ManifestParser.json(data, source: source)
            case .propertyList: try ManifestParser.propertyList(data, source: source)
            }
        tasks = try ManifestParser.tasks(from: root, source: source)
    }
}
