import Foundation
import StowageCore
import Testing

/// Durations from outside input (options, headers, stored records, server replies) convert
/// without trapping: a huge value used to crash the proxy at start ("Double value cannot be
/// converted to Int64", "arithmetic overflow").
@Suite("Duration conversions")
struct DurationConversionTests {
    @Test(
        "timeInterval(_:) saturates huge and infinite seconds and reads NaN as zero",
        arguments: [
            (1e10, Duration.maximumNanosecondDuration),
            (1e300, .maximumNanosecondDuration),
            (Double.infinity, .maximumNanosecondDuration),
            (-Double.infinity, .nanoseconds(Int64.min)),
            (-1e19, .nanoseconds(Int64.min)),
            (Double.nan, .zero),
            (1.5, .milliseconds(1_500)),
            (-2, .seconds(-2)),
        ] as [(Double, Duration)]
    )
    func timeIntervalSaturates(seconds: Double, expected: Duration) {
        #expect(Duration.timeInterval(seconds) == expected)
    }

    @Test(
        "saturatingNanoseconds clamps instead of overflowing",
        arguments: [
            (Duration.seconds(9_999_999_999_999), Int64.max),
            (.seconds(Int64.max), .max),
            (.seconds(-9_999_999_999_999), .min),
            (.seconds(3), 3_000_000_000),
            (.milliseconds(-250), -250_000_000),
            (.zero, 0),
        ] as [(Duration, Int64)]
    )
    func saturatingNanoseconds(duration: Duration, expected: Int64) {
        #expect(duration.saturatingNanoseconds == expected)
    }
}
