import Foundation
import Logging
import StowageCore
import StowageStores

/// `StowageTestWorker stores …`: `arguments[0]` names the command.
enum StoresWorkerCommand {
    static func run(_ arguments: [String]) throws {
        // A child process for the user-space tests: `wipe ROOT USER` wipes a user of the container
        // rooted at ROOT, so that a test can kill it mid-way.
        guard arguments.count == 4, arguments[1] == "wipe" else {
            FileHandle.standardError.write(Data("usage: StowageTestWorker stores wipe ROOT USER\n".utf8))
            exit(64)
        }
        let container = Container(root: URL(filePath: arguments[2]), identifier: "org.stowage.tests")
        // The wipe's debug log on standard output: the parent kills this process once the
        // deletions begin ("deleting them").
        var logger = Logger(label: "worker") { StreamLogHandler.standardOutput(label: $0) }
        logger.logLevel = Logger.Level.debug
        let report = try UserSpaces(container: container, logger: logger).wipe(user: arguments[3])
        print("wiped \(report.bytesRemoved.rawValue)")
    }
}
