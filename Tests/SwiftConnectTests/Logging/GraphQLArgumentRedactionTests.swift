import Foundation
import SwiftConnectTesting
import XCTest

@testable import SwiftConnect

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A GraphQL request written with its arguments inline (`login(email: "…", password: "…")`, an input object's
/// `{token: "…"}`) carries its secrets inside the `query` string, not under a JSON key: the string literal given to an
/// argument or field named like a secret is hidden in what is shown, and by value wherever it shows again.
final class GraphQLArgumentRedactionTests: XCTestCase {
    private let password = "gql-PASS-5550123"
    private var body: String {
        let query =
            #"mutation { login(email: \"amy@example.com\", password: \"\#(password)\") { token user { id } } "#
            + #"rotate(input: {refreshToken:\"gql-REFRESH-777\", label: \"phone\"}) { ok } }"#
        return #"{"query":"\#(query)","variables":{}}"#
    }

    func testAnInlineSecretArgumentIsHiddenInTheShownBody() {
        let shown = Redaction.bodyText(Data(body.utf8), contentType: "application/json", redacting: true, pretty: false)
        XCTAssertFalse(shown.contains(password), shown)
        XCTAssertFalse(shown.contains("gql-REFRESH-777"), shown)
        XCTAssertTrue(shown.contains(#"password: \"<redacted>\""#), shown)
        XCTAssertTrue(shown.contains(#"email: \"amy@example.com\""#), "other arguments are shown: \(shown)")
        XCTAssertTrue(shown.contains(#"label: \"phone\""#), shown)
        XCTAssertTrue(shown.contains("{ token user { id } }"), "a selection named like a secret is no value: \(shown)")
    }

    func testAnInlineSecretArgumentIsHiddenInCURLAndWhereTheServerEchoesIt() throws {
        var request = URLRequest(url: URL(string: "https://api.example.com/graphql")!)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(body.utf8)
        XCTAssertFalse(cURLCommand(for: request).contains(password))
        let secrets = SecretValues(of: request)
        XCTAssertEqual(secrets.hiding(in: "wrong password \(password)"), "wrong password <redacted>")
    }

    func testADocumentWithoutSecretArgumentsIsShownAsItCame() {
        let plain = #"{"query":"query { user(id: \"42\") { name token } }"}"#
        XCTAssertEqual(
            Redaction.bodyText(Data(plain.utf8), contentType: "application/json", redacting: true, pretty: false),
            plain)
    }
}
