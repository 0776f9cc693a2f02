import Foundation

extension Duration {
    /// The duration in seconds, for arithmetic on `Date`s (which count in `TimeInterval`).
    public var timeInterval: TimeInterval {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) * 1e-18
    }

    /// A duration of `seconds`, kept to the nanosecond.
    public static func timeInterval(_ seconds: TimeInterval) -> Duration {
        .nanoseconds(Int64((seconds * 1e9).rounded()))
    }
}
