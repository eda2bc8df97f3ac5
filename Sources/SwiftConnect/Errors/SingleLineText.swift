/// Making text that came from elsewhere (a server, a decoder) safe to show on one line of a log.
enum SingleLineText {
    /// How many characters of a message an error shows.
    static let messageLimit = 1_024
    /// How many characters of a server's message an error keeps: more than it shows, so that secrets are hidden
    /// before the cut to ``messageLimit``, and a secret the cut would split is hidden whole, never shown in part.
    static let keptLimit = 16 * messageLimit

    /// The most Unicode scalars a character keeps: a starter and 30 non-starters, the limit of UAX #15's
    /// Stream-Safe Text Format. A letter with a million combining accents after it is one character of megabytes,
    /// which a limit in characters alone does not bound.
    static let scalarsPerCharacterLimit = 31

    /// The most UTF-8 bytes of a text of at most `limit` characters: 4 a character, what one scalar can take.
    static func byteLimit(_ limit: Int) -> Int { 4 * max(limit, 2) }

    /// `text` cut as ``make(_:limit:)`` cuts it (to `limit - 1` characters and "…", and to ``byteLimit(_:)`` bytes),
    /// with nothing else changed.
    static func cut(_ text: String, limit: Int = messageLimit) -> String {
        let limit = max(limit, 2)
        if text.utf8.count <= limit { return text }  // no more characters than bytes
        let byteLimit = byteLimit(limit)
        if text.utf8.count <= byteLimit, text.count <= limit { return text }
        var result = ""
        var count = 0
        var bytes = 0
        for character in text {
            let size = character.utf8.count
            // Room for "…" (3 bytes) after what is kept.
            guard count < limit - 1, bytes + size <= byteLimit - 3 else { break }
            result.append(character)
            count += 1
            bytes += size
        }
        return result + "…"
    }

    /// `text` on one line and at most `limit` characters long.
    ///
    /// Control characters (C0, DEL and C1, so CR, LF, ESC and NEL among them), the Unicode line and paragraph
    /// separators and the bidirectional embeddings, overrides and isolates (U+202A to U+202E, U+2066 to U+2069)
    /// become a space, a run of them (with the spaces around it) one space, so that the text can neither start a
    /// new log line, nor send terminal escape sequences, nor show the rest of a line in another order than it is
    /// written ("Trojan Source", CVE-2021-42574). Text longer than `limit`
    /// characters, or ``byteLimit(_:)`` UTF-8 bytes, is cut to fit with "…" after it, and a character keeps at most
    /// ``scalarsPerCharacterLimit`` scalars. Leading and trailing spaces left by the replacement are removed.
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
        let byteLimit = byteLimit(limit)
        var result = ""
        var count = 0
        var bytes = 0
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
                    bytes += 1
                }
            }
            let kept = streamSafe(character)
            result.append(kept)
            count += 1
            bytes += kept.utf8.count
            separated = character == " "
            if count > limit || bytes > byteLimit {
                // Room for "…" (3 bytes) after what is kept.
                while count > limit - 1 || bytes > byteLimit - 3, let last = result.popLast() {
                    count -= 1
                    bytes -= last.utf8.count
                }
                while result.last == " " { result.removeLast() }
                result.append("…")
                return result
            }
        }
        while result.last == " " { result.removeLast() }
        return result
    }

    /// `character` with at most ``scalarsPerCharacterLimit`` scalars: the rest of its combining marks left out.
    private static func streamSafe(_ character: Character) -> String {
        let scalars = character.unicodeScalars
        guard scalars.count > scalarsPerCharacterLimit else { return String(character) }
        var kept = String.UnicodeScalarView()
        kept.append(contentsOf: scalars.prefix(scalarsPerCharacterLimit))
        return String(kept)
    }

    /// Whether a character holds a control character, a line or paragraph separator or a bidirectional control.
    /// A control character is always a character of its own, except CR LF, which is one.
    private static func isLineBreaking(_ character: Character) -> Bool {
        character.unicodeScalars.contains(where: isUnsafe)
    }

    /// Whether `scalar` acts on the terminal or log viewer that shows it rather than being read: a control character
    /// (C0, DEL, C1), a Unicode line or paragraph separator, or a bidirectional embedding, override or isolate.
    static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        // Bidirectional embeddings, overrides and isolates reorder the rest of a log line as it is shown.
        case 0x00..<0x20, 0x7F..<0xA0, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069: return true
        default: return false
        }
    }
}
