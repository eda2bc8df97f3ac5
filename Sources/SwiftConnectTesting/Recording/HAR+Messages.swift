import Foundation

extension HAR {
    /// A request as an archive holds it.
    public struct Request: Codable, Sendable, Equatable {
        /// The method (`GET`, `POST`…).
        public var method: String
        /// The absolute URL, query included, percent-encoded.
        public var url: String
        /// The protocol version (`HTTP/1.1`).
        public var httpVersion: String
        /// The cookies sent (``RecordingTransport`` leaves them in the `Cookie` header, redacted, and writes none).
        public var cookies: [Cookie]
        /// The header fields, in order.
        public var headers: [NameValue]
        /// The query items, percent-decoded, in order.
        public var queryString: [NameValue]
        /// The body, if there is one.
        public var postData: PostData?
        /// The size of the head in bytes: -1, not known at the transport.
        public var headersSize: Int
        /// The size of the body in bytes.
        public var bodySize: Int
        /// A comment for the reader.
        public var comment: String?

        /// A request; its cookies empty and its head's size unknown.
        ///
        /// - Parameters:
        ///   - method: The method.
        ///   - url: The absolute URL.
        ///   - headers: The header fields.
        ///   - queryString: The query items, decoded.
        ///   - postData: The body, if any.
        public init(method: String, url: String, headers: [NameValue], queryString: [NameValue], postData: PostData?) {
            self.method = method
            self.url = url
            self.httpVersion = "HTTP/1.1"
            self.cookies = []
            self.headers = headers
            self.queryString = queryString
            self.postData = postData
            self.headersSize = -1
            self.bodySize = postData?.byteCount ?? 0
        }

        /// Reads a request; only its method and URL are required.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            method = try container.decode(String.self, forKey: .method)
            url = try container.decode(String.self, forKey: .url)
            httpVersion = try container.value(.httpVersion, default: "HTTP/1.1")
            cookies = try container.value(.cookies, default: [])
            headers = try container.value(.headers, default: [])
            queryString = try container.value(.queryString, default: [])
            postData = try container.decodeIfPresent(PostData.self, forKey: .postData)
            headersSize = try container.value(.headersSize, default: -1)
            bodySize = try container.value(.bodySize, default: -1)
            comment = try container.decodeIfPresent(String.self, forKey: .comment)
        }
    }

    /// A request's body.
    public struct PostData: Codable, Sendable, Equatable {
        /// The body's media type (the request's `Content-Type`), or empty.
        public var mimeType: String
        /// The body as text; base64 when ``encoding`` says so.
        public var text: String?
        /// `base64` when ``text`` holds bytes that are not UTF-8 text (the custom field `_encoding`: HAR has none for a
        /// request body).
        public var encoding: String?
        /// A comment for the reader.
        public var comment: String?

        /// The body `data`: as text when it is UTF-8, else base64.
        ///
        /// - Parameters:
        ///   - data: The body.
        ///   - mimeType: Its media type.
        public init(_ data: Data, mimeType: String) {
            self.mimeType = mimeType
            let body = HAR.text(of: data)
            text = body.text
            encoding = body.encoding
        }

        enum CodingKeys: String, CodingKey {
            case mimeType, text, comment
            case encoding = "_encoding"
        }

        /// Reads a body; one a browser wrote as `params` only (a form) has no ``text``, and replays as empty.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            mimeType = try container.value(.mimeType, default: "")
            text = try container.decodeIfPresent(String.self, forKey: .text)
            encoding = try container.decodeIfPresent(String.self, forKey: .encoding)
            comment = try container.decodeIfPresent(String.self, forKey: .comment)
        }

        /// The body's bytes, `nil` when ``encoding`` says base64 and the text is not.
        public var data: Data? { HAR.data(text: text, encoding: encoding) }

        /// How many bytes the body has.
        var byteCount: Int { data?.count ?? 0 }
    }

    /// A response as an archive holds it.
    public struct Response: Codable, Sendable, Equatable {
        /// The status code; 0 for an exchange that got no response.
        public var status: Int
        /// The reason phrase (`OK`), or empty.
        public var statusText: String
        /// The protocol version (`HTTP/1.1`).
        public var httpVersion: String
        /// The cookies the response sets, values replaced by placeholders.
        public var cookies: [Cookie]
        /// The header fields, in order.
        public var headers: [NameValue]
        /// The body.
        public var content: Content
        /// The `Location` of a redirect, or empty.
        public var redirectURL: String
        /// The size of the head in bytes: -1, not known at the transport.
        public var headersSize: Int
        /// The size of the body in bytes, as delivered.
        public var bodySize: Int
        /// The URL that answered, when redirects led away from the request's (the custom field `_url`).
        public var url: String?
        /// A comment for the reader.
        public var comment: String?
        /// Whether ``content`` is only the start of the body (the custom field `_bodyCut`): the first MiB of the
        /// error page of a download, the rest left unread, as every transport keeps it
        /// (`TransferOptions.downloadErrorBodyLimit`). A replay says so again, as the live call did.
        var bodyCut: Bool?

        /// A response.
        ///
        /// - Parameters:
        ///   - status: The status code (0 for none).
        ///   - headers: The header fields.
        ///   - content: The body.
        public init(status: Int, headers: [NameValue], content: Content) {
            self.status = status
            self.statusText = status == 0 ? "" : HTTPURLResponseReason.phrase(for: status)
            self.httpVersion = "HTTP/1.1"
            self.cookies = []
            self.headers = headers
            self.content = content
            self.redirectURL = headers.first { $0.name.lowercased() == "location" }?.value ?? ""
            self.headersSize = -1
            self.bodySize = content.size
        }

        enum CodingKeys: String, CodingKey {
            case status, statusText, httpVersion, cookies, headers, content, redirectURL, headersSize, bodySize, comment
            case url = "_url"
            case bodyCut = "_bodyCut"
        }

        /// Reads a response; only its status is required.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            status = try container.decode(Int.self, forKey: .status)
            statusText = try container.value(.statusText, default: "")
            httpVersion = try container.value(.httpVersion, default: "HTTP/1.1")
            cookies = try container.value(.cookies, default: [])
            headers = try container.value(.headers, default: [])
            content = try container.value(.content, default: Content(Data(), mimeType: ""))
            redirectURL = try container.value(.redirectURL, default: "")
            headersSize = try container.value(.headersSize, default: -1)
            bodySize = try container.value(.bodySize, default: -1)
            url = try container.decodeIfPresent(String.self, forKey: .url)
            comment = try container.decodeIfPresent(String.self, forKey: .comment)
            bodyCut = try container.decodeIfPresent(Bool.self, forKey: .bodyCut)
        }
    }

    /// A response's body.
    public struct Content: Codable, Sendable, Equatable {
        /// The body's length in bytes.
        public var size: Int
        /// Bytes saved by compression, if known.
        public var compression: Int?
        /// The body's media type (the response's `Content-Type`), or empty.
        public var mimeType: String
        /// The body as text; base64 when ``encoding`` is `base64`. Absent when a browser did not keep the body.
        public var text: String?
        /// `base64` for a body that is not UTF-8 text.
        public var encoding: String?
        /// A comment for the reader.
        public var comment: String?

        /// The body `data`: as text when it is UTF-8, else base64.
        ///
        /// - Parameters:
        ///   - data: The body.
        ///   - mimeType: Its media type.
        public init(_ data: Data, mimeType: String) {
            size = data.count
            self.mimeType = mimeType
            let body = HAR.text(of: data)
            text = body.text
            encoding = body.encoding
        }

        /// Reads a body; one without text (a browser that kept none) replays as empty.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            size = try container.value(.size, default: 0)
            compression = try container.decodeIfPresent(Int.self, forKey: .compression)
            mimeType = try container.value(.mimeType, default: "")
            text = try container.decodeIfPresent(String.self, forKey: .text)
            encoding = try container.decodeIfPresent(String.self, forKey: .encoding)
            comment = try container.decodeIfPresent(String.self, forKey: .comment)
        }

        /// The body's bytes, `nil` when ``encoding`` says base64 and the text is not.
        public var data: Data? { HAR.data(text: text, encoding: encoding) }
    }
}

