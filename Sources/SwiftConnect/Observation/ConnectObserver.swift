import Foundation

/// Watches a client's calls as they happen: the seam that tracing, metrics and logging integrations build on.
///
/// Give observers to a client (``Connect/Settings/observers``). For each call, each is asked once, on the caller's
/// thread and task before anything is sent, for a ``ConnectCallObserver`` that then hears every ``ConnectEvent`` of
/// that call in order: each attempt, redirect, token refresh, queue wait and cache lookup, then the call's end. Task
/// locals (a trace context) are read in ``observe(_:)``: a call made with a `Future` carries the caller's context as an
/// `async` one does.
///
/// ```swift
/// struct Timing: ConnectObserver {
///     func observe(_ call: ConnectCall) -> (any ConnectCallObserver)? {
///         TimingCall(name: call.name, started: .now())
///     }
/// }
///
/// final class TimingCall: ConnectCallObserver {
///     let name: String
///     let started: DispatchTime
///     init(name: String, started: DispatchTime) {
///         self.name = name
///         self.started = started
///     }
///     func record(_ event: ConnectEvent) {
///         if case .callEnded = event {
///             print(name, Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e6, "ms")
///         }
///     }
/// }
/// ```
///
/// A client without observers pays nothing for the seam; events are made only when someone listens.
public protocol ConnectObserver: Sendable {
    /// A call is starting: returns what hears its events, or `nil` to leave this call alone. Called once per call,
    /// synchronously, on the thread and task that made the call, once its request is built (a call refused while
    /// it is built, an ``ConnectError/Kind/invalidRequest``, is not observed).
    ///
    /// - Parameter call: What the call is.
    /// - Returns: The call's own observer, or `nil`.
    func observe(_ call: ConnectCall) -> (any ConnectCallObserver)?
}

/// Hears the events of one call, from whichever thread they happen on.
///
/// The events of one attempt come in order (started, redirects, ended), and
/// ``ConnectEvent/callEnded(status:error:attempts:)`` comes once the call has its outcome, after the end of every send
/// that outcome waited for (a middleware sending an attempt's request twice hears of each end after you do). An
/// attempt the call's end cuts short (its deadline passed, the caller cancelled) is told ended after that, as
/// cancelled: the call's end says why. So is a send a middleware cancels once the call has its outcome (the slower of a
/// hedge's two sends, once the other was answered): ``ConnectError/Kind/cancelled`` is the truth of that send, and the
/// call's end tells how the call went. Those ends, and a token refresh the call's rejection started, are the only events
/// told after the call's end: what a send the call did not wait for meets later (a queue wait, a redirect) is not told.
/// One exception, by design: a send that starts on one thread at the moment the call ends on another (a retry leaving
/// its wait as the caller cancels) may be told started just after the end, and then ended, cancelled. Ordering the
/// two would hold one thread until another thread's observers return, and observers that cancel each other's calls
/// from two threads would then wait for each other for ever. A token refresh or a queue wait may be told from another
/// thread meanwhile, so an observer keeps its own state thread-safe, and ends what such a late start opens when its
/// send is told ended.
public protocol ConnectCallObserver: Sendable {
    /// Something happened to the call.
    ///
    /// - Parameter event: What happened.
    func record(_ event: ConnectEvent)

    /// Header fields to add to an attempt's request on its way to the transport, after every middleware: a trace
    /// context's `traceparent`, say. A field replaces the request's fields of the same name; a value with CR, LF or NUL
    /// fails the call as any invalid header does. None by default.
    ///
    /// - Parameter attempt: The attempt's number, from 1.
    /// - Returns: The fields to set.
    func headerFields(forAttempt attempt: Int) -> HeaderFields
}

extension ConnectCallObserver {
    /// Adds no field.
    public func headerFields(forAttempt attempt: Int) -> HeaderFields { [:] }
}

