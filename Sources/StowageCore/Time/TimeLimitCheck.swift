/// The one rule for the time budgets housekeeping work takes (`sweep(timeLimit:)`, a clean's,
/// a storage monitor's): positive and at most 2³¹ − 1 seconds (`Int32.max`), so that adding it to a clock's now
/// cannot overflow.
package enum TimeLimitCheck {
    /// The longest time limit: 2³¹ − 1 seconds, about 68 years.
    package static let maximum = Duration.seconds(Int64(Int32.max))

    /// - Throws: `StowageError` `.invalidArgument` for a limit that is zero, negative or longer
    ///   than ``maximum``.
    package static func validate(_ limit: Duration) throws {
        guard limit > .zero, limit <= maximum else {
            throw StowageError.invalidArgument(
                "time limit \(limit) is out of range: use a positive duration of at most \(Int32.max) seconds, "
                    + "or no limit"
            )
        }
    }
}
