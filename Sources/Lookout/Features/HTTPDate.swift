/// HTTP-date (RFC 9110 §5.6.7): IMF-fixdate `Sun, 06 Nov 1994 08:49:37 GMT`, and the obsolete
/// RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime (`Sun Nov  6 08:49:37 1994`) forms that
/// recipients must accept.
enum HTTPDate {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    static func unixSeconds(_ text: String) -> Double? {
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

    private static let currentYearGuess = 1970 + Int(Instant.now().unixMicroseconds / 31_556_952_000_000)

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
