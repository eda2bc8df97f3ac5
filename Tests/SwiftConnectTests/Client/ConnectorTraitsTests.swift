import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What `Connect` works out once per connector type (its name and whether it is an `AuthorizedConnector`) must
/// give each request the same answer as asking the value itself.
final class ConnectorTraitsTests: XCTestCase {
    struct Plain: Connector {
        var baseURL = URL(string: "https://api.example.com")!
        var endpoint = "/plain"
        var method: HTTPMethod = .get
        var headers: [HTTPHeader] = []
        var parameters: (any ParametersRepresentable)? { nil }
    }

    struct Authorized: Connector, AuthorizedConnector {
        var baseURL = URL(string: "https://api.example.com")!
        var endpoint = "/me"
        var method: HTTPMethod = .get
        var headers: [HTTPHeader] = []
        var parameters: (any ParametersRepresentable)? { nil }
        var authorizationToken: AuthorizationToken?
    }

    /// A class whose subclass, not itself, is an `AuthorizedConnector`: the request's dynamic type decides.
    class BaseEndpoint: Connector, @unchecked Sendable {
        var baseURL: URL { URL(string: "https://api.example.com")! }
        var endpoint: String { "/base" }
        var method: HTTPMethod { .get }
        var headers: [HTTPHeader] { [] }
        var parameters: (any ParametersRepresentable)? { nil }
    }

    final class SignedEndpoint: BaseEndpoint, AuthorizedConnector, @unchecked Sendable {
        var authorizationToken: AuthorizationToken? { .bearer(token: "signed") }
    }

    private func sentRequest(_ connector: any Connector, configuration: ServerConfiguration? = nil) throws
        -> URLRequest
    {
        let transport = FakeTransport.answering(.status(204))
        let connect = Connect(transport: transport, retryPolicy: nil, configuration: configuration)
        _ = try connect.request(connector).wait()
        return try XCTUnwrap(transport.requests.first)
    }

    func testEachRequestOfAnAuthorizedTypeCarriesItsOwnToken() throws {
        // Given: the same type, first with a token, then with another, then without
        let tokens: [AuthorizationToken?] = [.bearer(token: "first"), .bearer(token: "second"), nil]
        // When
        let sent = try tokens.map { try sentRequest(Authorized(authorizationToken: $0)) }
        // Then
        XCTAssertEqual(
            sent.map { $0.value(forHTTPHeaderField: "Authorization") }, ["Bearer first", "Bearer second", nil])
    }

    func testAPlainConnectorSentAfterAnAuthorizedOneGetsNoAuthorization() throws {
        _ = try sentRequest(Authorized(authorizationToken: .bearer(token: "secret")))
        let sent = try sentRequest(Plain())
        XCTAssertNil(sent.value(forHTTPHeaderField: "Authorization"))
    }

    func testTheDynamicTypeOfAClassConnectorDecides() throws {
        // Given: the base class first, so its traits are cached before the subclass's
        let base = try sentRequest(BaseEndpoint())
        let signed = try sentRequest(SignedEndpoint())
        let signedAsBase: BaseEndpoint = SignedEndpoint()
        let signedThroughBase = try sentRequest(signedAsBase)
        // Then
        XCTAssertNil(base.value(forHTTPHeaderField: "Authorization"))
        XCTAssertEqual(signed.value(forHTTPHeaderField: "Authorization"), "Bearer signed")
        XCTAssertEqual(signedThroughBase.value(forHTTPHeaderField: "Authorization"), "Bearer signed")
        XCTAssertEqual(try SignedEndpoint().asURLRequest().value(forHTTPHeaderField: "Authorization"), "Bearer signed")
        XCTAssertNil(try BaseEndpoint().asURLRequest().value(forHTTPHeaderField: "Authorization"))
        // `asURLRequest()` too, on a value whose declared type is the base class.
        XCTAssertEqual(try signedAsBase.asURLRequest().value(forHTTPHeaderField: "Authorization"), "Bearer signed")
    }

    func testARelativeAuthorizedConnectorKeepsItsTokenOnTheClientsServer() throws {
        // Given
        let connector = Authorized(baseURL: URL(string: "/")!, authorizationToken: .bearer(token: "relative"))
        // When
        let sent = try sentRequest(connector, configuration: ServerConfiguration(host: "server.example.com"))
        // Then
        XCTAssertEqual(sent.url?.absoluteString, "https://server.example.com/me")
        XCTAssertEqual(sent.value(forHTTPHeaderField: "Authorization"), "Bearer relative")
    }

    func testMiddlewaresSeeTheConnectorsTypeName() throws {
        // Given
        let names = Recorder<String>()
        let transport = FakeTransport.answering(.status(204))
        let connect = Connect(transport: transport, middlewares: [NameRecorder(names: names)], retryPolicy: nil)
        // When
        _ = try connect.request(Plain()).wait()
        _ = try connect.request(Authorized()).wait()
        _ = try connect.request(Plain()).wait()
        // Then
        XCTAssertEqual(names.values, ["Plain", "Authorized", "Plain"])
    }

    private struct NameRecorder: Middleware {
        let names: Recorder<String>

        func intercept(_ request: ConnectRequest, context: RequestContext, next: @escaping Next) -> Future<
            ConnectResponse
        > {
            names.append(context.connectorName)
            return next(request)
        }
    }
}
