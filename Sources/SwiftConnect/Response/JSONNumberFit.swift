import Foundation

/// Finding the number `JSONDecoder` refused as "not valid JSON".
///
/// Foundation's `JSONDecoder` (Swift 5.9 and later, on every platform) reports a number that does not fit the type it
/// decodes to (`1.5` or `1e30` for an `Int`, `-1` for a `UInt`, `300` for a `UInt8`, `1e39` for a `Float`) as
/// `dataCorrupted` with no coding path and "The given data was not valid JSON." (swift-foundation issues 274 and
/// 1604): people look for a syntax error in valid JSON, with no idea where. `locate(_:in:with:)` decodes the type
/// again over the parsed body, asking the same `JSONDecoder` for each value in the order the type asks for them and
/// looking into the one it refuses, down to the number.
enum JSONNumberFit {
    /// A number that does not fit its type, and where it is.
    struct Misfit: Error {
        /// The coding path to the number; empty for a body that is the number.
        var codingPath: [any CodingKey]
        /// The number, as JSON.
        var number: String
        /// The name of the type it does not fit.
        var type: String

        /// The path to the number (`lines[1].quantity`); `nil` for a body that is the number.
        var path: String? { ConnectError.codingPathDescription(codingPath) }
    }

    /// How JSONDecoder's message is to be read, at the end of every explanation.
    static let validJSONNote =
        "(the JSON is valid: JSONDecoder reports such a number as \"The given data was not valid JSON.\")"

    /// What to say of a number `JSONDecoder` refused as "not valid JSON": `misfit` (`the number 1.5 at
    /// 'lines[1].quantity' does not fit Int (…)`, its path left out unless `naming`), or, when it was not found,
    /// what JSONDecoder's message means.
    static func explanation(of misfit: Misfit?, namingItsPath naming: Bool = true) -> String {
        guard let misfit else {
            return "JSONDecoder refused a value, most likely a number that does not fit its type (a fraction or an "
                + "exponent for an integer, a negative number for an unsigned one, a value beyond the type's range) "
                + validJSONNote
        }
        var text = "the number \(misfit.number)"
        if naming, let path = misfit.path { text += " at '\(path)'" }
        return text + " does not fit \(misfit.type) " + validJSONNote
    }

    /// Whether `error`, thrown by a `JSONDecoder` decoding `text`, is its report of a number that does not fit its
    /// type: its "not valid JSON" report (`isNotValidJSONReport(_:)`) of a text that parses and is not deeper than
    /// JSONDecoder goes (which it reports so too). Parses `text` again: call it for a failure only.
    static func isMisfitReport(_ error: any Error, decoding text: Data) -> Bool {
        isNotValidJSONReport(error) && !JSONDepth.exceeds(text, limit: JSONDepth.foundationLimit)
            && JSONSyntax.problem(in: text) == nil
    }

    /// The deepest body walked.
    static let maximumDepth = 64

    /// `snake_case_key` as `JSONDecoder.KeyDecodingStrategy.convertFromSnakeCase` makes it: the words between
    /// underscores joined, each after the first capitalised, underscores before and after the words kept; a key
    /// without an underscore between words is kept as it is.
    static func camelCase(fromSnakeCase key: String) -> String {
        guard let first = key.firstIndex(where: { $0 != "_" }) else { return key }
        guard let last = key.lastIndex(where: { $0 != "_" }) else { return key }
        let words = key[first...last].split(separator: "_")
        guard words.count > 1 else { return key }
        let joined = words[0].lowercased() + words.dropFirst().map { $0.capitalized }.joined()
        return String(key[..<first]) + joined + String(key[key.index(after: last)...])
    }

    /// Whether `error` is `JSONDecoder`'s report of a number that does not fit its type, or of invalid JSON: the two
    /// read the same. (A type's own `dataCorrupted` error says something else.)
    static func isNotValidJSONReport(_ error: any Error) -> Bool {
        guard case .dataCorrupted(let context)? = error as? DecodingError else { return false }
        return context.codingPath.isEmpty && context.debugDescription == "The given data was not valid JSON."
    }

