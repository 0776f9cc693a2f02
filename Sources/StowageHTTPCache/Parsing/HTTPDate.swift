import Foundation

/// HTTP dates (RFC 9110 §5.6.7): the preferred IMF-fixdate and, for recipients, the two obsolete
/// forms (RFC 850 and ANSI C `asctime()`), as whole seconds since 1970 in UTC.
///
/// ```swift
/// HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT")  // 784111777
/// HTTPDate.format(784111777)                      // "Sun, 06 Nov 1994 08:49:37 GMT"
/// ```
///
/// A hand-written parser over UTF-8 bytes: `DateFormatter` costs microseconds per call and its
/// formats differ between platforms. Anything that is not one of the three forms gives `nil`;
/// callers apply the RFC's rule for invalid dates (RFC 9111 §5.3: an invalid `Expires`, such as
/// `0`, means already expired). Fuzzed in `HTTPDateFuzzTests`: never traps, linear time.
public enum HTTPDate {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    private static let dayNames = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let monthNames = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]

    /// Parses an HTTP-date in any of its three forms.
    ///
    /// - Parameters:
    ///   - text: The field value, e.g. of `Date`, `Expires` or `Last-Modified`.
    ///   - now: When the value was received: an RFC 850 date's two-digit year that would be more
    ///     than 50 years after it is the most recent past year with those digits (RFC 9110
    ///     §5.6.7). Default: the system's date; the HTTP cache passes its clock's time of the
    ///     exchange, so a stored response reads the same whenever it is read.
    /// - Returns: Seconds since 1970-01-01T00:00:00Z, or `nil` when `text` is not an HTTP-date.
    public static func parse(_ text: some StringProtocol, now: Date = Date()) -> Int64? {
        parse(text, nowSeconds: now.timeIntervalSince1970)
    }

    /// ``parse(_:now:)`` with `now` in seconds since 1970, as the cache's rules count time.
    static func parse(_ text: some StringProtocol, nowSeconds: Double) -> Int64? {
        var scanner = DateScanner(bytes: Array(text.utf8))
        scanner.skipSpaces()
        // All three forms start with a day name; RFC 850 spells it out and follows it by a comma.
        guard scanner.skipLetters() >= 3 else { return nil }
        if scanner.take(UInt8(ascii: ",")) {
            scanner.skipSpaces()
            guard let day = scanner.number(maxDigits: 2) else { return nil }
            if scanner.take(UInt8(ascii: "-")) {
                // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
                guard let month = scanner.month(), scanner.take(UInt8(ascii: "-")),
                    let shortYear = scanner.number(maxDigits: 4)
                else { return nil }
                // RFC 9110 §5.6.7: a two-digit year that would be more than 50 years in the future
                // is the most recent past year with those digits.
                var year = shortYear
                if shortYear < 100 {
                    let currentYear = civilYear(at: nowSeconds)
                    year = currentYear / 100 * 100 + shortYear
                    if year > currentYear + 50 { year -= 100 }
                }
                return finish(&scanner, day: day, month: month, year: year)
            }
            // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
            scanner.skipSpaces()
            guard let month = scanner.month() else { return nil }
            scanner.skipSpaces()
            guard let year = scanner.number(maxDigits: 4) else { return nil }
            return finish(&scanner, day: day, month: month, year: year)
        }
        // asctime: Sun Nov  6 08:49:37 1994
        scanner.skipSpaces()
        guard let month = scanner.month() else { return nil }
        scanner.skipSpaces()
        guard let day = scanner.number(maxDigits: 2) else { return nil }
        scanner.skipSpaces()
        guard let time = scanner.time() else { return nil }
        scanner.skipSpaces()
        guard let year = scanner.number(maxDigits: 4) else { return nil }
        scanner.skipSpaces()
        guard scanner.isAtEnd else { return nil }
        return seconds(year: year, month: month, day: day, time: time)
    }

    /// Parses an HTTP-date only when it follows one of the three forms exactly (RFC 9110 §5.6.7):
    /// single spaces, `GMT`, two-digit hours, names spelled as the grammar spells them.
    ///
    /// For `Expires`, where RFC 9111 §5.3 makes every invalid date mean "already expired": a
    /// near-miss such as `Thu, 18 Aug 2050 02:01:18 UTC`, a date with two spaces or with dashes
    /// in the IMF form is invalid there, not a date far in the future. ``parse(_:now:)`` accepts
    /// those, as a recipient of `Date` or `Last-Modified` may.
    ///
    /// - Parameters:
    ///   - text: The field's value.
    ///   - now: When the value was received, for an RFC 850 date's century (as in
    ///     ``parse(_:now:)``).
    /// - Returns: Seconds since 1970, or `nil` when `text` is not exactly an HTTP-date.
    public static func parseStrict(_ text: some StringProtocol, now: Date = Date()) -> Int64? {
        parseStrict(text, nowSeconds: now.timeIntervalSince1970)
    }

    /// ``parseStrict(_:now:)`` with `now` in seconds since 1970.
    static func parseStrict(_ text: some StringProtocol, nowSeconds: Double) -> Int64? {
        let bytes = Array(text.utf8)
        guard let comma = bytes.firstIndex(of: UInt8(ascii: ",")) else {
            // asctime-date: "Sun Nov  6 08:49:37 1994" (the day is two digits or a space and one).
            guard bytes.count == 24, dayNames.contains(String(decoding: bytes[0..<3], as: UTF8.self)),
                matches(bytes[3...], " @@@ _# ##:##:## ####")
            else { return nil }
            return parse(text, nowSeconds: nowSeconds)
        }
        let dayName = String(decoding: bytes[..<comma], as: UTF8.self)
        if dayNames.contains(dayName) {
            // IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT".
            guard matches(bytes[comma...], ", ## @@@ #### ##:##:## GMT") else { return nil }
        } else if fullDayNames.contains(dayName) {
            // rfc850-date: "Sunday, 06-Nov-94 08:49:37 GMT".
            guard matches(bytes[comma...], ", ##-@@@-## ##:##:## GMT") else { return nil }
        } else {
            return nil
        }
        return parse(text, nowSeconds: nowSeconds)
    }

    private static let fullDayNames = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]

    /// Whether `bytes` follow `template` exactly: `#` a digit, `_` a digit or a space, `@@@` a
    /// month name as the grammar spells it, anything else itself.
    private static func matches(_ bytes: ArraySlice<UInt8>, _ template: String) -> Bool {
        let pattern = Array(template.utf8)
        guard bytes.count == pattern.count else { return false }
        var index = 0
        for (byte, expected) in zip(bytes, pattern) {
            defer { index += 1 }
            switch expected {
            case UInt8(ascii: "#"):
                guard (0x30...0x39).contains(byte) else { return false }
            case UInt8(ascii: "_"):
                guard (0x30...0x39).contains(byte) || byte == 0x20 else { return false }
            case UInt8(ascii: "@"):
                // Checked once, at the first of the three letters.
                guard index == 0 || pattern[index - 1] != UInt8(ascii: "@") else { continue }
                let start = bytes.startIndex + index
                guard monthNames.contains(String(decoding: bytes[start..<start + 3], as: UTF8.self)) else {
                    return false
                }
            default:
                guard byte == expected else { return false }
            }
        }
        return true
    }

    private static func finish(_ scanner: inout DateScanner, day: Int, month: Int, year: Int) -> Int64? {
        scanner.skipSpaces()
        guard let time = scanner.time() else { return nil }
        scanner.skipSpaces()
        guard scanner.takeWord("GMT") || scanner.takeWord("UTC") else { return nil }
        scanner.skipSpaces()
        guard scanner.isAtEnd else { return nil }
        return seconds(year: year, month: month, day: day, time: time)
    }

    private static func seconds(year: Int, month: Int, day: Int, time: (Int, Int, Int)) -> Int64? {
        guard (1...12).contains(month), (1...31).contains(day), year >= 1, year <= 9999,
            time.0 < 24, time.1 < 60, time.2 <= 60
        else { return nil }
        // Days from civil (Howard Hinnant's algorithm), exact for the proleptic Gregorian calendar.
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let m = Int64(month)
        let dayOfYear = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + Int64(day) - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return days * 86_400 + Int64(time.0) * 3_600 + Int64(time.1) * 60 + Int64(time.2)
    }

    /// The year (UTC) at `seconds` since 1970, clamped to years 1…9999.
    private static func civilYear(at seconds: Double) -> Int {
        let clamped = seconds.isNaN ? 0 : min(max(seconds, -62_135_596_800), 253_402_300_799)
        let days = Int64((clamped / 86_400).rounded(.down))
        // Civil from days (Hinnant), as in format(_:).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        return Int(yearOfEra + era * 400 + (mp < 10 ? 0 : 1))
    }

    /// Formats seconds since 1970 as an IMF-fixdate, the form senders must use.
    ///
    /// - Parameter seconds: Seconds since 1970-01-01T00:00:00Z; years 1…9999.
    /// - Returns: e.g. `"Sun, 06 Nov 1994 08:49:37 GMT"`.
    public static func format(_ seconds: Int64) -> String {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        // Civil from days (Hinnant).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        let weekday = Int(((days % 7) + 11) % 7)  // 1970-01-01 was a Thursday
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(dayNames[weekday]), \(two(day)) \(monthNames[Int(month) - 1]) \(year) "
            + "\(two(secondOfDay / 3_600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60)) GMT"
    }

    fileprivate static func monthIndex(_ bytes: ArraySlice<UInt8>) -> Int? {
        guard bytes.count == 3 else { return nil }
        let lower = String(decoding: bytes.map { $0 | 0x20 }, as: UTF8.self)
        return months.firstIndex(of: lower).map { $0 + 1 }
    }
}

