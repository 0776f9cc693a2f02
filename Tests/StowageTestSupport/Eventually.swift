/// Polls `condition` until it holds; throws ``TestFailure`` after `timeout`.
///
/// The first checks come quickly (after 1 ms), later ones further apart (at most every 50 ms):
/// the suites run in parallel on small, shared machines, where dozens of tests polling every
/// millisecond would keep the few cooperative threads busy with polls. The timeout only catches
/// a hang (five minutes by default): a condition that holds late, on a machine whose cores a
/// CPU hog or a parallel build keeps busy, is not a failure of the code under test, and a poll
/// that succeeds returns at once whatever the timeout.
public func eventually(
    timeout: Duration = .seconds(300),
    _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    var interval = Duration.milliseconds(1)
    while ContinuousClock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: interval)
        interval = min(interval * 2, .milliseconds(50))
    }
    if try await condition() { return }
    throw TestFailure("the condition did not hold within \(timeout)")
}
