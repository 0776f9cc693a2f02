import ArgumentParser
import Foundation
import StowageCore

/// Options every command takes: which container to work on.
struct GlobalOptions: ParsableArguments {
    /// The identifier used when neither --app nor --root is given.
    static let defaultIdentifier = "stowage"

    @Option(
        name: .customLong("app"),
        help: ArgumentHelp("The app identifier of the container, e.g. com.example.reader.", valueName: "ID")
    )
    var identifier: String?

    @Option(
        name: .customLong("root"),
        help: ArgumentHelp(
            "Use a rooted container at DIR (DIR/Documents, DIR/Library/Caches, ...).",
            valueName: "DIR"
        )
    )
    var root: String?

    @Flag(help: "Print one JSON document on standard output instead of a table.")
    var json = false

    func validate() throws {
        if let root { try Self.checkPath(root, "--root") }
        if let identifier {
            do {
                _ = try Container(identifier: identifier, environment: ["HOME": "/"])
            } catch let error as StowageError {
                throw ValidationError(error.message)
            }
        }
    }

    /// Refuses an empty path (it would mean the working directory) and one with control
    /// characters, as a usage error naming `what`.
    static func checkPath(_ path: String, _ what: String) throws {
        do {
            try PathInput.check(path, subject: what)
        } catch let error as StowageError {
            throw ValidationError(error.message)
        }
    }

    /// The container the options describe.
    func container() throws -> Container {
        if let root {
            return Container(root: URL(filePath: root, directoryHint: .isDirectory), identifier: identifier)
        }
        return try Container(identifier: identifier ?? Self.defaultIdentifier)
    }
}
