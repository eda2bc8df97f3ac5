@_spi(Observability) import SwiftConnect
import XCTest

/// The methods `http.request.method` names as themselves: the conventions' nine, an observer's own list, or
/// `OTEL_INSTRUMENTATION_HTTP_KNOWN_METHODS`, each a full replacement of the default.
final class OpenTelemetryMethodsTests: XCTestCase {
    private let purge = HTTPMethod(rawValue: "PURGE")

    func testTheConventionsNineMethodsCaseSensitivelyAndOthersAsOther() {
        let methods = OpenTelemetryMethods(known: nil, environment: [:])
        for method in ["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"] {
            XCTAssertEqual(methods.name(of: HTTPMethod(rawValue: method)), method)
        }
        XCTAssertEqual(methods.name(of: purge), "_OTHER")
        XCTAssertEqual(methods.name(of: HTTPMethod(rawValue: "Propfind")), "_OTHER")
        // A list compares case-sensitively: `purge` is not `PURGE`.
        XCTAssertEqual(OpenTelemetryMethods(known: ["purge"], environment: [:]).name(of: purge), "_OTHER")
    }

    func testTheEnvironmentsListReplacesTheDefault() {
        let environment = ["OTEL_INSTRUMENTATION_HTTP_KNOWN_METHODS": " GET, PURGE ,,QUERY"]
        let methods = OpenTelemetryMethods(known: nil, environment: environment)
        XCTAssertEqual(methods.name(of: purge), "PURGE")
        XCTAssertEqual(methods.name(of: HTTPMethod(rawValue: "QUERY")), "QUERY")
        XCTAssertEqual(methods.name(of: .get), "GET")
        XCTAssertEqual(methods.name(of: .post), "_OTHER", "a full override, not an addition")
    }

    func testAnEmptyVariableCountsAsUnset() {
        for value in ["", " , "] {
            let methods = OpenTelemetryMethods(
                known: nil, environment: ["OTEL_INSTRUMENTATION_HTTP_KNOWN_METHODS": value])
            XCTAssertEqual(methods.name(of: .post), "POST", value)
            XCTAssertEqual(methods.name(of: purge), "_OTHER", value)
        }
    }

    func testTheObserversOwnListWinsOverTheEnvironment() {
        let environment = ["OTEL_INSTRUMENTATION_HTTP_KNOWN_METHODS": "PURGE"]
        let methods = OpenTelemetryMethods(known: ["GET"], environment: environment)
        XCTAssertEqual(methods.name(of: .get), "GET")
        XCTAssertEqual(methods.name(of: purge), "_OTHER")
    }
}
