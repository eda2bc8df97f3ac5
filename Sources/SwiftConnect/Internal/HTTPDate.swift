import Foundation

/// HTTP-dates (RFC 9110 §5.6.7), as `Retry-After`, `Expires` and `Date` carry them.
enum HTTPDate {
    /// An HTTP-date in any of its three forms: IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the obsolete
    /// RFC 850 form (`Sunday, 06-Nov-94 08:49:37 GMT`) and the obsolete asctime form (`Sun Nov  6 08:49:37 1994`).
    ///
    /// - Parameters:
    ///   - text: The date, without surrounding blanks.
    ///   - now: The current time: an RFC 850 two-digit year more than 50 years after it is the latest past year
    ///     with those digits (RFC 9110 §5.6.7).
    /// - Returns: The date, or `nil` when `text` is in none of the forms.
    static func date(from text: String, now: Date) -> Date? {
        // An HTTP-date is visible ASCII, 33 characters at most (`Wednesday, 09-Nov-94 08:49:37 GMT`). Nothing else
        // reaches DateFormatter, which on Linux stops the process on some other text: " \u{0657} ", a combining mark
        // after a space, fails its "Incorrect range" precondition (found by fuzzing the header parsers).
        guard text.utf8.count <= 40, text.utf8.allSatisfy({ (0x20...0x7E).contains($0) }) else { return nil }
        // A formatter per call: parsing happens once per retried or cached response at most, and a fresh formatter
        // sidesteps the thread-safety questions a shared one raises on older platforms.
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.calendar = Calendar(identifier: .gregorian)
        formatter.isLenient = false
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        if let date = formatter.date(from: text) { return date }
        // The obsolete forms are told apart by their shape, so at most one more format is tried.
        if text.contains("-") {
            formatter.twoDigitStartDate = formatter.calendar.date(byAdding: .year, value: -50, to: now)
            formatter.dateFormat = "EEEE, dd-MMM-yy HH:mm:ss 'GMT'"
        } else {
            formatter.dateFormat = "EEE MMM d HH:mm:ss yyyy"
        }
        return formatter.date(from: text)
    }
}
