import Foundation
import StowageTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The tests' own process launcher (ChildProcess), which every suite's child processes start
/// through: what it promises that Foundation's `Process` does not.
@Suite("ChildProcess")
struct ChildProcessTests {
    private func shell(_ script: String) -> ChildProcess {
        let process = ChildProcess()
        process.executableURL = URL(filePath: "/bin/sh")
        process.arguments = ["-c", script]
        return process
    }

    #if os(Linux)
    // `/proc/PID/fd` lists a process's descriptors and tells where each points; Darwin has none.
    @Test("a descriptor the test process leaves inheritable does not reach the child")
    func closesInheritedDescriptors() throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)  // No FD_CLOEXEC, as a library's careless descriptor would be.
        defer { ends.forEach { close($0) } }
        let output = childPipe()
        // `; true`: the shell must not exec `ls` in its place, so `$$` stays the shell.
        let process = shell("ls /proc/$$/fd; true")
        process.standardOutput = output
        try process.run()
        let listing = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.waitForExitReliably() == ChildExit(status: 0, wasSignaled: false))
        let descriptors = Set(listing.split(separator: "\n").map(String.init))
        #expect(descriptors.isSuperset(of: ["0", "1", "2"]))
        #expect(!descriptors.contains(String(ends[0])) && !descriptors.contains(String(ends[1])), "\(descriptors)")
    }

    @Test("standard streams left unset are /dev/null, never the test runner's output pipe")
    func unsetStreamsAreNullDevice() throws {
        let process = ChildProcess()
        process.executableURL = URL(filePath: "/bin/sleep")
        process.arguments = ["30"]
        try process.run()
        defer {
            process.terminate()
            _ = process.waitForExitReliably()
        }
        let targets = try (0...2).map {
            try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(process.processIdentifier)/fd/\($0)")
        }
        #expect(targets == ["/dev/null", "/dev/null", "/dev/null"])
    }
    #endif

    @Test("exit codes and killing signals are told apart")
    func exitAndSignal() throws {
        let exits = shell("exit 7")
        try exits.run()
        #expect(exits.waitForExitReliably() == ChildExit(status: 7, wasSignaled: false))
        #expect(exits.terminationReason == .exit)

        let killed = shell("kill -9 $$")
        try killed.run()
        #expect(killed.waitForExitReliably() == ChildExit(status: SIGKILL, wasSignaled: true))
        #expect(killed.terminationReason == .uncaughtSignal)
        #expect(!killed.isRunning)
        #expect(!killed.suspend(), "a reaped child's ID may belong to another process by now")
    }

    @Test("a missing program is a thrown error, not a child that exits 127")
    func missingExecutable() {
        let process = ChildProcess()
        process.executableURL = URL(filePath: "/nonexistent/stowage-no-such-program")
        #expect(throws: SpawnError.self) { try process.run() }
    }

    @Test("hundreds of children started from many threads are all reaped")
    func manyConcurrentChildren() async throws {
        let exits = try await withThrowingTaskGroup(of: [ChildExit].self) { group in
            for worker in 0..<8 {
                group.addTask {
                    try await onOwnThread {
                        try (0..<40).map { index in
                            let process = ChildProcess()
                            process.executableURL = URL(filePath: "/bin/sh")
                            process.arguments = ["-c", "exit \((worker * 40 + index) % 100)"]
                            try process.run()
                            return process.waitForExitReliably()
                        }
                    }
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        #expect(exits.count == 320)
        #expect(exits.allSatisfy { !$0.wasSignaled })
        #expect(Set(exits.map(\.status)) == Set((0..<100).map { Int32($0) }))
    }
}
