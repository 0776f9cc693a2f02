import Foundation

/// The id of a process that has exited (`/bin/true`, run and waited for): a name made with it
/// stands for a leftover of a process that is gone.
///
/// Spawned with ``ChildProcess``, never Foundation's `Process`, whose `run()` crashes the test
/// process now and then under a suite that spawns children from many threads (see
/// ``ChildProcess``).
public func deadProcessID() throws -> pid_t {
    let process = ChildProcess()
    process.executableURL = URL(filePath: "/bin/true")
    try process.run()
    process.waitUntilExit()
    return process.processIdentifier
}
