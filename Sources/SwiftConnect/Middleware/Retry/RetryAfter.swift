import Foundation

/// The `Retry-After` response header (RFC 9110 §10.2.3): how long a client should wait before its next request.
///
/// The value is either a number of seconds (`Retry-After: 120`) or an HTTP-date
/// (`Retry-After: Fri, 31 Dec 1999 23:59:59 GMT`), which is read in the preferred IMF-fixdate form only.
enum RetryAfter {
    /// The wait a `Retry-After` value asks for, in seconds, never negative.
    ///
    /// A negative number of seconds, or a date already past, gives 0: the server is ready now.
    ///
    /// - Parameters:
    ///   - value: The header value.
    ///   - now: The current time, for an HTTP-date.
    /// - Returns: The delay, or `nil` when the value is neither a number of seconds nor an IMF-fixdate.
    static func delay(from value: String, now: Date) -> TimeInterval? {
        let text = value.trimmingCharacters(in: .whitespaces)
        if let seconds = seconds(in: text) { return max(0, seconds) }
        guard let date = date(from: text) else { return nil }
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

    /// An IMF-fixdate, such as `Sun, 06 Nov 1994 08:49:37 GMT`.
    static func date(from text: String) -> Date? {
        // A formatter per call: parsing happens once per retried response at most, and a fresh formatter
        // sidesteps the thread-safety questions a shared one raises on older platforms.
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.calendar = Calendar(identifier: .gregorian)
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        formatter.isLenient = false
        return formatter.date(from: text)
    }
}
