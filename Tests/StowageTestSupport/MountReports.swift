import Foundation

/// What the mount-boundary suites share: the removals worker they run in a private mount
/// namespace (``PrivateMounts``), and how they read the JSON reports the worker and the `stowage`
/// commands print.
public enum MountReports {
    /// What a removal or a measure says of a mount point it leaves whole (as
    /// `rm --one-file-system` leaves it): `FileSystemBoundary.skipMessage`.
    public static let skip = "skipped: another file system"

    /// `StowageTestWorker removals ARGUMENTS`.
    public static func worker(_ arguments: [String]) -> [String] {
        [TestWorker.url.path(percentEncoded: false), "removals"] + arguments
    }

    /// The JSON document `outcome` printed on its standard output.
    ///
    /// - Throws: `TestFailure` with both outputs when it printed no JSON.
    public static func document(_ outcome: PrivateMounts.Outcome) throws -> Any {
        do {
            return try JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8))
        } catch {
            throw TestFailure("no JSON: \(error); stdout: \(outcome.standardOutput) stderr: \(outcome.standardError)")
        }
    }

    /// The JSON object `outcome` printed on its standard output.
    ///
    /// - Throws: `TestFailure` with both outputs when it printed something else.
    public static func object(_ outcome: PrivateMounts.Outcome) throws -> [String: Any] {
        guard let object = try document(outcome) as? [String: Any] else {
            throw TestFailure("not a JSON object; stdout: \(outcome.standardOutput) stderr: \(outcome.standardError)")
        }
        return object
    }

    /// The `(path, message)` pairs of a report's list of failures or skips (empty when `list` is
    /// not a list of objects).
    public static func entries(_ list: Any?) -> [(path: String, message: String)] {
        ((list as? [[String: Any]]) ?? []).map { (($0["path"] as? String) ?? "", ($0["message"] as? String) ?? "") }
    }
}
