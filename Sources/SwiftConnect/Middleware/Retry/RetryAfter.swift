import Foundation

/// The `Retry-After` response header (RFC 9110 §10.2.3): how long a client should wait before its next request.
///
/// The value is either a number of seconds (`Retry-After: 120`) or an HTTP-date
/// (`Retry-After: Fri, 31 Dec 1999 23:59:59 GMT`), read in each of the three forms RFC 9110 §5.6.7 requires a
/// recipient to accept: IMF-fixdate, and the obsolete RFC 850 and asctime forms.
enum RetryAfter {
    /// The wait a `Retry-After` value asks for, in seconds, never negative.
    ///
    /// A negative number of seconds, or a date already past, gives 0: the server is ready now.
    ///
    /// - Parameters:
    ///   - value: The header value.
    ///   - now: The current time, for an HTTP-date.
    /// - Returns: The delay, or `nil` when the value is neither a number of seconds nor an HTTP-date.
    static func delay(from value: String, now: Date) -> TimeInterval? {
        let text = value.trimmingCharacters(in: .whitespaces)
        if let seconds = seconds(in: text) { return max(0, seconds) }
        guard let date = date(from: text, now: now) else { return nil }
        return max(0, date.timeIntervalSince(now))
    }

    /// `delay-seconds` (`1*DIGIT`), tolerating a leading minus sign; very long numbers saturate.
    private static func seconds(in text: String) -> TimeInterval? {
        let digits = text.hasPrefix("-") ? text.dropFirst() : Substring(text)
        // ASCII digits only, byte by byte: a Character range would also take a digit with a combining mark.
        guard !digits.isEmpty, digits.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
        else { return nil }
        let magnitude = Double(digits).flatMap { $0.isFinite ? $0 : nil } ?? .greatestFiniteMagnitude
        return text.hasPrefix("-") ? -magnitude : magnitude
    }

    /// An HTTP-date in any of its three forms: IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the obsolete
    /// RFC 850 form (`Sunday, 06-Nov-94 08:49:37 GMT`) and the obsolete asctime form (`Sun Nov  6 08:49:37 1994`).
    ///
    /// - Parameters:
    ///   - text: The date.
    ///   - now: The current time: an RFC 850 two-digit year more than 50 years after it is the latest past year
    ///     with those digits (RFC 9110 §5.6.7).
    /// - Returns: The date, or `nil` when `text` is in none of the forms.
    static func date(from text: String, now: Date) -> Date? {
        // A formatter per call: parsing happens once per retried response at most, and a fresh formatter
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