    /// The number in `data` that `decoder` refused while decoding `type`, or `nil` when none is found (the body does
    /// not parse, or decodes otherwise here than in `decoder`).
    ///
    /// Each value `type` asks for is decoded by `decoder` on its own, with its strategies; only the one it refuses as
    /// "not valid JSON" is looked into. A type's `init(from:)` runs again, for this failure only.
    static func locate<T: Decodable>(_ type: T.Type, in data: Data, with decoder: JSONDecoder) -> Misfit? {
        locate(type, in: data, with: decoder, refused: isNotValidJSONReport) {
            $0 is any BinaryInteger.Type || $0 is any BinaryFloatingPoint.Type
        }
    }

    /// Whether `error` is `JSONDecoder`'s report of a string its `.iso8601` date strategy does not read. Foundation
    /// gives it the path of the container that holds the date, not the date's own (the key is left out), so that
    /// `[0].endsAt` reads `[0]`, and a top-level object's date has no path at all.
    static func isISO8601DateReport(_ error: any Error) -> Bool {
        guard case .dataCorrupted(let context)? = error as? DecodingError else { return false }
        return context.debugDescription == "Expected date string to be ISO8601-formatted."
    }

    /// The date in `data` that `decoder`'s `.iso8601` strategy refused while decoding `type` (``Misfit/number`` holds
    /// the value, as JSON), or `nil` when none is found.
    static func locateDate<T: Decodable>(_ type: T.Type, in data: Data, with decoder: JSONDecoder) -> Misfit? {
        locate(type, in: data, with: decoder, refused: isISO8601DateReport) { $0 == Date.self }
    }

    /// The value in `data` that `decoder` refused with an error `refused` recognises, of a type `isLeaf` accepts.
    private static func locate<T: Decodable>(
        _ type: T.Type, in data: Data, with decoder: JSONDecoder, refused: @escaping (any Error) -> Bool,
        isLeaf: @escaping (Any.Type) -> Bool
    ) -> Misfit? {
        // The walk takes a few stack frames a level on top of JSONDecoder's own: deep bodies are not walked, so that
        // it fits a worker thread's stack (512 KiB on Apple platforms) with room to spare.
        guard !JSONDepth.exceeds(data, limit: maximumDepth),
            let root = try? JSONSerialization.jsonObject(with: data, options: .fragmentsAllowed)
        else { return nil }
        do {
            _ = try Walk(decoder: decoder, refused: refused, isLeaf: isLeaf).decode(type, from: root, at: [])
        } catch let misfit as Misfit {
            return misfit
        } catch {
            return nil
        }
        return nil
    }
}

/// Why a walk stops without finding the number: the body decodes otherwise here than in `JSONDecoder`.
private struct WalkStopped: Error {}

/// A `[String: …]` dictionary, whose keys `JSONDecoder` does not convert by its key strategy.
private protocol StringKeyedDictionary {}

extension Dictionary: StringKeyedDictionary where Key == String {}

/// One walk over a parsed body. A class: its step count is shared by every container of the walk.
private final class Walk {
    let decoder: JSONDecoder
    /// Whether an error is the refusal looked for (a number's "not valid JSON", an ISO 8601 date's).
    private let refused: (any Error) -> Bool
    /// Whether a value of a type is what is refused, rather than a container to look into.
    private let isLeaf: (Any.Type) -> Bool
    /// How many values have been asked for, and how deep the walk is: bounds for types that ask forever.
    private var steps = 0
    private var depth = 0

    init(decoder: JSONDecoder, refused: @escaping (any Error) -> Bool, isLeaf: @escaping (Any.Type) -> Bool) {
        self.decoder = decoder
        self.refused = refused
        self.isLeaf = isLeaf
    }

