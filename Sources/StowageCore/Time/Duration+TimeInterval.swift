import Foundation

extension Duration {
    /// The duration in seconds, for arithmetic on `Date`s (which count in `TimeInterval`).
    public var timeInterval: TimeInterval {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) * 1e-18
    }

    /// A duration of `seconds`, kept to the nanosecond.
    ///
    /// Saturating, so no input traps: seconds beyond what 64-bit nanoseconds hold (about 292
    /// years) give ``maximumNanosecondDuration`` (or its negative), and NaN gives `.zero`. Code
    /// that takes a duration from outside (an option, a header, a stored record, a server's
    /// reply) should still bound it with a message before it gets here.
    public static func timeInterval(_ seconds: TimeInterval) -> Duration {
        .nanoseconds(saturatingNanoseconds(seconds * 1e9))
    }

    /// The longest duration that converts to 64-bit nanoseconds (SwiftNIO's `TimeAmount`,
    /// `DispatchTimeInterval`) without overflow: `Int64.max` nanoseconds, about 292 years.
    public static let maximumNanosecondDuration = Duration.nanoseconds(Int64.max)

    /// The duration in whole nanoseconds, saturating at `Int64.min`/`Int64.max` instead of
    /// trapping: what SwiftNIO's `TimeAmount` and Dispatch need.
    public var saturatingNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        let (total, overflowAgain) = whole.addingReportingOverflow(attoseconds / 1_000_000_000)
        if overflowAgain { return seconds < 0 ? .min : .max }
        return total
    }

    /// `value` rounded to a whole number of nanoseconds, clamped to `Int64`; NaN is 0.
    private static func saturatingNanoseconds(_ value: Double) -> Int64 {
        guard !value.isNaN else { return 0 }
        let rounded = value.rounded()
        // 2^63 is exactly representable; every Double below it converts without trapping.
        if rounded >= 9_223_372_036_854_775_808.0 { return .max }
        if rounded <= -9_223_372_036_854_775_808.0 { return .min }
        return Int64(rounded)
    }
}
