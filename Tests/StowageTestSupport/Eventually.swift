/// Polls `condition` every `interval` until it holds; throws ``TestFailure`` after `timeout`.
///
/// Timeouts are generous on purpose: the suites run in parallel on small, shared machines, and
/// a condition that holds late is not a failure of the code under test.
public func eventually(
    timeout: Duration = .seconds(5),
    interval: Duration = .milliseconds(2),
    _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: interval)
    }
    if try await condition() { return }
    throw TestFailure("the condition did not hold within \(timeout)")
}