/// The observers of one call (those that answered ``ConnectObserver/observe(_:)``), carried by its context and its
/// transfer options to the stages that tell them.
struct CallObservation: Sendable {
    let observers: [any ConnectCallObserver]
    /// Per attempt, the sends told started and ended, so that each send is told ended once: a middleware may send an
    /// attempt's request more than once (calling `next` again), and each send is told as its own.
    private let sends: Protected<[Int: (started: Int, ended: Int)]>
    /// Whether the call's end was told: after it, only the ends of sends told started before it are (a stage that
    /// hands on a request late, the second send of a hedge leaving the queue, tells nothing more).
    private let ended: Protected<Bool>
    /// Open while the call listens to the request this copy is carried by (``sharing(relayingTo:)``): a request
    /// several calls share (``RequestCoalescer``) goes on after the call whose context it carries has left, and that
    /// call hears of it no more. `nil`: always open.
    private let listens: Protected<Bool>?
    /// Told each event this copy is told through ``record(_:)``, whether or not its call still listens
    /// (``sharing(relayingTo:)``): how the calls that share the request this copy is carried by hear what it meets on
    /// its way (a redirect). `nil`: nobody.
    private let relay: (@Sendable (ConnectEvent) -> Void)?
    /// Asked for the request's fields in this copy's stead when it has no observers, or its call no longer listens
    /// (``sharing(relayingTo:fieldsInstead:)``): the calls still sharing the request add theirs (a trace context).
    /// `nil`: nobody.
    private let fieldsInstead: (@Sendable (inout ConnectRequest) -> Void)?

    init(observers: [any ConnectCallObserver]) {
        self.observers = observers
        sends = Protected([:])
        ended = Protected(false)
        listens = nil
        relay = nil
        fieldsInstead = nil
    }

    private init(
        observers: [any ConnectCallObserver], sends: Protected<[Int: (started: Int, ended: Int)]>,
        ended: Protected<Bool>, relay: @escaping @Sendable (ConnectEvent) -> Void,
        fieldsInstead: (@Sendable (inout ConnectRequest) -> Void)?
    ) {
        self.observers = observers
        self.sends = sends
        self.ended = ended
        listens = Protected(true)
        self.relay = relay
        self.fieldsInstead = fieldsInstead
    }

    /// The same observers, for a request other calls share: ``stopListening()`` closes this copy only. The events told
    /// to this copy through ``record(_:)`` also go to `relay`, even once it is closed; once it is closed,
    /// `fieldsInstead` adds the request's fields (``addingFields(to:attempt:)``).
    func sharing(
        relayingTo relay: @escaping @Sendable (ConnectEvent) -> Void,
        fieldsInstead: (@Sendable (inout ConnectRequest) -> Void)? = nil
    ) -> CallObservation {
        CallObservation(observers: observers, sends: sends, ended: ended, relay: relay, fieldsInstead: fieldsInstead)
    }

    /// No observers, for a request other calls share when the call that makes it has none: the events told to it
    /// through ``record(_:)`` go to `relay` only, and `fieldsInstead` adds the request's fields.
    static func relaying(
        to relay: @escaping @Sendable (ConnectEvent) -> Void,
        fieldsInstead: (@Sendable (inout ConnectRequest) -> Void)? = nil
    ) -> CallObservation {
        CallObservation(
            observers: [], sends: Protected([:]), ended: Protected(false), relay: relay, fieldsInstead: fieldsInstead)
    }

    /// Tells this copy's observers nothing more, nor asks them for fields (see ``sharing(relayingTo:)``).
    func stopListening() {
        listens?.withLock { $0 = false }
    }

    /// Whether `other` observes the same call (a copy of this, or of the same ``sharing(relayingTo:)``).
    func isSameCall(as other: CallObservation) -> Bool {
        sends === other.sends
    }

    /// Whether a send of `attempt` was told started and not yet ended.
    func hasSendInFlight(of attempt: Int) -> Bool {
        sends.withLock { sends in
            guard let counts = sends[attempt] else { return false }
            return counts.started > counts.ended
        }
    }

    /// Starts observing `call` with `observers`; `nil` when none of them watches it.
    static func start(_ call: @autoclosure () -> ConnectCall, observers: [any ConnectObserver]) -> CallObservation? {
        guard !observers.isEmpty else { return nil }
        let call = call()
        let watching = observers.compactMap { $0.observe(call) }
        return watching.isEmpty ? nil : CallObservation(observers: watching)
    }

    func record(_ event: ConnectEvent) {
        relay?(event)
        if let listens, !listens.withLock({ $0 }) { return }
        // The call's end is its last event, but for the ends of the sends it cut short (``recordEnd(of:status:error:)``).
        let isLate = ended.withLock { ended -> Bool in
            switch event {
            case .callEnded:
                defer { ended = true }
                return ended
            // A send it cut short ends; a token refresh its rejection started may outlive it and is told.
            case .attemptEnded, .tokenRefreshStarted, .tokenRefreshEnded: return false
            default: return ended
            }
        }
        if isLate { return }
        for observer in observers { observer.record(event) }
    }

