import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// ``JSONValue`` at its edges: every case through JSON and back, numbers past `Int` and `Double`, text JSON cannot
/// hold, reads of the wrong case; and the text of numbers JSON writes with an exponent, in a query.
final class JSONValueEdgeCaseTests: XCTestCase {
    private func decoded(_ json: String) throws -> JSONValue {
        try JSONDecoder().decode(JSONValue.self, from: Data(json.utf8))
    }

    func testEveryCaseRoundTripsEqualAndHashedAlike() throws {
        let values: [JSONValue] = [
            .null, .bool(false), .int(.min), .int(.max), .double(0.1), .double(-0.0), .double(1e300),
            .double(2.5e-308), .double(9.223_372_036_854_775_808e18), .string("😀\u{0}\"\\\u{2028}"), .array([]),
            .object([:]), ["a": [1, ["b": nil, "c": 2.5]], "": "empty key"],
        ]
        for value in values {
            let data = try JSONEncoder().encode(value)
            let back = try JSONDecoder().decode(JSONValue.self, from: data)
            let json = String(decoding: data, as: UTF8.self)
            XCTAssertEqual(back, value, json)
            XCTAssertEqual(back.hashValue, value.hashValue, json)
        }
    }

    /// A decoder that converts non-conforming floats from strings reads `"NaN"` and `"Infinity"` as floats: a JSON
    /// number is always finite, so those were strings, and stay strings (equal to themselves, printable).
    func testStringsANonConformingFloatStrategyReadsAsFloatsStayStrings() throws {
        let decoder = JSONDecoder()
        decoder.nonConformingFloatDecodingStrategy = .convertFromString(
            positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
        let value = try decoder.decode(
            JSONValue.self, from: Data(#"{"name":"NaN","tier":"Infinity","low":"-Infinity","n":1.5}"#.utf8))
        XCTAssertEqual(value["name"]?.stringValue, "NaN")
        XCTAssertEqual(value["tier"]?.stringValue, "Infinity")
        XCTAssertEqual(value["low"]?.stringValue, "-Infinity")
        XCTAssertEqual(value["n"], .double(1.5))
        XCTAssertEqual(value, value)
    }

    func testNumbersCompareByValueWhateverTheirCase() {
        XCTAssertEqual(JSONValue.int(1), .double(1.0))
        XCTAssertEqual(JSONValue.int(0), .double(-0.0))
        XCTAssertEqual(Set<JSONValue>([.int(1), .double(1.0), .int(0), .double(-0.0)]).count, 2)
        // 2^63 is a whole number no `Int` holds: it equals no `int`, and is not read as `Int.max`.
        XCTAssertNotEqual(JSONValue.double(9.223_372_036_854_775_808e18), .int(.max))
        XCTAssertNil(JSONValue.double(9.223_372_036_854_775_808e18).intValue)
        XCTAssertNotEqual(JSONValue.int(1), .bool(true))
        XCTAssertNotEqual(JSONValue.string("1"), .int(1))
    }

    /// Whole numbers past `Int` come back as the nearest `Double` (JSON does not say which type a number is), never
    /// wrapped or clamped; `1.0` and `1e3`, whole, as `int`s.
    func testNumbersPastIntDecodeAsTheNearestDouble() throws {
        XCTAssertEqual(try decoded("18446744073709551615"), .double(18_446_744_073_709_551_615.0))
        XCTAssertEqual(try decoded("-9223372036854775809"), .double(-9_223_372_036_854_775_809.0))
        XCTAssertNil(try decoded("18446744073709551615").intValue)
        XCTAssertEqual(try decoded("-9223372036854775808"), .int(.min))
        XCTAssertEqual(try decoded("1.0").intValue, 1)
        XCTAssertEqual(try decoded("1e3"), .int(1000))
        XCTAssertEqual(try decoded("9007199254740993"), .int(9_007_199_254_740_993))
    }

    /// `-0` keeps its sign, as `JSONDecoder` reads it into a `Double`: decoded as `.int(0)` it came back as `0`, so an
    /// answer echoed to its server changed, and `doubleValue` (and a model's `Double` decoded from the value) was `+0`.
    func testNegativeZeroKeepsItsSignThroughAJSONValue() throws {
        struct Reading: Codable { let value: Double }
        for json in ["-0", "-0.0", "-0e0", "-0E+5"] {
            let value = try decoded(json)
            XCTAssertEqual(value.doubleValue?.sign, .minus, json)
            XCTAssertEqual(value.doubleValue?.sign, try JSONDecoder().decode(Double.self, from: Data(json.utf8)).sign)
            XCTAssertEqual(value.intValue, 0, json)
            XCTAssertEqual(value, .int(0), "still equal to zero, by value: \(json)")
            XCTAssertEqual(String(decoding: try JSONEncoder().encode(value), as: UTF8.self), "-0", json)
        }
        let reading = try decoded(#"{"value":-0.0}"#).decoded(as: Reading.self)
        XCTAssertEqual(reading.value.sign, .minus)
        for json in ["0", "0.0", "-1", "1e3"] {
            XCTAssertEqual(try decoded(json).doubleValue?.sign, Double(json)?.sign, json)
        }
        XCTAssertEqual(try decoded("-1"), .int(-1))
        XCTAssertEqual(try decoded("0"), .int(0))
    }

    /// A string with a lone UTF-16 surrogate escape has no Swift text: a `DecodingError`, not a replacement character
    /// or a crash. A NUL escape is text like any other.
    func testStringsJSONCannotGiveAsTextFailToDecode() throws {
        for json in [#""\ud800""#, #""\udc00x""#, #"["ok", "\ud83d"]"#] {
            XCTAssertThrowsError(try decoded(json), json) { error in
                XCTAssertTrue(error is DecodingError, "\(json): \(error)")
            }
        }
        XCTAssertEqual(try decoded(#""a\u0000b""#), .string("a\u{0}b"))
        XCTAssertEqual(try decoded(#""\ud83d\ude00""#), .string("😀"))
    }

    func testMalformedJSONFailsToDecode() {
        for json in ["[1,", #"{"a":}"#, "nul", #""a"#, "", "{'a':1}", "[1]]"] {
            XCTAssertThrowsError(try decoded(json), json) { error in
                XCTAssertTrue(error is DecodingError, "\(json): \(error)")
            }
        }
    }

    func testReadingTheWrongCaseGivesNil() {
        let value: JSONValue = ["list": [1, 2], "text": "x", "flag": true, "n": 1.5]
        XCTAssertNil(value[0])
        XCTAssertNil(value["list"]?["a"])
        XCTAssertNil(value["list"]?[-1])
        XCTAssertNil(value["list"]?[2])
        XCTAssertNil(value["text"]?.intValue)
        XCTAssertNil(value["n"]?.intValue)
        XCTAssertNil(value["flag"]?.doubleValue)
        XCTAssertNil(value["n"]?.stringValue)
        XCTAssertNil(value["text"]?.arrayValue)
        XCTAssertNil(value["list"]?.objectValue)
        XCTAssertEqual(value["missing"], nil)
        XCTAssertFalse(value["text"]?.isNull ?? true)
    }

    /// In a query, a number JSON writes with an exponent keeps its `+` as `%2B`: a bare `+` reads as a space.
    func testNumbersWrittenWithAnExponentKeepTheirPlusInAQuery() throws {
        let route = Route(
            "/s", baseURL: URL(string: "https://api.test")!,
            parameters: [
                "big": 1e300, "small": 1e-300, "float": Float(0.1), "zero": -0.0, "json": JSONValue.double(2e300),
            ] as JSONObject)
        XCTAssertEqual(
            try route.asURLRequest().url?.absoluteString,
            "https://api.test/s?big=1e%2B300&small=1e-300&float=0.1&zero=-0&json=2e%2B300")
    }
}
