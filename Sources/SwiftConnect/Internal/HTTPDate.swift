import Foundation

/// HTTP-dates (RFC 9110 §5.6.7), as `Retry-After`, `Expires` and `Date` carry them.
package enum HTTPDate {
    /// An HTTP-date in any of its three forms: IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the obsolete
    /// RFC 850 form (`Sunday, 06-Nov-94 08:49:37 GMT`) and the obsolete asctime form (`Sun Nov  6 08:49:37 1994`).
    ///
    /// - Parameters:
    ///   - text: The date, without surrounding blanks.
    ///   - now: The current time: an RFC 850 two-digit year more than 50 years after it is the latest past year
    ///     with those digits (RFC 9110 §5.6.7).
    /// - Returns: The date, or `nil` when `text` is in none of the forms.
    package static func date(from text: String, now: Date) -> Date? {
        // An HTTP-date is visible ASCII, 33 characters at most (`Wednesday, 09-Nov-94 08:49:37 GMT`). Nothing else
        // reaches DateFormatter, which on Linux stops the process on some other text: " \u{0657} ", a combining mark
        // after a space, fails its "Incorrect range" precondition (found by fuzzing the header parsers).
        guard text.utf8.count <= 40, text.utf8.allSatisfy({ (0x20...0x7E).contains($0) }) else { return nil }
        // A leap second (`23:59:60`, which RFC 9110 allows) is read as the second after `23:59:59`: the formatter
        // refuses second 60.
        var text = text
        var leapSecond: TimeInterval = 0
        if let sixty = text.range(of: ":60 "), text.distance(from: text.startIndex, to: sixty.lowerBound) >= 5,
            text[text.index(sixty.lowerBound, offsetBy: -3)] == ":"
        {
            text.replaceSubrange(sixty, with: ":59 ")
            leapSecond = 1
        }
        return parsed(text, now: now)?.addingTimeInterval(leapSecond)
    }

    /// ``date(from:now:)`` without leap seconds.
    private static func parsed(_ text: String, now: Date) -> Date? {
        // A formatter per call: parsing happens once per retried or cached response at most, and a fresh formatter
        // sidesteps the thread-safety questions a shared one raises on older platforms.
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.calendar = Calendar(identifier: .gregorian)
        formatter.isLenient = false
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        // The fixed forms have a fixed length, which holds their years to four digits: the formatter also takes
        // `06 Nov 25` (the year 25) and `06 Nov -1994`.
        let length = text.utf8.count
        if length == 29, let date = formatter.date(from: text) { return date }
        // The obsolete forms are told apart by their shape, so at most one more format is tried.
        if text.contains("-") {
            // `, 06-Nov-94 08:49:37 GMT` after the weekday, with its two dashes where the form puts them.
            guard let comma = text.firstIndex(of: ","), case let rest = Array(text[comma...].utf8), rest.count == 24,
                rest[4] == UInt8(ascii: "-"), rest[8] == UInt8(ascii: "-")
            else { return nil }
            formatter.twoDigitStartDate = formatter.calendar.date(byAdding: .year, value: -50, to: now)
            formatter.dateFormat = "EEEE, dd-MMM-yy HH:mm:ss 'GMT'"
        } else {
            guard length == 24 else { return nil }
            formatter.dateFormat = "EEE MMM d HH:mm:ss yyyy"
        }
        return formatter.date(from: text)
    }
}
