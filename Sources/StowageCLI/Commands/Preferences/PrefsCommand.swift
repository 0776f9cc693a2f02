import ArgumentParser
import Foundation
import StowageCore
import StowagePreferences
import Synchronization

/// `stowage prefs …`: read and edit a preferences suite of the container.
struct PrefsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prefs",
        abstract: "Read and edit an app's preferences (a suite in its preferences location).",
        subcommands: [
            PrefsListCommand.self, PrefsGetCommand.self, PrefsSetCommand.self, PrefsRemoveCommand.self,
            PrefsImportCommand.self, PrefsExportCommand.self,
        ],
        defaultSubcommand: PrefsListCommand.self
    )
}

/// Options every `prefs` subcommand takes.
struct PrefsOptions: ParsableArguments {
    @OptionGroup var global: GlobalOptions

    @Option(help: "The preferences suite (a file name in the preferences location).")
    var suite = "standard"

    /// Set when an opened suite reported damage; the command then exits 1 after its work.
    static let damageFound = Atomic<Bool>(false)

    /// Opens the suite; a repair at open is reported on standard error.
    func open() async throws -> Preferences {
        let preferences = try await Preferences.open(suite: suite, in: global.container())
        if let recovery = preferences.recovery {
            Output.warn(
                "the preferences suite '\(suite)' was damaged and repaired: \(recovery); values set only in the "
                    + "damaged records are lost"
            )
            Self.damageFound.store(true, ordering: .relaxed)
        }
        return preferences
    }

    /// Exits 1 when the suite was found damaged, after the command did its work.
    static func exitIfDamaged() throws {
        if damageFound.load(ordering: .relaxed) { throw Output.partialFailure }
    }
}

/// `stowage prefs list`: every value of the suite.
struct PrefsListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List every value of the suite.")

    @OptionGroup var options: PrefsOptions

    func run() async throws {
        try await Output.run {
            let values = try await options.open().dictionaryRepresentation()
            if options.global.json {
                try Output.printJSONObject(
                    values.reduce(into: [String: Any]()) { $0[$1.key] = try $1.value.jsonObject(name: $1.key) }
                )
                return
            }
            var table = TextTable(header: ["NAME", "TYPE", "VALUE"])
            for name in values.keys.sorted() {
                table.append([name, values[name]!.typeName, values[name]!.plainText])
            }
            print(table.rendered)
        }
        try PrefsOptions.exitIfDamaged()
    }
}

/// `stowage prefs get NAME`: one value, as plain text (or JSON).
struct PrefsGetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Print the value of NAME; exit 2 when it is not set."
    )

    @OptionGroup var options: PrefsOptions

    @Argument(help: "The preference's name.")
    var name: String

    func run() async throws {
        try await Output.run {
            guard let value = try await options.open().value(forName: name) else {
                throw StowageError(
                    code: .notFound,
                    message: "no preference \(name.debugDescription) in suite \(options.suite.debugDescription)"
                )
            }
            if options.global.json {
                try Output.printJSONObject(value.jsonObject(name: name))
            } else {
                print(value.plainText)
            }
        }
        try PrefsOptions.exitIfDamaged()
    }
}

/// `stowage prefs set NAME VALUE [--type T]`.
struct PrefsSetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "set", abstract: "Set NAME to VALUE.")

    enum ValueType: String, ExpressibleByArgument, CaseIterable {
        case string, int, double, bool, date, data
    }

    @OptionGroup var options: PrefsOptions

    @Argument(help: "The preference's name.")
    var name: String

    @Argument(help: "The value: text, a number, true/false, an ISO 8601 date, or base64 data (see --type).")
    var value: String

    @Option(help: "How to read VALUE: \(ValueType.allCases.map(\.rawValue).joined(separator: ", ")).")
    var type: ValueType = .string

    func validate() throws { _ = try parse() }

    func run() async throws {
        let parsed = try parse()
        try await Output.run { try await options.open().set(parsed, forName: name) }
        try PrefsOptions.exitIfDamaged()
    }

    private func parse() throws -> PreferenceValue {
        let parsed: PreferenceValue? =
            switch type {
            case .string: .string(value)
            case .int: Int(value).map(PreferenceValue.int)
            // NaN and infinities have no form in JSON or a property list: refused here.
            case .double: Double(value).flatMap { $0.isFinite ? PreferenceValue.double($0) : nil }
            case .bool: Bool(value).map(PreferenceValue.bool)
            case .date: (try? Date(value, strategy: .iso8601)).map(PreferenceValue.date)
            case .data: Data(base64Encoded: value).map(PreferenceValue.data)
            }
        guard let parsed else {
            throw ValidationError(
                "\(value.debugDescription) is not a valid \(type.rawValue)"
                    + (type == .double ? " (a finite number)" : "")
            )
        }
        return parsed
    }
}

/// `stowage prefs remove NAME`.
struct PrefsRemoveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "remove", abstract: "Remove NAME from the suite.")

    @OptionGroup var options: PrefsOptions

    @Argument(help: "The preference's name.")
    var name: String

    func run() async throws {
        try await Output.run { try await options.open().removeValue(forName: name) }
        try PrefsOptions.exitIfDamaged()
    }
}

/// `stowage prefs import FILE`: a UserDefaults property list into the suite.
struct PrefsImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Import a property-list defaults file (XML or binary) into the suite."
    )

    @OptionGroup var options: PrefsOptions

    @Argument(help: "The property list to import.")
    var file: String

    func run() async throws {
        try await Output.run {
            let count = try await options.open().importPropertyList(from: URL(filePath: file))
            print("imported \(count) values")
        }
        try PrefsOptions.exitIfDamaged()
    }
}

/// `stowage prefs export FILE [--binary]`: the suite as a UserDefaults property list.
struct PrefsExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export the suite as a property-list defaults file (XML unless --binary)."
    )

    @OptionGroup var options: PrefsOptions

    @Argument(help: "Where to write the property list.")
    var file: String

    @Flag(help: "Write a binary property list.")
    var binary = false

    func run() async throws {
        try await Output.run {
            try await options.open().exportPropertyList(to: URL(filePath: file), format: binary ? .binary : .xml)
        }
        try PrefsOptions.exitIfDamaged()
    }
}