    /// `value` decoded as `type` by the decoder; if it refuses it as "not valid JSON", the `Misfit`
    /// found in it.
    func decode<T: Decodable>(_ type: T.Type, from value: Any, at path: [any CodingKey]) throws -> T {
        steps += 1
        guard steps < 1_000_000, depth < 4 * JSONNumberFit.maximumDepth,
            let json = try? JSONSerialization.data(withJSONObject: value, options: .fragmentsAllowed)
        else { throw WalkStopped() }
        do {
            return try decoder.decode(type, from: json)
        } catch let error where refused(error) {
            let isContainer = value is [Any] || value is [String: Any]
            if !isContainer, isLeaf(type) {
                throw JSONNumberFit.Misfit(
                    codingPath: path, number: String(decoding: json, as: UTF8.self), type: "\(type)")
            }
            // A container, or a type of its own that decodes a number: look inside.
            depth += 1
            defer { depth -= 1 }
            let convertsKeys = !(type is any StringKeyedDictionary.Type)
            _ = try T(from: WalkDecoder(walk: self, value: value, codingPath: path, convertsKeys: convertsKeys))
            throw WalkStopped()
        } catch {
            throw WalkStopped()
        }
    }

    /// `object` with its keys as the decoder's key strategy makes them, for the container at `path`.
    func keyed(_ object: [String: Any], at path: [any CodingKey]) -> [String: Any] {
        switch decoder.keyDecodingStrategy {
        case .useDefaultKeys:
            return object
        case .convertFromSnakeCase:
            var result: [String: Any] = [:]
            for (key, value) in object { result[JSONNumberFit.camelCase(fromSnakeCase: key)] = value }
            return result
        case .custom(let convert):
            var result: [String: Any] = [:]
            for (key, value) in object { result[convert(path + [WalkKey(key)]).stringValue] = value }
            return result
        @unknown default:
            return object
        }
    }
}

/// A coding key of the walk: an object's key or an array's index.
private struct WalkKey: CodingKey {
    var stringValue: String
    var intValue: Int?

    init(_ string: String) {
        stringValue = string
    }

    init(index: Int) {
        stringValue = "Index \(index)"
        intValue = index
    }

    init?(stringValue: String) { self.init(stringValue) }

    init?(intValue: Int) { self.init(index: intValue) }
}

/// The decoder a type's `init(from:)` is given in the walk: its containers hand every value to `Walk`.
private struct WalkDecoder: Decoder {
    let walk: Walk
    let value: Any
    let codingPath: [any CodingKey]
    let convertsKeys: Bool