    /// Tells the observers that a send of `attempt` is starting, with `request` as it goes to the transport; nothing
    /// once the call's end was told.
    func recordStart(of attempt: Int, request: ConnectRequest) {
        if let listens, !listens.withLock({ $0 }) { return }
        guard !ended.withLock({ $0 }) else { return }
        sends.withLock { $0[attempt, default: (0, 0)].started += 1 }
        record(.attemptStarted(attempt: attempt, request: request))
    }

    /// Tells the observers that a send of `attempt` ended, once per send started (once for an attempt told of no
    /// start): an attempt abandoned at its `attemptTimeout` is told ended,
    /// timed out, when it is abandoned (before the next attempt starts), and not again when its cancellation comes
    /// through.
    func recordEnd(
        of attempt: Int, status: Int?, error: ConnectError?, bytesSent: Int64? = nil, bytesReceived: Int64? = nil
    ) {
        if let listens, !listens.withLock({ $0 }) { return }
        let isNew = sends.withLock { sends -> Bool in
            var counts = sends[attempt, default: (0, 0)]
            guard counts.ended < max(counts.started, 1) else { return false }
            counts.ended += 1
            sends[attempt] = counts
            return true
        }
        guard isNew else { return }
        record(
            .attemptEnded(
                attempt: attempt, status: status, error: error, bytesSent: bytesSent, bytesReceived: bytesReceived))
    }

    /// `request` with the fields the observers add to this attempt; when this copy has none, or its call no longer
    /// listens, those `fieldsInstead` adds (``sharing(relayingTo:fieldsInstead:)``).
    func addingFields(to request: inout ConnectRequest, attempt: Int) {
        if observers.isEmpty || listens?.withLock({ $0 }) == false {
            fieldsInstead?(&request)
            return
        }
        for observer in observers {
            for field in observer.headerFields(forAttempt: attempt) { request.headerFields[field.name] = field.value }
        }
    }
}

/// What a call is, as an observer sees it when it starts.
public struct ConnectCall: Sendable {
    /// The method.
    public let method: HTTPMethod
    /// The name of the call: the connector's type (`"TodoConnector"`), or the name a request built elsewhere was
    /// given (an OpenAPI operation's ID).
    public let name: String
    /// The URL's path as the connector describes it, placeholders kept: the base URL's path, then the endpoint
    /// (`"/v1/todos/{id}"` for `https://api.example.com/v1` and `"/todos/{id}"`). Bounded, so fit for a span's name
    /// or a metric's label, where the URL is not, as long as endpoints name their IDs as placeholders: an endpoint
    /// with an ID written in (`request("/todos/1")`, `"/todos/\(id)"`) is its own template, one per ID. A query
    /// written into the endpoint keeps its sensitive values hidden (`"/items?api_key=<redacted>"`), as
    /// ``ConnectRequest/redactedURL`` hides them. Empty for a request built elsewhere
    /// (``Connect/stream(_:name:options:streaming:)``), whose concrete path may hold IDs: name it by ``name`` then.
    public let pathTemplate: String
    /// The request as it enters the pipeline, before the middlewares.
    public let request: ConnectRequest
}

