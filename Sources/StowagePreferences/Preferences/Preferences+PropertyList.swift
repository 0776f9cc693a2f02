import Foundation
import StowageCore

extension Preferences {
    /// The encodings `exportPropertyList(to:format:)` writes.
    public enum PropertyListFormat: Sendable, Hashable {
        /// Text XML, as `defaults export` writes on macOS and UserDefaults on Linux.
        case xml
        /// Binary (`bplist00`), as UserDefaults writes on Apple platforms.
        case binary
    }

    /// Adds every value of a property-list defaults file (the `[String: Any]` dictionary
    /// UserDefaults writes, XML or binary) to this suite, replacing values of the same name.
    ///
    /// - Returns: The number of values imported.
    /// - Throws: `StowageError` `.corrupt` naming the key whose value has no preferences
    ///   equivalent (a type preferences do not hold, NaN or an infinity, a value over the log's
    ///   size limit), or saying why the file is not a property list; nothing is imported then.
    @discardableResult
    public func importPropertyList(from url: URL) async throws -> Int {
        try await BlockingWork.run { try self.importPropertyList(from: url) }
    }

    /// The synchronous overload of `importPropertyList(from:)`: the same work on the calling thread.
    @discardableResult
    public func importPropertyList(from url: URL) throws -> Int {
        // A FIFO, a device or a directory is named as such instead of blocking or NSError 256.
        let data = try RegularFile.read(url.path(percentEncoded: false), subject: "the property list")
        let root: Any
        do {
            // Binary lists through the Swift decoder: CoreFoundation's bridge crashes on a set in
            // an array (see BinaryPropertyList).
            root =
                BinaryPropertyList.isBinary(data)
                ? try BinaryPropertyList.decode(data)
                : try PropertyListSerialization.propertyList(from: data, format: nil)
        } catch {
            throw StowageError(
                code: .corrupt,
                message: "\(url.path) is not a property list (\(error)); export it again from its source",
                path: url.path,
                cause: error
            )
        }
        guard let dictionary = root as? [String: Any] else {
            throw StowageError(
                code: .corrupt,
                message: "\(url.path) holds a \(type(of: root)), not the dictionary of a defaults file",
                path: url.path
            )
        }
        // Convert and check everything first: a value `set` would refuse aborts the import
        // before anything is written, so a bad file changes nothing.
        var values: [(String, PreferenceValue)] = []
        for key in dictionary.keys.sorted() {
            let value = try PreferenceValue(propertyList: dictionary[key]!, path: key, file: url.path)
            do {
                try value.checkRepresentable(path: key)
                _ = try Self.checkedEncoding(of: .set(key: key, value: value))
            } catch let error as StowageError {
                throw StowageError(
                    code: .corrupt,
                    message: "cannot import \(url.path): \(error.message); nothing was imported",
                    path: url.path,
                    cause: error
                )
            }
            values.append((key, value))
        }
        for (key, value) in values { try set(value, forName: key) }
        return values.count
    }

    /// Writes every value of this suite as a property-list defaults file, atomically.
    public func exportPropertyList(to url: URL, format: PropertyListFormat = .xml) async throws {
        try await BlockingWork.run { try self.exportPropertyList(to: url, format: format) }
    }

    /// The synchronous overload of `exportPropertyList(to:format:)`: the same work on the calling thread.
    public func exportPropertyList(to url: URL, format: PropertyListFormat = .xml) throws {
        let dictionary = dictionaryRepresentation().mapValues(\.propertyListObject)
        let data = try PropertyListSerialization.data(
            fromPropertyList: dictionary,
            format: format == .xml ? .xml : .binary,
            options: 0
        )
        try AtomicFile.write([UInt8](data), to: url, permissions: 0o600)
    }
}

extension PreferenceValue {
    /// The Foundation object a property list holds for this value.
    var propertyListObject: Any {
        switch self {
        case .bool(let value): value
        case .int(let value): value
        case .double(let value): value
        case .string(let value): value
        case .data(let value): value
        case .date(let value): value
        case .array(let values): values.map(\.propertyListObject)
        case .dictionary(let values): values.mapValues(\.propertyListObject)
        }
    }

    /// Converts a property-list object; `path` names it in errors (`key/3/subkey`).
    init(propertyList object: Any, path: String, file: String) throws {
        switch object {
        case let value as Bool where type(of: object) == Bool.self: self = .bool(value)
        case let number as NSNumber:
            switch String(cString: number.objCType) {
            case "c", "B": self = .bool(number.boolValue)
            case "f", "d": self = .double(number.doubleValue)
            default: self = .int(number.intValue)
            }
        case let value as String: self = .string(value)
        case let value as Data: self = .data(value)
        case let value as Date: self = .date(value)
        case let values as [Any]:
            self = .array(
                try values.enumerated().map { try PreferenceValue(propertyList: $1, path: "\(path)/\($0)", file: file) }
            )
        case let values as [String: Any]:
            var converted: [String: PreferenceValue] = [:]
            for (key, value) in values {
                converted[key] = try PreferenceValue(propertyList: value, path: "\(path)/\(key)", file: file)
            }
            self = .dictionary(converted)
        default:
            throw StowageError(
                code: .corrupt,
                message:
                    "the value at \(path.debugDescription) in \(file) is a \(type(of: object)), which preferences cannot hold",
                path: file
            )
        }
    }
}