/// A cursor over a date's bytes; every step checks bounds, so no input can trap.
private struct DateScanner {
    let bytes: [UInt8]
    var position = 0

    var isAtEnd: Bool { position >= bytes.count }

    mutating func skipSpaces() {
        while position < bytes.count, bytes[position] == 0x20 || bytes[position] == 0x09 { position += 1 }
    }

    mutating func skipLetters() -> Int {
        let start = position
        while position < bytes.count, isLetter(bytes[position]) { position += 1 }
        return position - start
    }

    mutating func take(_ byte: UInt8) -> Bool {
        guard position < bytes.count, bytes[position] == byte else { return false }
        position += 1
        return true
    }

    mutating func takeWord(_ word: String) -> Bool {
        let expected = Array(word.utf8)
        guard bytes.count - position >= expected.count,
            zip(bytes[position...], expected).allSatisfy({ $0 | 0x20 == $1 | 0x20 })
        else { return false }
        position += expected.count
        return true
    }

    mutating func number(maxDigits: Int) -> Int? {
        var value = 0
        var digits = 0
        while position < bytes.count, digits < maxDigits, (0x30...0x39).contains(bytes[position]) {
            value = value * 10 + Int(bytes[position] - 0x30)
            digits += 1
            position += 1
        }
        return digits > 0 ? value : nil
    }

    mutating func month() -> Int? {
        let start = position
        while position < bytes.count, isLetter(bytes[position]) { position += 1 }
        return HTTPDate.monthIndex(bytes[start..<position])
    }

    /// `HH:MM:SS`, two digits each.
    mutating func time() -> (Int, Int, Int)? {
        guard let hour = exactly2(), take(UInt8(ascii: ":")), let minute = exactly2(), take(UInt8(ascii: ":")),
            let second = exactly2()
        else { return nil }
        return (hour, minute, second)
    }

    private mutating func exactly2() -> Int? {
        let start = position
        guard let value = number(maxDigits: 2), position - start == 2 else { return nil }
        return value
    }

    private func isLetter(_ byte: UInt8) -> Bool { (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) }
}
