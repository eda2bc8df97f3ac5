import Foundation
import XCTest

@testable import SwiftConnect

/// `JSONSyntax.representable(_:)`: the values `JSONSerialization` refuses though JSON allows them, replaced, and
/// nothing else.
final class JSONSyntaxRepresentableTests: XCTestCase {
    private func representable(_ text: String) -> String? {
        JSONSyntax.representable(Data(text.utf8)).map { String(decoding: $0, as: UTF8.self) }
    }

    func testANumberBeyondDoubleBecomesNullAndALoneSurrogateUFFFD() {
        XCTAssertEqual(representable(#"{"n":1e400,"m":[-1E+400,2]}"#), #"{"n":null,"m":[null,2]}"#)
        XCTAssertEqual(representable(#"["\ud800","\udc00x","\ud800\u0041"]"#), #"["\ufffd","\ufffdx","\ufffd\u0041"]"#)
        XCTAssertEqual(representable(#"{"\udbff":1}"#), #"{"\ufffd":1}"#)
    }

    /// Text Foundation reads as it is has nothing to replace: a number in range (a tiny one reads as 0), a pair.
    func testNothingElseIsReplaced() {
        for text in [
            #"{"n":1.5e308,"t":1e-400,"i":123456789012345678901234567890,"s":"\ud83d\ude00","e":"\\ud800"}"#,
            #"{"s":"1e400 -1e400","k":"\"\ud83d\ude00\""}"#,
            #"[true,false,null,-0,0.5e-3]"#,
        ] {
            XCTAssertNil(representable(text), text)
            XCTAssertNotNil(JSONSyntax.value(of: Data(text.utf8)), text)
        }
    }

    /// What is not a number by JSON's grammar, or not a whole escape, is left for the parser to refuse.
    func testTextThatIsNotJSONIsNotMadeJSON() {
        for text in [
            #"{"n":01e400}"#, #"{"n":1.e400}"#, #"{"n":1e}"#, #"{"n":+1e400}"#, #"{"s":"\ud80"}"#, #"{"s":"\ud800"#,
            #"{"s":"\"#, "1e400 2", #"{"n":1e400"#,
        ] {
            XCTAssertNil(JSONSyntax.value(of: Data(text.utf8)), text)
        }
    }
}
