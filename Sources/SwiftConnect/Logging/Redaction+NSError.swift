import Foundation

extension Redaction {
    /// How deep errors nested in user info (`NSUnderlyingErrorKey`, `NSMultipleUnderlyingErrorsKey`) are read. Deeper
    /// ones are shown as their domain and code only: what they say cannot be checked.
    private static let nestedErrorDepth = 16

    /// `error` as an error bridged to `NSError` shows it (what crash reporters record, and `print(error as NSError)`
    /// writes), with the secrets of its user info hidden, at any depth of nested errors: its strings with every URL
    /// in them redacted (``urlsInText(_:)``) and `secrets` hidden, its URLs redacted as ``url(_:redacting:)`` redacts
    /// them (the placeholder percent-encoded, so that a URL stays a `URL`), and its localized description, failure
    /// reason and recovery suggestion so too.
    ///
    /// A platform error quotes the URL it failed on in its user info (`NSErrorFailingURLKey`), which after a
    /// redirect is one the request never named. An error with nothing to hide is returned as it is, so that code
    /// that casts it back keeps its type; one with something to hide becomes a plain `NSError` of the same domain
    /// and code.
    static func bridged(_ error: NSError, hiding secrets: SecretValues, depth: Int = 0) -> NSError {
        guard depth < nestedErrorDepth else { return NSError(domain: error.domain, code: error.code) }
        var info: [String: Any] = [:]
        var changed = false
        for (key, value) in error.userInfo {
            let shown = bridgedValue(value, hiding: secrets, depth: depth)
            changed = changed || shown.changed
            info[key] = shown.value
        }
        // Read through the error, not only its user info: a Swift error's texts come from its `LocalizedError`.
        let texts: [(key: String, text: String?)] = [
            (NSLocalizedDescriptionKey, error.localizedDescription),
            (NSLocalizedFailureReasonErrorKey, error.localizedFailureReason),
            (NSLocalizedRecoverySuggestionErrorKey, error.localizedRecoverySuggestion),
        ]
        changed = changed || texts.contains { $0.text.map { hiding(secrets, in: $0) != $0 } ?? false }
        guard changed else { return error }
        // Set in the copy: texts an error gives through its `LocalizedError`, not its user info, are kept.
        for (key, text) in texts {
            if let text { info[key] = hiding(secrets, in: text) }
        }
        return NSError(domain: error.domain, code: error.code, userInfo: info)
    }

    /// A value of an error's user info as ``bridged(_:hiding:depth:)`` shows it, and whether it differs.
    private static func bridgedValue(_ value: Any, hiding secrets: SecretValues, depth: Int) -> (
        value: Any, changed: Bool
    ) {
        switch value {
        case let text as String:
            let hidden = hiding(secrets, in: text)
            return (hidden, hidden != text)
        case let url as URL:
            let text = secrets.hiding(in: Redaction.url(url, redacting: true))
            guard text != url.absoluteString else { return (url, false) }
            let encoded = text.replacingOccurrences(of: placeholder, with: "%3Credacted%3E")
            return (URL(string: encoded) ?? text, true)
        case let nested as NSError:
            let shown = bridged(nested, hiding: secrets, depth: depth + 1)
            return (shown, shown !== nested)
        case let list as [Any]:
            let shown = list.map { bridgedValue($0, hiding: secrets, depth: depth) }
            return (shown.map(\.value), shown.contains(where: \.changed))
        default:
            return (value, false)
        }
    }

    /// `text` with every URL in it redacted and `secrets` hidden.
    private static func hiding(_ secrets: SecretValues, in text: String) -> String {
        secrets.hiding(in: urlsInText(text))
    }
}
