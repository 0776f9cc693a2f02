import Foundation
import StowageCore

/// Turns a property list or JSON document into clean tasks, with errors that point at the
/// line (syntax) or the item and key (structure) at fault.
enum ManifestParser {
    static func propertyList(_ data: Data, source: String) throws -> Any {
        if BinaryPropertyList.isBinary(data) {
            do {
                return try BinaryPropertyList.decode(data)
            } catch let error as DecodingError {
                throw malformed(source, "is not a valid binary property list: \(describe(error))")
            } catch {
                // The binary reader's own errors, e.g. corruptedValue("object index").
                throw malformed(source, "is not a valid binary property list: \(error)")
            }
        }
        do {
            return try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
        } catch {
            // Foundation says where: "Close tag on line 6 does not match open tag string".
            let detail = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String ?? "\(error)"
            throw malformed(source, "is not a valid property list: \(detail)")
        }
    }

    static func json(_ data: Data, source: String) throws -> Any {
        do {
            return try JSONSerialization.jsonObject(with: data)
        } catch {
            let detail = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String ?? "\(error)"
            throw malformed(source, "is not valid JSON: \(lineAndColumn(detail, in: data) ?? detail)")
        }
    }

    static func tasks(from root: Any, source: String) throws -> [CleanTask] {
        guard let items = root as? [Any] else {
            throw malformed(source, "must be an array of tasks at its root, found \(kind(of: root))")
        }
        return try items.enumerated().map { offset, item in
            let position = "item \(offset + 1)"
            guard let dictionary = item as? [String: Any] else {
                throw malformed(source, "\(position) must be a dictionary with Path or Class, found \(kind(of: item))")
            }
            let known: Set<String> = ["Path", "Entries", "Class", "Selectors"]
            if let unknown = dictionary.keys.sorted().first(where: { !known.contains($0) }) {
                throw malformed(
                    source,
                    "\(position) has the unknown key '\(unknown)'; a task has Path (+ Entries) or Class + Selectors"
                )
            }
            switch (dictionary["Path"], dictionary["Class"]) {
            case (.some(let path), nil):
                guard let path = path as? String, !path.isEmpty else {
                    throw malformed(
                        source,
                        "\(position) key 'Path' must be a non-empty string, found \(kind(of: path))"
                    )
                }
                if dictionary["Selectors"] != nil {
                    throw malformed(source, "\(position) key 'Selectors' belongs with 'Class', not with 'Path'")
                }
                let entries = try strings(dictionary["Entries"], key: "Entries", position: position, source: source)
                return .path(path, entries: entries ?? [])
            case (nil, .some(let className)):
                guard let className = className as? String, !className.isEmpty else {
                    throw malformed(
                        source,
                        "\(position) key 'Class' must be a non-empty string, found \(kind(of: className))"
                    )
                }
                if dictionary["Entries"] != nil {
                    throw malformed(source, "\(position) key 'Entries' belongs with 'Path', not with 'Class'")
                }
                guard
                    let selectors = try strings(
                        dictionary["Selectors"],
                        key: "Selectors",
                        position: position,
                        source: source
                    ), !selectors.isEmpty
                else {
                    throw malformed(source, "\(position) (Class '\(className)') is missing the key 'Selectors'")
                }
                return .handler(className: className, selectors: selectors)
            case (.some, .some):
                throw malformed(source, "\(position) has both 'Path' and 'Class'; split it into two tasks")
            case (nil, nil):
                throw malformed(source, "\(position) has neither 'Path' nor 'Class'")
            }
        }
    }

    private static func strings(_ value: Any?, key: String, position: String, source: String) throws -> [String]? {
        guard let value else { return nil }
        guard let array = value as? [Any] else {
            throw malformed(source, "\(position) key '\(key)' must be an array of strings, found \(kind(of: value))")
        }
        return try array.enumerated().map { index, element in
            guard let string = element as? String, !string.isEmpty else {
                throw malformed(
                    source,
                    "\(position) key '\(key)' element \(index + 1) must be a non-empty string, found \(kind(of: element))"
                )
            }
            return string
        }
    }

    private static func malformed(_ source: String, _ problem: String) -> StowageError {
        // Escaped: Foundation's parse errors quote the input, NUL and control bytes included.
        StowageError(
            code: .invalidArgument,
            message:
                "the clean manifest \(PathInput.quoted(source)) \(PathInput.escaped(problem)); nothing was deleted",
            path: source
        )
    }

    /// A decoding error in words: its description and, where there is one, the path to the value.
    private static func describe(_ error: DecodingError) -> String {
        switch error {
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .keyNotFound(_, let context),
            .dataCorrupted(let context):
            let path = context.codingPath.map { $0.intValue.map { "item \($0 + 1)" } ?? "'\($0.stringValue)'" }
            return context.debugDescription + (path.isEmpty ? "" : " (at \(path.joined(separator: " → ")))")
        @unknown default:
            return "\(error)"
        }
    }

    /// What a value is, in words, for messages.
    static func kind(of value: Any) -> String {
        switch value {
        case let string as String: "the string \(PathInput.quoted(string))"
        case is [Any]: "an array"
        case is [String: Any]: "a dictionary"
        case is Bool: "a boolean"
        case is Date: "a date"
        case is Data: "data"
        case is NSNumber, is Int, is Double: "a number"
        default: "a \(type(of: value))"
        }
    }

    /// Rewrites Foundation's "around character 32" as a line and column.
    private static func lineAndColumn(_ detail: String, in data: Data) -> String? {
        guard let range = detail.range(of: "character "),
            let offset = Int(detail[range.upperBound...].prefix { $0.isNumber }), offset <= data.count
        else { return nil }
        let before = data.prefix(offset)
        let line = before.filter { $0 == 0x0A }.count + 1
        let column = offset - (before.lastIndex(of: 0x0A).map { $0 + 1 } ?? 0) + 1
        return "\(detail.prefix { $0 != "." }) (line \(line), column \(column))"
    }
}
