import Foundation

/// The id of a process that has exited (`/bin/true`, run and waited for): a name made with it
/// stands for a leftover of a process that is gone.
public func deadProcessID() throws -> pid_t {
    let process = Process()
    process.executableURL = URL(filePath: "/bin/true")
    try process.run()
    process.waitUntilExit()
    return process.processIdentifier
}
