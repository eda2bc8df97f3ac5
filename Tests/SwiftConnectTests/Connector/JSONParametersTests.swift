import Foundation
import SwiftConnect
import SwiftConnectTesting
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `[String: Any]`-style parameters (``JSONObject``) and untyped answers (``JSONValue``), as migrating apps write
/// them.
final class JSONParametersTests: XCTestCase {
    private struct User: Codable, Sendable, Equatable {
        var name: String
        var age: Int
    }

    private func sent(
        _ route: Route, file: StaticString = #filePath, line: UInt = #line
    ) throws -> URLRequest {
        let transport = FakeTransport.answering(.status(204))
        let api = Connect(host: "api.test", transport: transport)
        _ = value(of: api.request(route), file: file, line: line)
        return try XCTUnwrap(transport.requests.first, file: file, line: line)
    }

    private func refusal(_ route: Route) -> ConnectError? {
        let transport = FakeTransport.answering(.status(204))
        let error = connectError(of: Connect(host: "api.test", transport: transport).request(route))
        XCTAssertTrue(transport.requests.isEmpty, "nothing is sent")
        return error
    }

    // MARK: Literals

    /// Variables, optionals, literals, arrays and models in one literal, where the seed passed `[String: Any]`; the
    /// result crosses into a `@Sendable` closure (the compiler checks it).
    func testALiteralWithVariablesAndModelsIsASendableValue() async throws {
        let name = "ada"
        let count = 2
        let nickname: String? = nil
        let user = User(name: "bob", age: 7)
        let parameters: JSONObject = [
            "username": name, "count": count, "nickname": nickname, "ratio": 2.5, "admin": false,
            "tags": ["a", "b"], "user": user, "meta": ["source": "ios", "build": 42] as JSONObject,
        ]
        let keys = await Task { @Sendable in parameters.keys }.value
        XCTAssertEqual(keys, ["username", "count", "nickname", "ratio", "admin", "tags", "user", "meta"])
        XCTAssertEqual(
            try parameters.jsonValue(),
            [
                "username": "ada", "count": 2, "nickname": nil, "ratio": 2.5, "admin": false, "tags": ["a", "b"],
                "user": ["name": "bob", "age": 7], "meta": ["source": "ios", "build": 42],
            ])
    }

    // MARK: Placement by method

    func testGETHEADAndDELETEPutTheValuesInTheQueryInOrder() throws {
        let query = "ids=1&ids=2&q=caf%C3%A9%20%26%20co&on=true&ratio=0.5"
        for method in [HTTPMethod.get, .head, .delete] {
            let request = try sent(
                Route(
                    "/search?v=1", method: method,
                    parameters: ["ids": [1, 2], "q": "café & co", "none": nil, "on": true, "ratio": 0.5]))
            XCTAssertEqual(request.url?.absoluteString, "https://api.test/search?v=1&" + query, "\(method)")
            XCTAssertNil(request.httpBody, "\(method)")
        }
    }

