import Foundation

/// The `Retry-After` response header (RFC 9110 §10.2.3): how long a client should wait before its next request.
///
/// The value is either a number of seconds (`Retry-After: 120`) or an HTTP-date
/// (`Retry-After: Fri, 31 Dec 1999 23:59:59 GMT`), read in each of the three forms RFC 9110 §5.6.7 requires a
/// recipient to accept: IMF-fixdate, and the obsolete RFC 850 and asctime forms (see ``HTTPDate``).
enum RetryAfter {
    /// The wait a `Retry-After` value asks for, in seconds, never negative.
    ///
    /// A date already past gives 0: the server is ready now. A negative number is not a `delay-seconds` value and
    /// gives `nil`, like any other value that is neither form: it must not read as "retry now".
    ///
    /// An HTTP-date is measured from the response's own `Date` when it has a readable one: a server whose clock is
    /// off writes both by that clock, so the time between them is the wait it means, where measuring from this
    /// device's clock would make it none (or far too long).
    ///
    /// - Parameters:
    ///   - value: The header value.
    ///   - now: The current time, for an HTTP-date.
    ///   - responseDate: The response's `Date` header, if any.
    /// - Returns: The delay, or `nil` when the value is neither a number of seconds nor an HTTP-date.
    static func delay(from value: String, now: Date, responseDate: String? = nil) -> TimeInterval? {
        let text = value.trimmingCharacters(in: .whitespaces)
        if let seconds = seconds(in: text) { return seconds }
        guard let date = HTTPDate.date(from: text, now: now) else { return nil }
        let sent = responseDate.flatMap { HTTPDate.date(from: $0.trimmingCharacters(in: .whitespaces), now: now) }
        return max(0, date.timeIntervalSince(sent ?? now))
    }

    /// The wait `value` asks for, as ``delay(from:now:responseDate:)`` reads it, or, for the values of repeated
    /// `Retry-After` fields joined with `", "` (as engines join them: an app's and an edge proxy's, `3600, 3600`), the
    /// longest wait one of them asks for: retrying sooner than any of them asked only meets the limit again. An
    /// HTTP-date holds a comma of its own (`Wed, 21 Oct 2026 07:28:00 GMT`): a piece that is no value is read with
    /// the piece after it. `nil` when no part is a value.
    static func longestDelay(from value: String, now: Date, responseDate: String? = nil) -> TimeInterval? {
        if let wait = delay(from: value, now: now, responseDate: responseDate) { return wait }
        let pieces = value.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        guard pieces.count > 1 else { return nil }
        var waits: [TimeInterval] = []
        var index = 0
        while index < pieces.count {
            if let wait = delay(from: pieces[index], now: now, responseDate: responseDate) {
                waits.append(wait)
                index += 1
            } else if index + 1 < pieces.count,
                let wait = delay(from: pieces[index] + "," + pieces[index + 1], now: now, responseDate: responseDate)
            {
                waits.append(wait)
                index += 2
            } else {
                index += 1
            }
        }
        return waits.max()
    }

    /// `delay-seconds` (`1*DIGIT`); very long numbers saturate.
    private static func seconds(in text: String) -> TimeInterval? {
        let digits = Substring(text)
        // ASCII digits only, byte by byte: a Character range would also take a digit with a combining mark.
        guard !digits.isEmpty, digits.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
        else { return nil }
        let magnitude = Double(digits).flatMap { $0.isFinite ? $0 : nil } ?? .greatestFiniteMagnitude
        return magnitude
    }
}
