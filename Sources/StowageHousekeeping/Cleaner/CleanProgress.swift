import StowageCore

/// The events of one clean, as an `AsyncSequence`: phases with their fractions, then
/// ``CleanEvent/done(_:)`` with the report.
///
/// ```swift
/// for try await event in cleaner.run(manifest) {
///     switch event {
///     case .done(let report): print("freed", report.bytesFreed.formatted(.compact))
///     default: progressBar.show(event.phase, event.fraction)
///     }
/// }
/// ```
///
/// The clean starts when the sequence is created. Cancelling the task that iterates (or
/// dropping the sequence) stops the clean between two files; iteration then throws
/// `CancellationError`. Iterate once.
public struct CleanProgress: AsyncSequence, Sendable {
    /// The elements the sequence yields.
    public typealias Element = CleanEvent

    let stream: AsyncThrowingStream<CleanEvent, any Error>

    /// Iterates the events.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncThrowingStream<CleanEvent, any Error>.AsyncIterator
        var isDone = false

        /// The next event, `nil` after ``CleanEvent/done(_:)``.
        public mutating func next() async throws -> CleanEvent? {
            guard !isDone else { return nil }
            guard let event = try await base.next() else {
                // The stream ended without a report: the clean was cancelled.
                isDone = true
                throw CancellationError()
            }
            if case .done = event { isDone = true }
            return event
        }
    }

    /// An iterator over the sequence's elements.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: stream.makeAsyncIterator())
    }

    /// Waits for the clean to finish, ignoring progress, and returns its report.
    ///
    /// - Throws: `CancellationError` when the clean was cancelled.
    public func report() async throws -> CleanReport {
        for try await event in self {
            if case .done(let report) = event { return report }
        }
        throw CancellationError()
    }
}
