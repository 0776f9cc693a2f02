import Foundation

/// Runs a command in a mount namespace of its own (`unshare -m`, then `mount --make-rprivate /`),
/// after mounting what a test asks for: the mounts exist for that child only and vanish with it,
/// so the test process, which runs every other test in parallel, never changes its own mounts.
///
/// Needs root (CAP_SYS_ADMIN), as CI has; ``isAvailable`` says whether this machine allows it,
/// for `.enabled(if:)`.
public enum PrivateMounts {
    /// One mount to make before the command runs.
    public enum Mount: Sendable {
        /// `mount --bind SOURCE TARGET`.
        case bind(String, at: String)
        /// `mount --rbind SOURCE TARGET`: the source with the mounts under it.
        case recursiveBind(String, at: String)
        /// A fresh tmpfs at the target, holding the named files (one line of text each).
        case tmpfs(at: String, files: [String])
        /// An overlay at the target: `lower` read-only under a new upper directory.
        case overlay(lower: String, at: String)

        fileprivate var script: String {
            switch self {
            case .bind(let source, let target):
                return "mount --bind \(PrivateMounts.quoted(source)) \(PrivateMounts.quoted(target))"
            case .recursiveBind(let source, let target):
                return "mount --rbind \(PrivateMounts.quoted(source)) \(PrivateMounts.quoted(target))"
            case .tmpfs(let target, let files):
                return
                    (["mount -t tmpfs tmpfs \(PrivateMounts.quoted(target))"]
                    + files.map { "echo kept > \(PrivateMounts.quoted(target + "/" + $0))" }).joined(separator: " && ")
            case .overlay(let lower, let target):
                // The upper and work directories live on a tmpfs of their own, mounted beside the lower
                // directory (outside the tree under test), so only an empty directory is left there.
                let scratch = PrivateMounts.quoted(lower + ".overlay-scratch")
                return
                    "mkdir -p \(scratch) && mount -t tmpfs tmpfs \(scratch) && mkdir \(scratch)/upper \(scratch)/work"
                    + " && mount -t overlay overlay -o lowerdir=\(PrivateMounts.quoted(lower)),upperdir=\(scratch)/upper,"
                    + "workdir=\(scratch)/work \(PrivateMounts.quoted(target))"
            }
        }
    }

    /// What the command printed and how it exited.
    public struct Outcome: Sendable {
        /// The exit status (97: a mount failed).
        public var status: Int32
        /// Everything the command wrote on standard output.
        public var standardOutput: String
        /// Everything written on standard error, the missing-path lines included.
        public var standardError: String
        /// The paths given as `expectingAfter` that no longer existed, inside the namespace,
        /// once the command had finished (a tmpfs or overlay is gone with the namespace, so
        /// what is in it is checked there).
        public var missingAfter: [String]
    }

    /// Whether this process may make a private mount namespace and mount in it.
    public static let isAvailable: Bool = {
        let probe = FileManager.default.temporaryDirectory.appending(path: "stowage-mount-probe-\(UUID().uuidString)")
        guard (try? FileManager.default.createDirectory(at: probe, withIntermediateDirectories: true)) != nil else {
            return false
        }
        defer { try? FileManager.default.removeItem(at: probe) }
        let outcome = try? runBlocking(
            mounts: [.tmpfs(at: probe.path(percentEncoded: false), files: [])],
            command: ["true"]
        )
        return outcome?.status == 0
    }()

    /// Makes `mounts` in a new mount namespace, in order, then runs `command` there and checks
    /// that every path of `expectingAfter` still exists.
    ///
    /// - Throws: ``TestFailure`` when a mount fails (exit status 97 from the setup).
    public static func run(mounts: [Mount], command: [String], expectingAfter: [String] = []) async throws -> Outcome {
        try await onOwnThread { try runBlocking(mounts: mounts, command: command, expectingAfter: expectingAfter) }
    }

    private static let missingPrefix = "stowage-test-missing: "

    private static func runBlocking(
        mounts: [Mount],
        command: [String],
        expectingAfter: [String] = []
    ) throws
        -> Outcome
    {
        let setup = (["mount --make-rprivate /"] + mounts.map(\.script)).joined(separator: " && ")
        let checks = expectingAfter.map { "[ -e \(quoted($0)) ] || echo \(quoted(missingPrefix + $0)) >&2; " }.joined()
        let script = "{ \(setup); } || exit 97; \"$@\"; status=$?; \(checks)exit $status"
        let process = ChildProcess()
        process.executableURL = URL(filePath: "/usr/bin/env")
        process.arguments = ["unshare", "--mount", "sh", "-c", script, "sh"] + command
        let output = childPipe()
        let error = childPipe()
        process.standardOutput = output
        process.standardError = error
        try process.run()
        let errorReader = Thread.detachedRead(error.fileHandleForReading)
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        let exit = process.waitForExitReliably()
        let standardError = String(decoding: errorReader.wait(), as: UTF8.self)
        let outcome = Outcome(
            status: exit.status,
            standardOutput: String(decoding: outputData, as: UTF8.self),
            standardError: standardError,
            missingAfter: standardError.split(separator: "\n").filter { $0.hasPrefix(missingPrefix) }
                .map { String($0.dropFirst(missingPrefix.count)) }
        )
        if outcome.status == 97 { throw TestFailure("mounting failed: \(outcome.standardError)") }
        return outcome
    }

    fileprivate static func quoted(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}

extension Thread {
    /// Reads `handle` to its end on a thread of its own; `wait()` returns what it read.
    fileprivate static func detachedRead(_ handle: FileHandle) -> DetachedRead {
        let read = DetachedRead()
        Thread.detachNewThread {
            read.finish(handle.readDataToEndOfFile())
        }
        return read
    }
}

/// The result of ``Thread/detachedRead(_:)``.
private final class DetachedRead: @unchecked Sendable {
    // Invariant: `data` is written once, before `done` is signalled, and read after `wait()`.
    private var data = Data()
    private let done = DispatchSemaphore(value: 0)

    func finish(_ data: Data) {
        self.data = data
        done.signal()
    }

    func wait() -> Data {
        done.wait()
        return data
    }
}