    var userInfo: [CodingUserInfoKey: Any] { walk.decoder.userInfo }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard let object = value as? [String: Any] else { throw WalkStopped() }
        let keyed = convertsKeys ? walk.keyed(object, at: codingPath) : object
        return KeyedDecodingContainer(WalkKeyedContainer<Key>(walk: walk, object: keyed, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard let array = value as? [Any] else { throw WalkStopped() }
        return WalkUnkeyedContainer(walk: walk, array: array, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        WalkSingleValueContainer(walk: walk, value: value, codingPath: codingPath)
    }
}

private struct WalkKeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let walk: Walk
    let object: [String: Any]
    let codingPath: [any CodingKey]

    var allKeys: [Key] { object.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { object[key.stringValue] != nil }

    private func value(for key: Key) throws -> Any {
        guard let value = object[key.stringValue] else { throw WalkStopped() }
        return value
    }

    func decodeNil(forKey key: Key) throws -> Bool { try value(for: key) is NSNull }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try value(type, forKey: key) }

    /// Every `decode` of this container: the value is the walk's.
    private func value<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try walk.decode(type, from: value(for: key), at: codingPath + [key])
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try value(type, forKey: key) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try value(type, forKey: key) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try value(type, forKey: key) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try value(type, forKey: key) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try value(type, forKey: key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try value(type, forKey: key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try value(type, forKey: key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try value(type, forKey: key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try value(type, forKey: key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try value(type, forKey: key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try value(type, forKey: key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try value(type, forKey: key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try value(type, forKey: key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try value(type, forKey: key) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try WalkDecoder(walk: walk, value: value(for: key), codingPath: codingPath + [key], convertsKeys: true)
            .container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try WalkDecoder(walk: walk, value: value(for: key), codingPath: codingPath + [key], convertsKeys: true)
            .unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        let key = WalkKey("super")
        return WalkDecoder(
            walk: walk, value: object[key.stringValue] ?? NSNull(), codingPath: codingPath + [key],
            convertsKeys: true)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        WalkDecoder(
            walk: walk, value: object[key.stringValue] ?? NSNull(), codingPath: codingPath + [key],
            convertsKeys: true)
    }
}

private struct WalkUnkeyedContainer: UnkeyedDecodingContainer {
    let walk: Walk
    let array: [Any]
    let codingPath: [any CodingKey]
    private(set) var currentIndex = 0

    init(walk: Walk, array: [Any], codingPath: [any CodingKey]) {
        self.walk = walk
        self.array = array
        self.codingPath = codingPath
    }

    var count: Int? { array.count }
    var isAtEnd: Bool { currentIndex >= array.count }

    /// The next value and its path, the index moved past it.
    private mutating func next() throws -> (value: Any, path: [any CodingKey]) {
        guard !isAtEnd else { throw WalkStopped() }
        defer { currentIndex += 1 }
        return (array[currentIndex], codingPath + [WalkKey(index: currentIndex)])
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, array[currentIndex] is NSNull else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try nextValue(type) }

    /// Every `decode` of this container: the next value is the walk's.
    private mutating func nextValue<T: Decodable>(_ type: T.Type) throws -> T {
        let (value, path) = try next()
        return try walk.decode(type, from: value, at: path)
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try nextValue(type) }
    mutating func decode(_ type: String.Type) throws -> String { try nextValue(type) }
    mutating func decode(_ type: Double.Type) throws -> Double { try nextValue(type) }
    mutating func decode(_ type: Float.Type) throws -> Float { try nextValue(type) }
    mutating func decode(_ type: Int.Type) throws -> Int { try nextValue(type) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try nextValue(type) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try nextValue(type) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try nextValue(type) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try nextValue(type) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try nextValue(type) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try nextValue(type) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try nextValue(type) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try nextValue(type) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try nextValue(type) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        let (value, path) = try next()
        return try WalkDecoder(walk: walk, value: value, codingPath: path, convertsKeys: true).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let (value, path) = try next()
        return try WalkDecoder(walk: walk, value: value, codingPath: path, convertsKeys: true).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder {
        let (value, path) = try next()
        return WalkDecoder(walk: walk, value: value, codingPath: path, convertsKeys: true)
    }
}

private struct WalkSingleValueContainer: SingleValueDecodingContainer {
    let walk: Walk
    let value: Any
    let codingPath: [any CodingKey]

    func decodeNil() -> Bool { value is NSNull }

    func decode<T: Decodable>(_ type: T.Type) throws -> T { try walked(type) }

    /// Every `decode` of this container: the value is the walk's.
    private func walked<T: Decodable>(_ type: T.Type) throws -> T { try walk.decode(type, from: value, at: codingPath) }

    func decode(_ type: Bool.Type) throws -> Bool { try walked(type) }
    func decode(_ type: String.Type) throws -> String { try walked(type) }
    func decode(_ type: Double.Type) throws -> Double { try walked(type) }
    func decode(_ type: Float.Type) throws -> Float { try walked(type) }
    func decode(_ type: Int.Type) throws -> Int { try walked(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try walked(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try walked(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try walked(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try walked(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try walked(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try walked(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try walked(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try walked(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try walked(type) }
}
