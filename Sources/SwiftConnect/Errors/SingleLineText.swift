/// Making text that came from elsewhere (a server, a decoder) safe to show on one line of a log.
enum SingleLineText {
    /// How many characters of a message an error shows.
    static let messageLimit = 1_024
    /// How many characters of a server's message an error keeps: more than it shows, so that secrets are hidden
    /// before the cut to ``messageLimit``, and a secret the cut would split is hidden whole, never shown in part.
    static let keptLimit = 16 * messageLimit

    /// `text` cut as ``make(_:limit:)`` cuts it (to `limit - 1` characters and "…"), with nothing else changed.
    static func cut(_ text: String, limit: Int = messageLimit) -> String {
        text.count > limit ? String(text.prefix(max(limit, 2) - 1)) + "…" : text
    }

    /// `text` on one line and at most `limit` characters long.
    ///
    /// Control characters (C0, DEL and C1, so CR, LF, ESC and NEL among them) and the Unicode line and
    /// paragraph separators become a space, a run of them (with the spaces around it) one space, so that the
    /// text can neither start a new log line nor send terminal escape sequences. Text longer than `limit`
    /// characters is cut to `limit - 1` characters followed by "…". Leading and trailing spaces left by the
    /// replacement are removed.
    ///
    /// - Parameters:
    ///   - text: The text.
    ///   - limit: The most characters to keep, "…" included; at least 2.
    /// - Returns: The text, unchanged when it was already printable ASCII within the limit.
    static func make(_ text: some StringProtocol, limit: Int = messageLimit) -> String {
        let limit = max(limit, 2)
        // Most messages are short printable ASCII: check the bytes, without breaking the text into characters.
        if text.utf8.count <= limit, text.utf8.allSatisfy({ (0x20..<0x7F).contains($0) }) {
            return String(text)
        }
        var result = ""
        var count = 0
        var separated = true  // nothing yet, or the last character kept is a space
        var pendingSpace = false
        for character in text {
            if isLineBreaking(character) {
                pendingSpace = true
                continue
            }
            if pendingSpace {
                // Spaces next to the replaced characters belong to the run.
                if character == " " { continue }
                pendingSpace = false
                if !separated {
                    result.append(" ")
                    count += 1
                }
            }
            result.append(character)
            count += 1
            separated = character == " "
            if count > limit {
                result.removeLast(count - (limit - 1))
                while result.last == " " { result.removeLast() }
                result.append("…")
                return result
            }
        }
        while result.last == " " { result.removeLast() }
        return result
    }

    /// Whether a character holds a control character or a line or paragraph separator. A control character is
    /// always a character of its own, except CR LF, which is one.
    private static func isLineBreaking(_ character: Character) -> Bool {
        character.unicodeScalars.contains { scalar in
            switch scalar.value {
            case 0x00..<0x20, 0x7F..<0xA0, 0x2028, 0x2029: return true
            default: return false
            }
        }
    }
}