/// Something that happened to a call.
public enum ConnectEvent: Sendable {
    /// An attempt is being sent: `attempt` counts from 1; `request` is as the middlewares left it, just before the
    /// transport.
    case attemptStarted(attempt: Int, request: ConnectRequest)
    /// An attempt ended with a response (`status`) or an error (`error`) before one arrived. `bytesSent` is the
    /// request body's size (`nil` for a stream of unknown length or a file); `bytesReceived` the response
    /// body's, when it arrived whole (`nil` for a streamed response, whose attempt ends with its head, a download
    /// to a file, or a body that came content-encoded, whose size on the wire is not known once decoded).
    case attemptEnded(attempt: Int, status: Int?, error: ConnectError?, bytesSent: Int64?, bytesReceived: Int64?)
    /// The transport followed a redirect of `status` to `location` within the attempt. `location` is the URL as the
    /// server wrote it, secrets included: to show it, set it as the `url` of the attempt's request and show that
    /// request's ``ConnectRequest/redactedURL``, which also hides a secret of the request the `Location` repeats under
    /// an ordinary name (`/next?state=<the token>`).
    case redirected(status: Int, location: URL)
    /// The request waited for a slot of the client's ``RequestQueue`` for `seconds`. A call that shares an identical
    /// request (``Connect/Settings/coalescesIdenticalRequests``) hears the wait of the shared one, from when it joined.
    case queueWaited(seconds: TimeInterval)
    /// A ``ConnectivityMiddleware`` held the request for `seconds` while the network was gone (or, made as the
    /// network came back, behind the requests held so, while they were let go), then sent it. Not told for a request
    /// that failed or was cancelled while held.
    case connectivityWaited(seconds: TimeInterval)
    /// The client's ``ResponseCache`` answered the request (`hit`), or had nothing for it.
    case cacheLookup(hit: Bool)
    /// An ``AuthenticationMiddleware`` started renewing the credential the server rejected, for this call.
    case tokenRefreshStarted
    /// That renewal ended; `succeeded` tells whether it gave the credential requests are signed with from then on:
    /// `false` when it failed, and when ``AuthenticationMiddleware/setCredential(_:)`` replaced the credential while it
    /// ran with another than the one it gave (its result is dropped).
    case tokenRefreshEnded(succeeded: Bool)
    /// The call ended: with the last attempt's status, or with `error`; `attempts` were made, as
    /// ``ConnectError/attempts`` counts them: an attempt the call's end (its deadline, a cancellation) cut short before
    /// its request reached the transport, which was never told started, is not counted.
    case callEnded(status: Int?, error: (any Error)?, attempts: Int)
}

extension ConnectEvent: CustomReflectable {
    /// Each case with its values as the default reflection shows them, but a redirect's location redacted as every URL
    /// SwiftConnect prints (no `user:password@`, secret query values and fragment pairs hidden), so that `print(event)`
    /// and `dump(event)` in an observer of your own leak no presigned URL's signature: `redirected(status: 302,
    /// location: https://s3.example.com/a.pdf?X-Amz-Signature=<redacted>)`. The event does not hold the request, so a
    /// secret of the request the location repeats under an ordinary name is not known here: show the location through
    /// the attempt's request for that (``redirected(status:location:)``). An ending error that is not a
    /// ``ConnectError`` (which hides its own secrets) is shown as its text, with every URL in it redacted.
    public var customMirror: Mirror {
        Mirror(self, children: Mirror(reflecting: Reflected(self)).children, displayStyle: .enum)
    }

    /// The cases of ``ConnectEvent`` with what they hold as reflection shows it: the same names and labels, so that
    /// the default mirror of each gives the children of ``customMirror``.
    private enum Reflected {
        case attemptStarted(attempt: Int, request: ConnectRequest)
        case attemptEnded(attempt: Int, status: Int?, error: ConnectError?, bytesSent: Int64?, bytesReceived: Int64?)
        case redirected(status: Int, location: RedactedText)
        case queueWaited(seconds: TimeInterval)
        case connectivityWaited(seconds: TimeInterval)
        case cacheLookup(hit: Bool)
        case tokenRefreshStarted
        case tokenRefreshEnded(succeeded: Bool)
        case callEnded(status: Int?, error: Any?, attempts: Int)

        init(_ event: ConnectEvent) {
            switch event {
            case .attemptStarted(let attempt, let request):
                self = .attemptStarted(attempt: attempt, request: request)
            case .attemptEnded(let attempt, let status, let error, let bytesSent, let bytesReceived):
                self = .attemptEnded(
                    attempt: attempt, status: status, error: error, bytesSent: bytesSent, bytesReceived: bytesReceived)
            case .redirected(let status, let location):
                self = .redirected(status: status, location: RedactedText(Redaction.url(location, redacting: true)))
            case .queueWaited(let seconds): self = .queueWaited(seconds: seconds)
            case .connectivityWaited(let seconds): self = .connectivityWaited(seconds: seconds)
            case .cacheLookup(let hit): self = .cacheLookup(hit: hit)
            case .tokenRefreshStarted: self = .tokenRefreshStarted
            case .tokenRefreshEnded(let succeeded): self = .tokenRefreshEnded(succeeded: succeeded)
            case .callEnded(let status, let error, let attempts):
                self = .callEnded(status: status, error: error.map(Self.shown), attempts: attempts)
            }
        }

        /// A ``ConnectError`` as it is (it hides its own secrets); another error as its text, with its URLs redacted.
        private static func shown(_ error: any Error) -> Any {
            if error is ConnectError { return error }
            return RedactedText(Redaction.urlsInText(String(reflecting: error)))
        }
    }
}
