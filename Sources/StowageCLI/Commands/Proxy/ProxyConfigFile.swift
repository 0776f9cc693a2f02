import ArgumentParser
import Foundation

/// `stowage proxy --config FILE`: the proxy's options in a JSON file, so a deployment keeps
/// them in one reviewed place.
///
/// The file is one JSON object whose keys are the long names of `stowage proxy`'s options:
///
/// ```json
/// {
///   "listen": "0.0.0.0:8080",
///   "upstream": "http://127.0.0.1:8000",
///   "disk-capacity": "2GB",
///   "cache-valid": ["200,301=10m", "404=1m"],
///   "stale-if-error": "1h",
///   "cache-key-ignore-query": ["utm_*", "fbclid"],
///   "trace": true
/// }
/// ```
///
/// A string or integer gives the option that value; an array repeats the option once per
/// element; `true` turns a flag on (`false` leaves it off). The file's options come first and
/// the command line's after them, so a single-valued option on the command line wins and a
/// repeatable one adds to the file's. Every value is checked exactly as on the command line.
enum ProxyConfigFile {
    /// The largest file read: a configuration is a few kilobytes.
    static let maximumSize = 1 << 20

    /// The most times one option may be given, in the file and on the command line together: a
    /// deployment needs tens of header names or bypass rules, and every value costs work on
    /// every request.
    static let maximumRepeats = 1_000

    /// The most arguments `stowage proxy` takes, in the file and on the command line together.
    /// ArgumentParser's parsing time grows with the square of the argument count (measured on
    /// 1.8.2, debug build: 1,000 arguments 0.6 s, 2,000 2.0 s, 5,000 11 s), so the total is
    /// bounded as well as each option. `purge` and `ban` are not bounded: their URLs are many.
    static let maximumArguments = 2_000

    /// `arguments` (the tool's, without the program name) with `proxy --config FILE` replaced
    /// by the file's options; other commands' arguments unchanged. One pass over the arguments.
    ///
    /// - Throws: `ValidationError` saying what is wrong with the file, naming an option given
    ///   more than ``maximumRepeats`` times, or counting more than ``maximumArguments``.
    static func expanding(_ arguments: [String]) throws -> [String] {
        guard arguments.first == "proxy" else { return arguments }
        let rest = arguments.dropFirst()
        // Up to a `--` terminator: what follows it is never an option.
        let end = rest.firstIndex(of: "--") ?? rest.endIndex
        var kept: [String] = []
        kept.reserveCapacity(rest.count)
        var paths: [String] = []
        var index = rest.startIndex
        while index < end {
            let argument = rest[index]
            if argument == "--config" {
                guard index + 1 < rest.endIndex else {
                    throw ValidationError("--config needs a file: --config FILE.json")
                }
                paths.append(rest[index + 1])
                index += 2
            } else if argument.hasPrefix("--config=") {
                paths.append(String(argument.dropFirst("--config=".count)))
                index += 1
            } else {
                kept.append(argument)
                index += 1
            }
        }
        guard !paths.isEmpty else {
            try checkCounts(rest[..<end], total: rest.count)
            return arguments
        }
        guard paths.count == 1 else { throw ValidationError("give --config once") }
        if index < rest.endIndex { kept += rest[index...] }
        let fromFile = try options(inFile: paths[0])
        try checkCounts(fromFile + kept.prefix { $0 != "--" }, total: fromFile.count + kept.count)
        return ["proxy"] + fromFile + kept
    }

    /// Refuses an option given more than ``maximumRepeats`` times among `options` (no `--`
    /// terminator among them), and more than ``maximumArguments`` arguments in all for the proxy
    /// itself, before ArgumentParser spends time on them.
    static func checkCounts(_ options: some Collection<String>, total: Int) throws {
        try checkRepeats(options)
        // The subcommand's name comes first: an `invalidate` elsewhere is an option's value
        // (`--cache-key-header invalidate`) and must not lift the bound.
        let isAdminCommand = options.first == "invalidate"
        if !isAdminCommand, total > maximumArguments {
            throw ValidationError(
                "stowage proxy is given \(total) arguments; at most \(maximumArguments) (in --config and on the "
                    + "command line together)"
            )
        }
    }

