import Foundation

/// The cookie-date algorithm of RFC 6265 §5.1.1: the forgiving parser browsers use for
/// `Expires`, which accepts RFC 1123, RFC 850 and asctime dates and many broken ones.
enum CookieDate {
    /// The date `string` names, or `nil` when §5.1.1 says to ignore it.
    static func parse(_ string: Substring) -> Date? {
        var time: (hour: Int, minute: Int, second: Int)?
        var dayOfMonth: Int?
        var month: Int?
        var year: Int?
        // §5.1.1 step 1: date-tokens are separated by delimiters.
        for token in string.utf8.split(whereSeparator: isDelimiter) {
            let bytes = Array(token)
            if time == nil, let parsed = parseTime(bytes) {
                time = parsed
            } else if dayOfMonth == nil, let parsed = leadingDigits(bytes, minimum: 1, maximum: 2) {
                dayOfMonth = parsed
            } else if month == nil, let parsed = parseMonth(bytes) {
                month = parsed
            } else if year == nil, let parsed = leadingDigits(bytes, minimum: 2, maximum: 4) {
                year = parsed
            }
        }
        guard let time, let dayOfMonth, let month, var year else { return nil }
        // Steps 3 and 4: two-digit years.
        if (70...99).contains(year) { year += 1900 } else if (0...69).contains(year) { year += 2000 }
        // Step 5: out-of-range fields make the date invalid.
        guard (1...31).contains(dayOfMonth), year >= 1601, time.hour <= 23, time.minute <= 59, time.second <= 59
        else { return nil }
        // Step 6: a day that does not exist in its month (31 April) is invalid too.
        guard dayOfMonth <= daysIn(month: month, year: year) else { return nil }
        let days = daysSinceEpoch(year: year, month: month, day: dayOfMonth)
        let seconds = days * 86_400 + time.hour * 3600 + time.minute * 60 + time.second
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    /// delimiter = %x09 / %x20-2F / %x3B-40 / %x5B-60 / %x7B-7E
    private static func isDelimiter(_ byte: UInt8) -> Bool {
        byte == 0x09 || (0x20...0x2F).contains(byte) || (0x3B...0x40).contains(byte)
            || (0x5B...0x60).contains(byte) || (0x7B...0x7E).contains(byte)
    }

    private static func isDigit(_ byte: UInt8) -> Bool { (0x30...0x39).contains(byte) }

    /// `minimum`…`maximum` digits, then optionally anything that is not a digit.
    private static func leadingDigits(_ bytes: [UInt8], minimum: Int, maximum: Int) -> Int? {
        let digits = bytes.prefix(while: isDigit)
        guard (minimum...maximum).contains(digits.count) else { return nil }
        return digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
    }

    /// time = hms-time ( non-digit *OCTET ); hms-time = 1*2DIGIT ":" 1*2DIGIT ":" 1*2DIGIT
    private static func parseTime(_ bytes: [UInt8]) -> (hour: Int, minute: Int, second: Int)? {
        var fields: [Int] = []
        var index = 0
        for position in 0..<3 {
            var value = 0
            var count = 0
            while index < bytes.count, isDigit(bytes[index]), count < 2 {
                value = value * 10 + Int(bytes[index] - 0x30)
                count += 1
                index += 1
            }
            guard count > 0 else { return nil }
            fields.append(value)
            if position < 2 {
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return nil }
                index += 1
            }
        }
        if index < bytes.count, isDigit(bytes[index]) { return nil }
        return (fields[0], fields[1], fields[2])
    }

    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// month = ( "jan" / … / "dec" ) *OCTET, case-insensitive.
    private static func parseMonth(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 3 else { return nil }
        let prefix = String(decoding: bytes.prefix(3), as: UTF8.self).lowercased()
        return months.firstIndex(of: prefix).map { $0 + 1 }
    }

    private static func isLeap(_ year: Int) -> Bool { (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days from 1970-01-01 to the date in the proleptic Gregorian calendar (Howard Hinnant's
    /// `days_from_civil`), so no `Calendar` or time zone is involved.
    static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
