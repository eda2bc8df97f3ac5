import Foundation
import XCTest

@testable import SwiftConnect

/// `HeaderParameters`: the `; name=value` parameters of a header value, read as browsers read them (RFC 9110 §5.6.6,
/// RFC 6266).
final class HeaderParametersTests: XCTestCase {
    /// A `"` inside an unquoted value opened a quoted string that ran to the next `"` or the end: every parameter
    /// after it was hidden (a multipart field's `name`, which redaction reads, or a `charset`).
    func testAStrayQuoteInAnUnquotedValueHidesNoLaterParameter() {
        let contentType = #"text/plain; charset=utf-8"; x=1"#
        XCTAssertEqual(HeaderParameters.value(of: "x", in: contentType), "1")
        XCTAssertEqual(HeaderParameters.value(of: "charset", in: contentType), #"utf-8""#)

        let disposition = #"attachment; filename=a"b.txt; size=3"#
        XCTAssertEqual(HeaderParameters.value(of: "filename", in: disposition), #"a"b.txt"#)
        XCTAssertEqual(HeaderParameters.value(of: "size", in: disposition), "3")

        // In the value itself, or in a name
        XCTAssertEqual(HeaderParameters.value(of: "name", in: #"form-data"; name=password"#), "password")
        XCTAssertEqual(HeaderParameters.value(of: "name", in: #"form-data; x"y=1; name=token"#), "token")
        // After a closed quoted string, a stray quote is text too
        XCTAssertEqual(HeaderParameters.value(of: "size", in: #"attachment; filename="a"b"; size=3"#), "3")
    }

    /// A quoted string that never closes ends at the next `;`, as `Cache-Control` directives are read.
    func testAnUnclosedQuotedValueEndsAtTheNextSemicolon() {
        let disposition = #"form-data; filename="a.txt; name=api_key"#
        XCTAssertEqual(HeaderParameters.value(of: "name", in: disposition), "api_key")
    }

    /// Quoted strings as before: `;`, `=` and escaped quotes inside separate nothing, blanks around `=` allowed.
    func testQuotedValuesKeepTheirSeparatorsAndEscapes() {
        let value = #"text/xml; profile = "a;b=\"c\"; d"; charset=utf-8"#
        XCTAssertEqual(HeaderParameters.value(of: "profile", in: value), #"a;b="c"; d"#)
        XCTAssertEqual(HeaderParameters.value(of: "charset", in: value), "utf-8")
        XCTAssertNil(HeaderParameters.value(of: "b", in: value))
        XCTAssertNil(HeaderParameters.value(of: "d", in: value))
        XCTAssertEqual(HeaderParameters.value(of: "filename", in: #"attachment; filename="a\\b.txt""#), #"a\b.txt"#)
        XCTAssertEqual(HeaderParameters.value(of: "name", in: #"form-data; name="""#), "")
    }

    /// ``MimeType`` folds parameter names to lower case with the same reading: a name after a stray quote too.
    func testAMediaTypeFoldsTheNamesAfterAStrayQuote() {
        let type = MimeType(rawValue: #"Text/Plain; Charset=utf-8"; X=1; Y="A;Z=B""#)
        XCTAssertEqual(type.rawValue, #"text/plain; charset=utf-8"; x=1; y="A;Z=B""#)
        XCTAssertEqual(type.parameter("x"), "1")
    }
}