    func testOtherMethodsSendAJSONBodyInTheOrderWritten() throws {
        let name = "ada"
        for method in [HTTPMethod.post, .put, .patch] {
            let request = try sent(
                Route("/login", method: method, parameters: ["username": name, "remember": true, "code": nil]))
            XCTAssertEqual(request.url?.absoluteString, "https://api.test/login")
            XCTAssertEqual(request.value(forHTTPHeaderField: "Content-Type"), "application/json")
            XCTAssertEqual(
                request.httpBody.map { String(decoding: $0, as: UTF8.self) },
                #"{"username":"ada","remember":true,"code":null}"#, "\(method)")
        }
    }

    /// Setting `nil` through the subscript removes the key, as it does from the `[String: Any]` the object replaces:
    /// a PATCH built member by member leaves out an optional the user has not got instead of sending `null` (which a
    /// server reads as "clear it"); `JSONValue.null` sends `null`, and a literal's `nil` still does.
    func testSettingNilRemovesTheKeyAndJSONValueNullSendsNull() throws {
        // Given
        let nickname: String? = nil
        var changes: JSONObject = ["name": "Ada", "bio": "x", "age": 36]
        changes["nickname"] = nickname
        changes["bio"] = nil as String?
        changes["avatar"] = JSONValue.null
        changes["age"] = 37

        // When
        let patch = try sent(Route("/me", method: .patch, parameters: changes))
        let query = try sent(Route("/search", method: .get, parameters: changes))

        // Then
        XCTAssertEqual(changes.keys, ["name", "age", "avatar"])
        XCTAssertEqual(
            patch.httpBody.map { String(decoding: $0, as: UTF8.self) }, #"{"name":"Ada","age":37,"avatar":null}"#)
        XCTAssertEqual(query.url?.absoluteString, "https://api.test/search?name=Ada&age=37")
        // A key given twice in a literal, one of them removed, is a key given once.
        var twice: JSONObject = ["a": 1, "a": 2]
        twice["a"] = nil
        XCTAssertEqual(
            try sent(Route("/p", method: .post, parameters: twice)).httpBody.map {
                String(decoding: $0, as: UTF8.self)
            },
            #"{"a":2}"#)
    }

    /// The route's mime type decides between JSON and a form, as Remotli's `mimeType` did.
    func testAFormContentTypeSendsFormFields() throws {
        let request = try sent(
            Route(
                "/token", method: .post, parameters: ["grant_type": "password", "scope": ["a b", "c"], "n": 3],
                headers: ["Content-Type": "application/x-www-form-urlencoded; charset=utf-8"]))
        XCTAssertEqual(
            request.httpBody.map { String(decoding: $0, as: UTF8.self) }, "grant_type=password&scope=a+b&scope=c&n=3")
        XCTAssertEqual(
            request.value(forHTTPHeaderField: "Content-Type"), "application/x-www-form-urlencoded; charset=utf-8")
    }

    /// A model or a date in the query is written as the connector's encoder writes it.
    func testEncodableValuesInTheQueryUseTheConnectorsEncoder() throws {
        struct Dated: Connector {
            var baseURL: URL { URL(string: "https://api.test")! }
            var endpoint: String { "/events" }
            var method: HTTPMethod { .get }
            var headers: [HTTPHeader] { [] }
            var parameters: (any ParametersRepresentable)? {
                ["since": Date(timeIntervalSince1970: 0), "limit": UInt8(5)] as JSONObject
            }
            var jsonEncoder: JSONEncoder {
                let encoder = JSONEncoder()
                encoder.dateEncodingStrategy = .iso8601
                return encoder
            }
        }
        let request = try Dated().asURLRequest()
        XCTAssertEqual(request.url?.absoluteString, "https://api.test/events?since=1970-01-01T00%3A00%3A00Z&limit=5")
    }

    /// A `Content-Type` the options set replaces the connector's: the body is placed by it, so the request is what
    /// it says it is.
    func testTheOptionsContentTypePlacesTheBody() throws {
        let form = HTTPHeader(name: "Content-Type", value: "application/x-www-form-urlencoded")
        let json = HTTPHeader(name: "Content-Type", value: "application/json")
        let transport = FakeTransport.answering(.status(204))
        let api = Connect(host: "api.test", transport: transport)
        // The connector's options say form; the connector itself says nothing
        _ = value(
            of: api.request(
                Route("/login", method: .post, parameters: ["user": "ada"], options: RequestOptions(headers: [form]))))
        // The connector says form; the call's options say JSON
        _ = value(
            of: api.request(
                Route("/login", method: .post, parameters: ["user": "ada"], headers: [form.name: form.value]),
                options: RequestOptions(headers: [json])))
        let sent = transport.requests.map {
            ($0.value(forHTTPHeaderField: "Content-Type"), $0.httpBody.map { String(decoding: $0, as: UTF8.self) })
        }
        XCTAssertEqual(sent.count, 2)
        XCTAssertEqual(sent.first?.0, form.value)
        XCTAssertEqual(sent.first?.1, "user=ada")
        XCTAssertEqual(sent.last?.0, json.value)
        XCTAssertEqual(sent.last?.1, #"{"user":"ada"}"#)
    }

    /// Numbers a `Double` cannot hold exactly keep every digit in a query and a form.
    func testLargeIntegersAndDecimalsKeepEveryDigit() throws {
        // Given: a custom type that encodes as one number, beside the standard ones
        struct AccountID: Encodable, Sendable {
            let raw: UInt64
            func encode(to encoder: any Encoder) throws {
                var container = encoder.singleValueContainer()
                try container.encode(raw)
            }
        }
        let amount = try XCTUnwrap(Decimal(string: "12345678901234567.89"))
        let parameters: JSONObject = [
            "id": UInt64.max, "big": Int64(5_000_000_000), "amount": amount, "ids": [UInt64.max, 7],
            "account": AccountID(raw: 18_446_744_073_709_551_614), "ratio": 0.5,
        ]
        let expected =
            "id=18446744073709551615&big=5000000000&amount=12345678901234567.89&ids=18446744073709551615&ids=7"
            + "&account=18446744073709551614&ratio=0.5"
        // When
        let query = try sent(Route("/items", parameters: parameters))
        let form = try sent(
            Route(
                "/items", method: .post, parameters: parameters,
                headers: ["Content-Type": "application/x-www-form-urlencoded"]))
        // Then
        XCTAssertEqual(query.url?.query, expected)
        XCTAssertEqual(form.httpBody.map { String(decoding: $0, as: UTF8.self) }, expected)
    }

    /// An array the encoder writes itself (a `Set`, optionals) keeps every digit of its numbers too: read back as a
    /// `Double`, `UInt64.max` went out as `1.8446744073709552e+19`.
    func testLargeNumbersInSetsAndOptionalArraysKeepEveryDigit() throws {
        let decimal = try XCTUnwrap(Decimal(string: "12345678901234567890.5"))
        let parameters: JSONObject = [
            "set": Set([UInt64.max]), "optional": [UInt64.max, nil, 7] as [UInt64?],
            "decimals": [decimal, nil] as [Decimal?], "mixed": [JSONValue.string("a,b]"), .int(2), .bool(true)],
        ]
        let expected =
            "set=18446744073709551615&optional=18446744073709551615&optional=7&decimals=12345678901234567890.5"
            + "&mixed=a%2Cb%5D&mixed=2&mixed=true"

        let query = try sent(Route("/items", parameters: parameters))
        let form = try sent(
            Route(
                "/items", method: .post, parameters: parameters,
                headers: ["Content-Type": "application/x-www-form-urlencoded"]))

        XCTAssertEqual(query.url?.query, expected)
        XCTAssertEqual(form.httpBody.map { String(decoding: $0, as: UTF8.self) }, expected)
        XCTAssertNotNil(refusal(Route("/items", parameters: ["nested": [[1], [2]] as [[Int]?]])))
    }

    // MARK: Refusals

    func testValuesAQueryOrFormCannotCarryAreRefusedNotDropped() {
        let user = User(name: "bob", age: 7)
        let cases: [(Route, String)] = [
            (Route("/a", parameters: ["user": user]), "user"),
            (Route("/a", method: .delete, parameters: ["grid": [[1, 2], [3]]]), "grid"),
            (
                Route(
                    "/a", method: .post, parameters: ["filter": ["a": 1] as JSONObject],
                    headers: ["content-type": "application/x-www-form-urlencoded"]), "filter"
            ),
        ]
        for (route, key) in cases {
            let error = refusal(route)
            XCTAssertEqual(error?.kind, .invalidRequest)
            guard case .invalidParameter(key, let reason)? = error?.invalidRequestReason else {
                XCTFail("\(String(describing: error?.invalidRequestReason))")
                continue
            }
            XCTAssertTrue(reason.contains("cannot carry"), reason)
        }
    }

    func testAKeyWrittenTwiceIsRefused() {
        let error = refusal(Route("/a", method: .post, parameters: JSONObject([("id", 1), ("id", 2)])))
        XCTAssertEqual(
            error?.invalidRequestReason, .invalidParameter(key: "id", reason: "the key is given more than once"))
    }

    /// Removing one repeated key leaves another repeated key refused: the object forgot every repetition but its
    /// first, and a POST sent `{"role":"user","draft":false,"role":"admin"}`, which servers read either way.
    func testRemovingOneRepeatedKeyStillRefusesAnother() {
        var object = JSONObject([("draft", true), ("role", "user"), ("draft", false), ("role", "admin")])
        object["draft"] = nil
        let error = refusal(Route("/a", method: .post, parameters: object))
        XCTAssertEqual(
            error?.invalidRequestReason, .invalidParameter(key: "role", reason: "the key is given more than once"))
        object["role"] = nil
        let base = URL(string: "https://api.test")!
        let body = try? Route("/a", baseURL: base, method: .post, parameters: object).asURLRequest().httpBody
        XCTAssertEqual(
            body.flatMap { $0 }.map { String(decoding: $0, as: UTF8.self) }, #"{"draft":false,"role":"admin"}"#)
    }

    func testAValueTheEncoderRefusesFailsTheRequest() {
        let error = refusal(Route("/a", parameters: ["x": Double.nan]))
        guard case .invalidParameter("x", let reason)? = error?.invalidRequestReason else {
            return XCTFail("\(String(describing: error?.invalidRequestReason))")
        }
        XCTAssertTrue(reason.contains("could not be encoded"), reason)
        XCTAssertEqual(refusal(Route("/a", method: .post, parameters: ["x": Double.nan]))?.kind, .invalidRequest)
    }

    /// `nan` or `inf` in a query or a form is a word, not a number a server reads: a number that is not finite is
    /// refused as the encoder refuses `Double.nan`, whatever carries it (a `JSONValue`, a `Decimal`).
    func testANumberThatIsNotFiniteIsRefusedInAQueryOrAForm() {
        let form = ["content-type": "application/x-www-form-urlencoded"]
        let routes = [
            Route("/a", parameters: ["x": JSONValue.double(.nan)]),
            Route("/a", parameters: ["x": JSONValue.double(-.infinity)]),
            Route("/a", method: .delete, parameters: ["x": JSONValue.array([.int(1), .double(.infinity)])]),
            Route("/a", parameters: ["x": Decimal.nan]),
            Route("/a", parameters: ["x": [Decimal(1), Decimal.nan]]),
            Route("/a", method: .post, parameters: ["x": JSONValue.double(.nan)], headers: form),
            Route("/a", method: .post, parameters: ["x": Decimal.nan], headers: form),
        ]
        for route in routes {
            let error = refusal(route)
            XCTAssertEqual(error?.kind, .invalidRequest)
            guard case .invalidParameter("x", let reason)? = error?.invalidRequestReason else {
                XCTFail("\(String(describing: error?.invalidRequestReason))")
                continue
            }
            XCTAssertTrue(reason.contains("not a finite number"), reason)
        }
        // Finite ones are still written.
        XCTAssertEqual(
            try sent(Route("/a", parameters: ["x": JSONValue.double(2.5), "y": Decimal(string: "0.1")])).url?.query,
            "x=2.5&y=0.1")
    }

    /// A `Decimal.nan` is written by FoundationEssentials' `JSONEncoder` as a bare `NaN`, which is not JSON: the
    /// request fails instead of sending a body no server can parse. A string that says `NaN` is still sent.
    func testADecimalNaNInAJSONBodyIsRefusedNotSentAsInvalidJSON() throws {
        struct Price: Encodable, Sendable {
            var amount: Decimal
            var password = "hunter2"
        }
        let inObject = refusal(Route("/a", method: .post, parameters: ["amount": Decimal.nan]))
        guard case .invalidParameter("amount", let reason)? = inObject?.invalidRequestReason else {
            return XCTFail("\(String(describing: inObject?.invalidRequestReason))")
        }
        XCTAssertTrue(reason.contains("could not be encoded"), reason)

        for parameter in [Parameter.jsonObject(Price(amount: .nan)), .jsonObject([Decimal(1), .nan])] {
            let error = refusal(Route("/a", method: .post, parameters: parameter))
            XCTAssertEqual(error?.kind, .invalidRequest)
            guard case .bodyEncodingFailed? = error?.invalidRequestReason else {
                XCTFail("\(String(describing: error?.invalidRequestReason))")
                continue
            }
            XCTAssertFalse(String(describing: error).contains("hunter2"), "the body's values are not printed")
        }

        let text = try sent(Route("/a", method: .post, parameters: ["note": "NaN", "amount": Decimal(1)]))
        XCTAssertEqual(text.httpBody.map { String(decoding: $0, as: UTF8.self) }, #"{"note":"NaN","amount":1}"#)
        let model = try sent(Route("/a", method: .post, parameters: Parameter.jsonObject(["NaN": "NaN"])))
        XCTAssertEqual(model.httpBody.map { String(decoding: $0, as: UTF8.self) }, #"{"NaN":"NaN"}"#)
    }

    // MARK: Quick calls and header dictionaries

    func testQuickCallsTakeParametersAndHeadersByKey() throws {
        let transport = FakeTransport.answering(.status(204))
        let api = Connect(host: "api.test", transport: transport)
        let password = "s3cret"
        _ = value(of: api.request("/login", method: .post, parameters: ["user": "ada", "password": password]))
        _ = value(of: api.request("/me", headers: ["X-Client": "ios", "Accept-Language": "fr"]))
        _ = value(of: Connect(host: "api.test", transport: transport).request(Route("/x", headers: ["X-A": "1"])))
        let requests = transport.requests
        XCTAssertEqual(requests.count, 3)
        XCTAssertEqual(
            requests.first?.httpBody.map { String(decoding: $0, as: UTF8.self) },
            #"{"user":"ada","password":"s3cret"}"#)
        XCTAssertEqual(requests.dropFirst().first?.value(forHTTPHeaderField: "X-Client"), "ios")
        XCTAssertEqual(requests.dropFirst().first?.value(forHTTPHeaderField: "Accept-Language"), "fr")
        XCTAssertEqual(requests.last?.value(forHTTPHeaderField: "X-A"), "1")
    }

    /// JSON data keeps its keys under a connector's `keyEncodingStrategy`, as a `[String: …]` dictionary does: the
    /// strategy renames the keys of types (a model inside the object), not those of an answer sent back.
    func testAKeyEncodingStrategyRenamesModelsNotJSONKeys() throws {
        struct Snake: Connector {
            var parameters: (any ParametersRepresentable)?
            var baseURL: URL { URL(string: "https://api.test")! }
            var endpoint: String { "/x" }
            var method: HTTPMethod { .post }
            var jsonEncoder: JSONEncoder {
                let encoder = JSONEncoder()
                encoder.keyEncodingStrategy = .convertToSnakeCase
                encoder.outputFormatting = .sortedKeys
                return encoder
            }
        }
        struct Profile: Encodable, Sendable {
            let displayName: String
        }
        let answer = try JSONDecoder().decode(JSONValue.self, from: Data(#"{"userID":7,"displayName":"Ada"}"#.utf8))
        func body(_ parameters: any ParametersRepresentable) throws -> String {
            String(decoding: try XCTUnwrap(Snake(parameters: parameters).asURLRequest().httpBody), as: UTF8.self)
        }

        XCTAssertEqual(try body(Parameter.jsonObject(value: answer)), #"{"displayName":"Ada","userID":7}"#)
        XCTAssertEqual(
            try body(Parameter.jsonObject(value: ["userName": "a", "answer": answer] as JSONObject)),
            #"{"answer":{"displayName":"Ada","userID":7},"userName":"a"}"#)
        XCTAssertEqual(
            try body(["innerValue": answer, "profile": Profile(displayName: "b")] as JSONObject),
            #"{"innerValue":{"displayName":"Ada","userID":7},"profile":{"display_name":"b"}}"#)
    }

    /// A `JSONObject` encoded by an encoder of its own refuses a key given twice, as a request does.
    func testAnObjectWithAKeyGivenTwiceDoesNotEncode() {
        let twice = JSONObject([(key: "a", value: 1), (key: "a", value: 2)])
        XCTAssertThrowsError(try JSONEncoder().encode(twice)) { error in
            guard case EncodingError.invalidValue(_, let context) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(context.debugDescription.contains("\"a\""), context.debugDescription)
        }
    }

    /// Wrapped in `.jsonObject`, the object is a JSON body whatever the method would have chosen.
    func testWrappedInJSONObjectItIsABodyForAnyMethod() throws {
        let request = try sent(
            Route("/a", method: .put, parameters: Parameter.jsonObject(value: ["k": 1] as JSONObject)))
        XCTAssertEqual(request.httpBody.map { String(decoding: $0, as: UTF8.self) }, #"{"k":1}"#)
    }

    /// Wrapped in `.jsonObject` (alone, or beside path values and query items in a `CompositeParameters`), the object
    /// keeps the order it was written in, and so does an object nested in it, as a route's own object does: they were
    /// encoded as dictionaries, in an order that changed from one run to the next.
    func testAWrappedObjectAndANestedOneKeepTheOrderWritten() throws {
        let user: JSONObject = ["name": "Ada", "role": "admin", "age": 36, "city": "London", "zip": nil]
        let object: JSONObject = [
            "zeta": 1, "alpha": 2, "mid": 3, "beta": 4, "user": user, "omega": [5, 6], "gamma": true, "delta": "d",
        ]
        let expected =
            #"{"zeta":1,"alpha":2,"mid":3,"beta":4,"user":{"name":"Ada","role":"admin","age":36,"city":"London","#
            + #""zip":null},"omega":[5,6],"gamma":true,"delta":"d"}"#
        let routes = [
            Route("/items", method: .post, parameters: Parameter.jsonObject(value: object)),
            Route(
                "/items/{id}", method: .post,
                parameters: CompositeParameters(
                    .path(key: "id", value: "7"), .query(key: "v", value: "2"), .jsonObject(object))),
            Route("/items", method: .post, parameters: object),
        ]
        for route in routes {
            let request = try sent(route)
            XCTAssertEqual(request.httpBody.map { String(decoding: $0, as: UTF8.self) }, expected, route.endpoint)
        }
    }

    /// Objects in an array member (a list of line items) keep the order they were written in too.
    func testObjectsInAnArrayKeepTheOrderWritten() throws {
        let items: [JSONObject] = [["sku": "a", "qty": 1, "note": nil], ["sku": "b", "qty": 2, "gift": true]]
        let request = try sent(Route("/orders", method: .post, parameters: ["zone": "eu", "items": items, "id": 7]))
        XCTAssertEqual(
            request.httpBody.map { String(decoding: $0, as: UTF8.self) },
            #"{"zone":"eu","items":[{"sku":"a","qty":1,"note":null},{"sku":"b","qty":2,"gift":true}],"id":7}"#)
    }

    /// Wrapped, an object with a key given twice or a value the encoder refuses still fails the request as a body that
    /// could not be encoded, nothing sent.
    func testAWrappedObjectThatCannotBeEncodedFailsTheRequest() {
        let objects = [
            JSONObject([(key: "a", value: 1), (key: "a", value: 2)]),
            ["a": ["b": Double.nan] as JSONObject] as JSONObject,
        ]
        for object in objects {
            let error = refusal(Route("/a", method: .post, parameters: Parameter.jsonObject(value: object)))
            guard case .bodyEncodingFailed? = error?.invalidRequestReason else {
                XCTFail("\(String(describing: error))")
                continue
            }
        }
    }

    // MARK: Untyped answers

    func testAnAnswerDecodesIntoJSONValueAndReadsByKeyAndIndex() throws {
        let body = #"{"app":{"title":"Demo","ratio":1.5,"beta":true,"none":null},"servers":[{"port":8080}],"big":1e3}"#
        let transport = FakeTransport.answering(.json(string: body))
        let api = Connect(host: "api.test", transport: transport)
        let answer = try XCTUnwrap(value(of: api.request("/config").decoded(toType: JSONValue.self)))
        XCTAssertEqual(answer["app"]?["title"]?.stringValue, "Demo")
        XCTAssertEqual(answer["app"]?["ratio"]?.doubleValue, 1.5)
        XCTAssertEqual(answer["app"]?["beta"]?.boolValue, true)
        XCTAssertEqual(answer["app"]?["none"]?.isNull, true)
        XCTAssertEqual(answer["servers"]?[0]?["port"]?.intValue, 8080)
        XCTAssertEqual(answer["big"]?.intValue, 1000)
        XCTAssertNil(answer["servers"]?[1])
        XCTAssertNil(answer["app"]?[0])
        XCTAssertEqual(answer["app"]?["ratio"]?.intValue, nil, "1.5 is not an integer")
    }

    /// A value of the right kind that cannot be read says why (out of range, not UTF-8), not that it is of another
    /// kind.
    func testJSONValueSaysWhyAValueCannotBeRead() {
        for (json, expected) in [("1e400", "number"), ("[1, 1e400]", "number")] {
            XCTAssertThrowsError(try JSONDecoder().decode(JSONValue.self, from: Data(json.utf8))) { error in
                guard case DecodingError.dataCorrupted(let context) = error else {
                    return XCTFail("\(json): \(error)")
                }
                XCTAssertFalse(context.debugDescription.contains("Dictionary"), "\(json): \(context.debugDescription)")
                XCTAssertTrue(
                    context.debugDescription.lowercased().contains(expected), "\(json): \(context.debugDescription)")
            }
        }
    }

    func testJSONValueRoundTripsAndDecodesIntoAModel() throws {
        let value: JSONValue = ["b": [1, 2.5, "x", nil, true], "a": ["name": "bob", "age": 7]]
        let data = try JSONEncoder().encode(value)
        XCTAssertEqual(try JSONDecoder().decode(JSONValue.self, from: data), value)
        XCTAssertEqual(try value["a"]?.decoded(as: User.self), User(name: "bob", age: 7))
        XCTAssertEqual(value.description, #"{"a":{"age":7,"name":"bob"},"b":[1,2.5,"x",null,true]}"#)
    }
}
