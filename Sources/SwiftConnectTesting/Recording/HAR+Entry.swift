import Foundation

extension HAR {
    /// One exchange: the request, what answered it (a response, or a failure in `_failure`) and how long it took.
    public struct Entry: Codable, Sendable, Equatable {
        /// When the request started, in ISO 8601 with milliseconds.
        public var startedDateTime: String
        /// How long the exchange took, in milliseconds: the sum of the non-negative ``timings``.
        public var time: Double
        /// The request.
        public var request: Request
        /// The response; for a failure, an empty one with status 0, as browsers write a request that got none.
        public var response: Response
        /// What a cache did for the exchange: always empty here (HAR requires the field).
        public var cache: Cache
        /// How long each phase took.
        public var timings: Timings
        /// Why no response arrived (`_failure`), for an exchange that failed: replayed as the same typed error.
        public var failure: Failure?
        /// A comment for the reader.
        public var comment: String?
        /// How a streamed body arrived (`_chunks`): each piece's size and when it came, in order; `nil` for a body
        /// read whole. The pieces' sizes add up to the recorded body's.
        public var chunks: [Chunk]?
        /// Why a streamed body stopped before its end (`_bodyFailure`), after the pieces in ``chunks``: replayed as
        /// the same typed error once they are delivered.
        public var bodyFailure: Failure?

        /// An exchange; its ``time`` is the sum of `timings`.
        ///
        /// - Parameters:
        ///   - startedDateTime: When it started, in ISO 8601.
        ///   - request: The request.
        ///   - response: The response (status 0 for a failure).
        ///   - timings: How long each phase took.
        ///   - failure: Why no response arrived, if none did.
        public init(
            startedDateTime: String, request: Request, response: Response, timings: Timings, failure: Failure? = nil
        ) {
            self.startedDateTime = startedDateTime
            self.time = timings.total
            self.request = request
            self.response = response
            self.cache = Cache()
            self.timings = timings
            self.failure = failure
        }

        enum CodingKeys: String, CodingKey {
            case startedDateTime, time, request, response, cache, timings, comment
            case failure = "_failure"
            case chunks = "_chunks"
            case bodyFailure = "_bodyFailure"
        }

        /// Reads an entry, taking HAR's defaults for the fields a replay does without.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            startedDateTime = try container.value(.startedDateTime, default: "")
            request = try container.decode(Request.self, forKey: .request)
            response = try container.decode(Response.self, forKey: .response)
            cache = try container.value(.cache, default: Cache())
            timings = try container.value(.timings, default: Timings(send: 0, wait: 0, receive: 0))
            time = try container.value(.time, default: timings.total)
            failure = try container.decodeIfPresent(Failure.self, forKey: .failure)
            comment = try container.decodeIfPresent(String.self, forKey: .comment)
            chunks = try container.decodeIfPresent([Chunk].self, forKey: .chunks)
            bodyFailure = try container.decodeIfPresent(Failure.self, forKey: .bodyFailure)
        }
    }

    /// A piece of a streamed body as it arrived (`_chunks`, SwiftConnect's own field: HAR records a body whole).
    public struct Chunk: Codable, Sendable, Equatable {
        /// When it arrived, in milliseconds after the request started.
        public var time: Double
        /// Its size in bytes.
        public var size: Int

        /// A piece of `size` bytes that arrived `time` milliseconds after the request started.
        public init(time: Double, size: Int) {
            self.time = time
            self.size = size
        }
    }

    /// What a cache did for an exchange. Written empty (`{}`); what a browser wrote here is ignored.
    public struct Cache: Codable, Sendable, Equatable {
        /// An empty cache record.
        public init() {}
    }

    /// How long each phase of an exchange took, in milliseconds; -1 for a phase that does not apply.
    ///
    /// A transport sees one interval, from handing the request over to the complete response: ``RecordingTransport``
    /// writes it as ``wait``, with ``send`` and ``receive`` 0.
    public struct Timings: Codable, Sendable, Equatable {
        /// Time waiting for a connection, or -1.
        public var blocked: Double?
        /// Time resolving the host name, or -1.
        public var dns: Double?
        /// Time opening the connection (TLS included), or -1.
        public var connect: Double?
        /// Time sending the request.
        public var send: Double
        /// Time waiting for the first byte of the response.
        public var wait: Double
        /// Time reading the response.
        public var receive: Double
        /// Time of the TLS handshake (already counted in ``connect``), or -1.
        public var ssl: Double?
        /// A comment for the reader.
        public var comment: String?

        /// Timings of the three phases every entry has.
        ///
        /// - Parameters:
        ///   - send: Milliseconds sending.
        ///   - wait: Milliseconds waiting.
        ///   - receive: Milliseconds receiving.
        public init(send: Double, wait: Double, receive: Double) {
            self.send = send
            self.wait = wait
            self.receive = receive
        }

        /// The entry's `time`: the sum of the non-negative phases, ``ssl`` left out as HAR says (it is part of
        /// ``connect``).
        public var total: Double {
            [blocked, dns, connect, send, wait, receive].reduce(0) { sum, phase in
                guard let phase, phase > 0 else { return sum }
                return sum + phase
            }
        }

        /// Reads timings; a missing phase counts as 0.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            blocked = try container.decodeIfPresent(Double.self, forKey: .blocked)
            dns = try container.decodeIfPresent(Double.self, forKey: .dns)
            connect = try container.decodeIfPresent(Double.self, forKey: .connect)
            send = try container.value(.send, default: 0)
            wait = try container.value(.wait, default: 0)
            receive = try container.value(.receive, default: 0)
            ssl = try container.decodeIfPresent(Double.self, forKey: .ssl)
            comment = try container.decodeIfPresent(String.self, forKey: .comment)
        }
    }

    /// Why an exchange got no response (the entry's `_failure`): the ``SwiftConnect/ConnectError/Kind`` and message
    /// of the error, and the `URLError` code underneath when there was one.
    public struct Failure: Codable, Sendable, Equatable {
        /// The raw value of the error's ``SwiftConnect/ConnectError/Kind`` (`cannotConnect`, `timedOut`…).
        public var kind: String
        /// The error's message, secrets hidden.
        public var message: String
        /// The raw value of the `URLError` code underneath, if any.
        public var urlErrorCode: Int?

        /// A failure of `kind`.
        ///
        /// - Parameters:
        ///   - kind: The error's kind.
        ///   - message: What went wrong.
        ///   - urlErrorCode: The `URLError` code underneath, if any.
        public init(kind: String, message: String, urlErrorCode: Int? = nil) {
            self.kind = kind
            self.message = message
            self.urlErrorCode = urlErrorCode
        }
    }
}
