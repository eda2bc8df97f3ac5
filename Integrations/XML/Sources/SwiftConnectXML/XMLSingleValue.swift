import Foundation

/// A value XMLCoder writes as a single value (a text, a number, a date, `nil`), found before XMLCoder sees it.
///
/// XMLCoder's `encode(_:withRootKey:)` stops the process (`fatalError("Unrecognized top-level element of type:
/// StringBox")`) for a value that is no keyed or unkeyed container: `Parameter.xml("hello")` or an enum with a raw
/// value. ``XMLBodyEncoder`` writes such a value as its root element's text instead (``Root``), which XMLCoder's
/// decoder reads back as the value.
enum XMLSingleValue {
    /// Whether XMLCoder boxes `value` as a single value: it is a `Date`, `Data`, `URL` or `Decimal` (which XMLCoder
    /// boxes without asking them), or its `encode(to:)` asks for a single-value container first and puts a single
    /// value in it (itself found the same way: a wrapper around a model is not one).
    static func isSingleValue<T: Encodable>(_ value: T) -> Bool {
        if isBoxedDirectly(T.self) { return true }
        let probe = Probe()
        // `Probe.Stop` ends the value's `encode(to:)` as soon as its shape is known; any other error is the value's
        // own, which XMLCoder meets again and reports.
        try? value.encode(to: probe)
        return probe.shape == .single
    }

    /// The types XMLCoder boxes as they are, without calling their `encode(to:)`.
    static func isBoxedDirectly<T>(_ type: T.Type) -> Bool {
        T.self == Date.self || T.self == Data.self || T.self == URL.self || T.self == Decimal.self
    }

    /// `value` as the only content of the root element: its text, as XMLCoder writes a value under the key `""`.
    struct Root<Value: Encodable>: Encodable {
        var value: Value

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: XMLName.Key.self)
            try container.encode(value, forKey: XMLName.Key.intrinsicText)
        }
    }

    /// What a value's `encode(to:)` asks for first.
    private enum Shape {
        case single
        case container
    }

    /// An encoder that notes what a value asks for first and then stops it (``Stop``). One per probe, on the calling
    /// thread.
    private final class Probe: Encoder {
        var codingPath: [any CodingKey] = []
        var userInfo: [CodingUserInfoKey: Any] = [:]
        /// What the value asked for first; `nil` when it asked for nothing (XMLCoder writes an empty element).
        private(set) var shape: Shape?

        /// Thrown as soon as the shape is known.
        struct Stop: Error {}

        func note(_ shape: Shape) throws {
            if self.shape == nil { self.shape = shape }
            throw Stop()
        }

        func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
            if shape == nil { shape = .container }
            return KeyedEncodingContainer(Stopping<Key>(codingPath: codingPath))
        }

        func unkeyedContainer() -> any UnkeyedEncodingContainer {
            if shape == nil { shape = .container }
            return Stopping<XMLName.Key>(codingPath: codingPath)
        }

        func singleValueContainer() -> any SingleValueEncodingContainer {
            Single(probe: self)
        }
    }

    /// A single-value container that notes a single value, or the shape of the value put in it.
    private struct Single: SingleValueEncodingContainer {
        let probe: Probe
        var codingPath: [any CodingKey] { probe.codingPath }

        mutating func encodeNil() throws { try probe.note(.single) }
        mutating func encode(_ value: Bool) throws { try probe.note(.single) }
        mutating func encode(_ value: String) throws { try probe.note(.single) }
        mutating func encode(_ value: Double) throws { try probe.note(.single) }
        mutating func encode(_ value: Float) throws { try probe.note(.single) }
        mutating func encode(_ value: Int) throws { try probe.note(.single) }
        mutating func encode(_ value: Int8) throws { try probe.note(.single) }
        mutating func encode(_ value: Int16) throws { try probe.note(.single) }
        mutating func encode(_ value: Int32) throws { try probe.note(.single) }
        mutating func encode(_ value: Int64) throws { try probe.note(.single) }
        mutating func encode(_ value: UInt) throws { try probe.note(.single) }
        mutating func encode(_ value: UInt8) throws { try probe.note(.single) }
        mutating func encode(_ value: UInt16) throws { try probe.note(.single) }
        mutating func encode(_ value: UInt32) throws { try probe.note(.single) }
        mutating func encode(_ value: UInt64) throws { try probe.note(.single) }

        mutating func encode<T: Encodable>(_ value: T) throws {
            if XMLSingleValue.isBoxedDirectly(T.self) { return try probe.note(.single) }
            // XMLCoder boxes the value put in as it boxes a value given to it: by its own `encode(to:)`.
            try value.encode(to: probe)
            // It asked for nothing: XMLCoder writes an empty element, no single value.
            try probe.note(.container)
        }
    }

    /// A keyed or unkeyed container whose every value stops the probe: the shape is known by then.
    private struct Stopping<Key: CodingKey>: KeyedEncodingContainerProtocol, UnkeyedEncodingContainer {
        let codingPath: [any CodingKey]
        var count: Int { 0 }

        mutating func encodeNil() throws { throw Probe.Stop() }
        mutating func encodeNil(forKey key: Key) throws { throw Probe.Stop() }
        mutating func encode<T: Encodable>(_ value: T) throws { throw Probe.Stop() }
        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws { throw Probe.Stop() }

        mutating func nestedContainer<NestedKey: CodingKey>(
            keyedBy keyType: NestedKey.Type, forKey key: Key
        ) -> KeyedEncodingContainer<NestedKey> {
            KeyedEncodingContainer(Stopping<NestedKey>(codingPath: codingPath))
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
            -> KeyedEncodingContainer<NestedKey>
        {
            KeyedEncodingContainer(Stopping<NestedKey>(codingPath: codingPath))
        }

        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer { self }
        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { self }
        mutating func superEncoder() -> any Encoder { Probe() }
        mutating func superEncoder(forKey key: Key) -> any Encoder { Probe() }
    }
}