    /// Refuses an option given more than ``maximumRepeats`` times among `options`.
    static func checkRepeats(_ options: some Collection<String>) throws {
        var counts: [Substring: Int] = [:]
        for option in options where option.hasPrefix("--") {
            let name = option.prefix { $0 != "=" }
            counts[name, default: 0] += 1
        }
        if let (name, count) = counts.filter({ $0.value > maximumRepeats }).min(by: { $0.key < $1.key }) {
            throw ValidationError(
                "\(name) is given \(count) times; at most \(maximumRepeats) (in --config and on the command line together)"
            )
        }
    }

    /// The command-line options the file at `path` holds.
    static func options(inFile path: String) throws -> [String] {
        var status = stat()
        guard stat(path, &status) == 0 else {
            throw ValidationError(
                "--config \(path.debugDescription): cannot read it (\(String(cString: strerror(errno))))"
            )
        }
        guard status.st_mode & S_IFMT == S_IFREG else {
            throw ValidationError("--config \(path.debugDescription) is not a regular file")
        }
        guard Int(status.st_size) <= maximumSize else {
            throw ValidationError(
                "--config \(path.debugDescription) is \(status.st_size) bytes; a configuration has at most \(maximumSize)"
            )
        }
        let data: Data
        do {
            data = try Data(contentsOf: URL(filePath: path))
        } catch {
            throw ValidationError("--config \(path.debugDescription): cannot read it (\(error.localizedDescription))")
        }
        return try options(inJSON: data, file: path)
    }

    /// The command-line options `data`, a JSON object, holds.
    static func options(inJSON data: Data, file: String) throws -> [String] {
        let object: [String: Value]
        do {
            object = try JSONDecoder().decode([String: Value].self, from: data)
        } catch {
            throw ValidationError(
                "--config \(file.debugDescription) is not a JSON object of option names and values: \(Self.reason(error))"
            )
        }
        var options: [String] = []
        for (name, value) in object.sorted(by: { $0.key < $1.key }) {
            guard isOptionName(name) else {
                throw ValidationError(
                    "--config \(file.debugDescription): \(name.debugDescription) is not an option of stowage proxy; "
                        + "keys are long option names without dashes, e.g. \"upstream\" or \"cache-valid\""
                )
            }
            switch value {
            case .text(let text): options.append("--\(name)=\(text)")
            case .integer(let number): options.append("--\(name)=\(number)")
            case .flag(let isOn): if isOn { options.append("--\(name)") }
            case .list(let elements): options += elements.map { "--\(name)=\($0)" }
            }
        }
        return options
    }

    /// Lowercase words joined by single dashes, and not an option that makes no sense in a file.
    static func isOptionName(_ name: String) -> Bool {
        let words = name.split(separator: "-", omittingEmptySubsequences: false)
        return !["config", "help", "version"].contains(name) && name.first?.isLetter == true
            && words.allSatisfy { word in
                !word.isEmpty && word.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) }
            }
    }

    /// A value the file may give an option.
    enum Value: Decodable {
        case text(String)
        case integer(Int)
        case flag(Bool)
        /// Strings and integers, one option each.
        case list([String])

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let flag = try? container.decode(Bool.self) {
                self = .flag(flag)
            } else if let number = try? container.decode(Int.self) {
                self = .integer(number)
            } else if let text = try? container.decode(String.self) {
                self = .text(text)
            } else if let elements = try? container.decode([Element].self) {
                self = .list(elements.map(\.text))
            } else {
                throw DecodingError.dataCorruptedError(
                    in: container,
                    debugDescription: "a value is a string, an integer, true/false, or an array of strings and integers"
                )
            }
        }

        /// An array element.
        struct Element: Decodable {
            var text: String
            init(from decoder: any Decoder) throws {
                let container = try decoder.singleValueContainer()
                if let number = try? container.decode(Int.self) {
                    text = String(number)
                } else {
                    text = try container.decode(String.self)
                }
            }
        }
    }

    /// What a decoding error says, with where.
    private static func reason(_ error: any Error) -> String {
        switch error {
        case DecodingError.dataCorrupted(let context), DecodingError.typeMismatch(_, let context):
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            return (path.isEmpty ? "" : "at \(path.debugDescription): ") + context.debugDescription
        default:
            return "\(error)"
        }
    }
}
