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

    /// Seconds since 1970 of an HTTP-date in any of the three forms; nil when `text` is none of them.
    public static func unixSeconds(_ text: String) -> Double? {
        if let seconds = imfFixdate(text) { return seconds }
        let parts = text.split(whereSeparator: { $0 == " " || $0 == "," }).map(String.init)
        var day: Int?, month: Int?, year: Int?, time: [Int]?
        if parts.count == 6, parts[5] == "GMT" {                 // IMF-fixdate
            day = Int(parts[1]); month = monthIndex(parts[2]); year = Int(parts[3]); time = clock(parts[4])
        } else if parts.count == 4, parts[3] == "GMT" {           // RFC 850
            let date = parts[1].split(separator: "-").map(String.init)
            guard date.count == 3, let yy = Int(date[2]) else { return nil }
            day = Int(date[0]); month = monthIndex(date[1]); time = clock(parts[2])
            // RFC 9110 §5.6.7: a two-digit year more than 50 years ahead is in the past century.
            year = yy < 100 ? (yy + 2000 > currentYearGuess + 50 ? yy + 1900 : yy + 2000) : yy
        } else if parts.count == 5 {                              // asctime
            month = monthIndex(parts[1]); day = Int(parts[2]); time = clock(parts[3]); year = Int(parts[4])
        }
        guard let day, let month, let year, let time, (1...31).contains(day), time[0] < 24, time[1] < 60, time[2] < 61
        else { return nil }
        let days = daysFromCivil(year: year, month: month + 1, day: day)
        return Double(days * 86_400 + time[0] * 3600 + time[1] * 60 + time[2])
    }

    /// The form every sender generates (RFC 9110 §5.6.7), read from its 29 bytes without
    /// allocating: `Sun, 06 Nov 1994 08:49:37 GMT`. Nil for anything else (the general parser
    /// then tries the obsolete forms).
    private static func imfFixdate(_ text: String) -> Double? {
        var text = text
        return text.withUTF8 { b -> Double? in
            guard b.count == 29, b[3] == 0x2C, b[4] == 0x20, b[7] == 0x20, b[11] == 0x20, b[16] == 0x20,
                  b[19] == 0x3A, b[22] == 0x3A, b[25] == 0x20, b[26] == 0x47, b[27] == 0x4D, b[28] == 0x54 else { return nil }
            func digits(_ at: Int, _ count: Int) -> Int? {
                var value = 0
                for i in at..<(at + count) {
                    let d = Int(b[i]) - 0x30
                    guard d >= 0 && d <= 9 else { return nil }
                    value = value * 10 + d
                }
                return value
            }
            // Month by its three letters, case-insensitively.
            let key = (Int(b[8] | 0x20) << 16) | (Int(b[9] | 0x20) << 8) | Int(b[10] | 0x20)
            guard let month = monthKeys.firstIndex(of: key), let day = digits(5, 2), let year = digits(12, 4),
                  let hour = digits(17, 2), let minute = digits(20, 2), let second = digits(23, 2),
                  (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
            let days = daysFromCivil(year: year, month: month + 1, day: day)
            return Double(days * 86_400 + hour * 3600 + minute * 60 + second)
        }
    }

    private static let monthKeys: [Int] = months.map { name in
        let b = Array(name.utf8)
        return (Int(b[0]) << 16) | (Int(b[1]) << 8) | Int(b[2])
    }

    private static let currentYearGuess = 1970 + Int(time(nil)) / 31_556_952

    private static func monthIndex(_ name: String) -> Int? { months.firstIndex(of: name.lowercased()) }

    private static func clock(_ text: String) -> [Int]? {
        let fields = text.split(separator: ":").compactMap { Int($0) }
        return fields.count == 3 ? fields : nil
    }

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
        return "\(weekday), \(two(day)) \(monthNames[month - 1]) \(year) "
            + "\(two(secondsOfDay / 3600)):\(two(secondsOfDay / 60 % 60)):\(two(secondsOfDay % 60)) GMT"
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
