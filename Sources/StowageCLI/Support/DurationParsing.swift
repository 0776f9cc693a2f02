import ArgumentParser
import Foundation
import StowageCore
import StowageHTTPCache

/// The longest cache lifetime or grace an option takes: RFC 9111 §1.2.2's largest
/// delta-seconds, 2^31 s (about 68 years). Longer ones used to crash the proxy at start.
let maximumCacheDuration = Duration.seconds(CacheControl.maximumDeltaSeconds)

/// The longest timeout an option takes, in seconds: one day.
let maximumTimeoutSeconds = 86_400

/// A duration from `30`, `30s`, `10m`, `2h` or `7d` (decimals allowed: `1.5h`), as nginx writes
/// times in `proxy_cache_valid`, from 0 up to `maximum`.
func parseDuration(_ text: String, option: String, maximum: Duration = maximumCacheDuration) throws -> Duration {
    let units: [Character: Double] = ["s": 1, "m": 60, "h": 3_600, "d": 86_400]
    let trimmed = text.trimmingCharacters(in: .whitespaces)
    var number = Substring(trimmed)
    var scale = 1.0
    if let last = trimmed.last, let unit = units[last] {
        number = number.dropLast()
        scale = unit
    }
    guard let value = Double(number), value >= 0, value.isFinite else {
        throw ValidationError(
            "\(option) \(text.debugDescription) is not a duration; write seconds or a number with s, m, h or d (10m, 1h)"
        )
    }
    let seconds = value * scale
    guard seconds <= maximum.timeInterval else {
        let limit = Int64(maximum.timeInterval)
        throw ValidationError(
            "\(option) \(text.debugDescription) is too long: at most \(limit)s (\(limit / 86_400)d)"
                + (maximum == maximumCacheDuration ? ", RFC 9111's largest delta-seconds" : "")
        )
    }
    return .timeInterval(seconds)
}

/// Checks a timeout given in whole seconds: more than 0 and at most a day.
func checkTimeout(_ seconds: Int, option: String) throws {
    guard seconds > 0, seconds <= maximumTimeoutSeconds else {
        throw ValidationError(
            "\(option) \(seconds) is out of range: give a number of seconds from 1 to \(maximumTimeoutSeconds) (one day)"
        )
    }
}

/// `200,301=10m` → `[200: 10 min, 301: 10 min]`: the statuses of one `--cache-valid` and their
/// lifetime.
func parseStatusLifetimes(_ text: String) throws -> [Int: Duration] {
    let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
    guard parts.count == 2 else {
        throw ValidationError(
            "--cache-valid \(text.debugDescription) needs STATUS[,STATUS…]=DURATION, e.g. 200,301=10m"
        )
    }
    let lifetime = try parseDuration(parts[1], option: "--cache-valid")
    var lifetimes: [Int: Duration] = [:]
    for status in parts[0].split(separator: ",") {
        guard let code = Int(status.trimmingCharacters(in: .whitespaces)), (200...599).contains(code) else {
            throw ValidationError(
                "--cache-valid \(text.debugDescription): \(status.debugDescription) is not a status from 200 to 599"
            )
        }
        lifetimes[code] = lifetime
    }
    return lifetimes
}

/// Parses `--time-limit`: a positive duration of at most 2³¹ − 1 seconds (the library's bound).
func parseTimeLimit(_ text: String) throws -> Duration {
    let limit = try parseDuration(text, option: "--time-limit", maximum: .seconds(Int64(Int32.max)))
    guard limit > .zero else {
        // "1e-10" is more than zero, yet rounds to no time at all: "must be more than zero" was no help.
        throw ValidationError(
            "--time-limit \(text.debugDescription) must be at least a nanosecond (1e-9); leave it out for no limit"
        )
    }
    return limit
}