// MARK: - Bodies as text

extension HAR {
    /// `data` as HAR text: itself when it is UTF-8 (the empty body too), else base64 with the encoding `base64`.
    static func text(of data: Data) -> (text: String?, encoding: String?) {
        if data.isEmpty { return (nil, nil) }
        if let text = String(data: data, encoding: .utf8), Data(text.utf8) == data { return (text, nil) }
        return (data.base64EncodedString(), "base64")
    }

    /// Why a body whose bytes cannot be read (``data(text:encoding:)`` is `nil`) cannot be, for a message: an encoding
    /// other than base64 (a file edited by hand, another program's), named, or text that is not base64.
    static func unreadableBody(encoding: String?) -> String {
        if let encoding, encoding.lowercased() != "base64" {
            return "a body in the encoding \"\(encoding)\", which a replay cannot read (it reads base64)"
        }
        return "a body marked base64 that is not valid base64"
    }

    /// The bytes of HAR text: base64-decoded when `encoding` says so; empty for no text.
    static func data(text: String?, encoding: String?) -> Data? {
        guard let text else { return Data() }
        guard let encoding, !encoding.isEmpty else { return Data(text.utf8) }
        guard encoding.lowercased() == "base64" else { return nil }
        return Data(base64Encoded: text, options: .ignoreUnknownCharacters)
    }
}

/// Reason phrases for a response's `statusText`.
enum HTTPURLResponseReason {
    /// The reason phrase of RFC 9110 for `status`, or empty for one it does not name.
    static func phrase(for status: Int) -> String {
        phrases[status] ?? ""
    }

    private static let phrases: [Int: String] = [
        100: "Continue", 101: "Switching Protocols", 200: "OK", 201: "Created", 202: "Accepted",
        204: "No Content", 206: "Partial Content", 301: "Moved Permanently", 302: "Found", 303: "See Other",
        304: "Not Modified", 307: "Temporary Redirect", 308: "Permanent Redirect", 400: "Bad Request",
        401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed", 408: "Request Timeout",
        409: "Conflict", 410: "Gone", 412: "Precondition Failed", 413: "Content Too Large",
        415: "Unsupported Media Type",
        422: "Unprocessable Content", 429: "Too Many Requests", 500: "Internal Server Error", 501: "Not Implemented",
        502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout",
    ]
}
