#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// HTTP-date (RFC 9110 §5.6.7): IMF-fixdate `Sun, 06 Nov 1994 08:49:37 GMT`, and the obsolete
/// RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime (`Sun Nov  6 08:49:37 1994`) forms that
/// recipients must accept.
public enum HTTPDate {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// Seconds since 1970 of an HTTP-date in any of the three forms; nil when `text` is none of
    /// them. Each form is read by its grammar exactly (RFC 9110 §5.6.7): single spaces, the comma
    /// after the day name, two-digit days, hours, minutes and seconds, a two-digit year in RFC 850
    /// and a four-digit one elsewhere — a date off the grammar is invalid (and, as an `Expires`,
    /// means already expired, RFC 9111 §5.3).
    public static func unixSeconds(_ text: String) -> Double? {
        if let seconds = imfFixdate(text) { return seconds }
        let b = Array(text.utf8)
        // rfc850-date = day-name-l "," SP 2DIGIT "-" month "-" 2DIGIT SP time-of-day SP "GMT"
        if let comma = b.firstIndex(of: 0x2C), longDayNames.contains(String(decoding: b[..<comma], as: UTF8.self)) {
            let rest = Array(b[(comma + 1)...])
            guard rest.count == 23, rest[0] == 0x20, rest[3] == 0x2D, rest[7] == 0x2D, rest[10] == 0x20, rest[19] == 0x20,
                  String(decoding: rest[20...], as: UTF8.self) == "GMT",
                  let day = digits(rest, 1, 2), let month = monthIndex(String(decoding: rest[4..<7], as: UTF8.self)),
                  let yy = digits(rest, 8, 2), let time = clock(rest, 11) else { return nil }
            // RFC 9110 §5.6.7: a two-digit year more than 50 years ahead is in the past century.
            let year = yy + 2000 > currentYearGuess + 50 ? yy + 1900 : yy + 2000
            return seconds(year: year, month: month, day: day, time: time)
        }
        // asctime-date = day-name SP month SP ( 2DIGIT / ( SP DIGIT ) ) SP time-of-day SP 4DIGIT
        guard b.count == 24, b[3] == 0x20, b[7] == 0x20, b[10] == 0x20, b[19] == 0x20,
              dayNames.contains(String(decoding: b[0..<3], as: UTF8.self)),
              let month = monthIndex(String(decoding: b[4..<7], as: UTF8.self)),
              let day = b[8] == 0x20 ? digits(b, 9, 1) : digits(b, 8, 2),
              let time = clock(b, 11), let year = digits(b, 20, 4) else { return nil }
        return seconds(year: year, month: month, day: day, time: time)
    }

    private static let longDayNames: Set<String> = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]

    private static func digits<Bytes: RandomAccessCollection<UInt8>>(_ b: Bytes, _ at: Int, _ count: Int) -> Int?
        where Bytes.Index == Int {
        var value = 0
        for index in at..<(at + count) {
            let digit = Int(b[index]) - 0x30
            guard digit >= 0 && digit <= 9 else { return nil }
            value = value * 10 + digit
        }
        return value
    }

    /// `hh:mm:ss` at `at`, two digits each.
    private static func clock<Bytes: RandomAccessCollection<UInt8>>(_ b: Bytes, _ at: Int) -> (Int, Int, Int)?
        where Bytes.Index == Int {
        guard b[at + 2] == 0x3A, b[at + 5] == 0x3A, let h = digits(b, at, 2), let m = digits(b, at + 3, 2),
              let sec = digits(b, at + 6, 2) else { return nil }
        return (h, m, sec)
    }

    private static func seconds(year: Int, month: Int, day: Int, time: (Int, Int, Int)) -> Double? {
        guard (1...31).contains(day), time.0 < 24, time.1 < 60, time.2 < 61 else { return nil }
        let days = daysFromCivil(year: year, month: month + 1, day: day)
        return Double(days * 86_400 + time.0 * 3600 + time.1 * 60 + time.2)
    }

    /// The form every sender generates (RFC 9110 §5.6.7), read from its 29 bytes without
    /// allocating: `Sun, 06 Nov 1994 08:49:37 GMT`. Nil for anything else (the general parser
    /// then tries the obsolete forms).
    private static func imfFixdate(_ text: String) -> Double? {
        text.withUTF8InPlace { b -> Double? in
            guard b.count == 29, b[3] == 0x2C, b[4] == 0x20, b[7] == 0x20, b[11] == 0x20, b[16] == 0x20,
                  b[19] == 0x3A, b[22] == 0x3A, b[25] == 0x20, b[26] == 0x47, b[27] == 0x4D, b[28] == 0x54 else { return nil }
            // Month by its three letters, case-insensitively.
            let key = (Int(b[8] | 0x20) << 16) | (Int(b[9] | 0x20) << 8) | Int(b[10] | 0x20)
            guard let month = monthKeys.firstIndex(of: key), let day = digits(b, 5, 2), let year = digits(b, 12, 4),
                  let time = clock(b, 17) else { return nil }
            return seconds(year: year, month: month, day: day, time: time)
        }
    }

    private static let monthKeys: [Int] = months.map { name in
        let b = Array(name.utf8)
        return (Int(b[0]) << 16) | (Int(b[1]) << 8) | Int(b[2])
    }

    private static let currentYearGuess = 1970 + Int(time(nil)) / 31_556_952

    private static func monthIndex(_ name: String) -> Int? { months.firstIndex(of: name.lowercased()) }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }
}

extension HTTPDate {
    private static let dayNames = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]
    private static let monthNames = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// The IMF-fixdate of `unixSeconds` (RFC 9110 §5.6.7), e.g. `Sun, 06 Nov 1994 08:49:37 GMT`.
    public static func format(unixSeconds: Int64) -> String {
        let days = unixSeconds >= 0 ? unixSeconds / 86_400 : (unixSeconds - 86_399) / 86_400
        let secondsOfDay = Int(unixSeconds - days * 86_400)
        let (year, month, day) = civil(fromDays: days)
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let weekday = dayNames[Int(((days % 7) + 7) % 7)]
        return "\(weekday), \(two(day)) \(monthNames[month - 1]) \(yearText(year)) "
            + "\(two(secondsOfDay / 3600)):\(two(secondsOfDay / 60 % 60)):\(two(secondsOfDay % 60)) GMT"
    }

    /// A year as the four digits RFC 9110 §5.6.7 (and ISO 8601) write: 991 is "0991".
    public static func yearText(_ year: Int) -> String {
        let digits = String(year)
        return year >= 0 && digits.utf8.count < 4 ? String(repeating: "0", count: 4 - digits.utf8.count) + digits : digits
    }

    /// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's `civil_from_days`).
    public static func civil(fromDays days: Int64) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = Int(doy - (153 * mp + 2) / 5 + 1)
        let month = Int(mp < 10 ? mp + 3 : mp - 9)
        return (Int(yoe + era * 400) + (month <= 2 ? 1 : 0), month, day)
    }
}
