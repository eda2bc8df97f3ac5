import Foundation
import XCTest

@testable import SwiftConnect
@testable import SwiftConnectTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The root package's integration tests (`Shared/`: 19 of the files of `Tests/SwiftConnectTests/Integration`, not
/// the URLSession-only ones, `MemoryBoundTests`, `OddServerTests` or `StreamLifecycleTests`) compiled once more,
/// each test run twice:
/// 1. recording: every exchange goes through a `RecordingTransport` wrapped around `URLSessionTransport`, to the
///    test's real `LocalServer`s;
/// 2. replaying, in a child process (this test binary, started again for this one test): its transports are made with
///    nothing to send through (`wrapping: nil`), so no byte reaches a server. It must pass as the first run did, use
///    every recording, and receive every response body byte for byte as the first run did.
///
/// XCTest on Linux cannot run a test method twice in one process (its tear-down state is final), hence the child.
/// The child's servers do not listen: they take the first run's ports (``LocalServer/PortPlan``), so the URLs a test
/// asks for are the URLs it recorded; the ports are not held (no request goes to them: see the plan). Tests of
/// what replay cannot reproduce are listed in ``ReplayHarness/outOfScope`` with the
/// reason, and not run here (`SwiftConnectTests` runs them on both engines). Under a sanitizer only the recording run
/// is made.
class IntegrationTestCase: XCTestCase {
    override func invokeTest() {
        let method = String(name.split(separator: ".").last ?? "")
        let test = "\(type(of: self)).\(method)"
        if let reason = ReplayHarness.outOfScope[method] {
            // Run by SwiftConnectTests on both engines; here it would only fail for what replay cannot do.
            return print("\(test): not replayed: \(reason)")
        }
        if let child = ReplayHarness.childFile {
            return replay(test, plan: child)
        }
        let plan = LocalServer.PortPlan()
        LocalServer.portPlan.withLock { $0 = plan }
        ReplayHarness.begin(test, .record)
        super.invokeTest()
        let recorded = ReplayHarness.end()
        LocalServer.portPlan.withLock { $0 = nil }
        // A first run that failed or skipped says nothing a replay could check. A failed one keeps its recordings
        // to be read; a skipped one, or any under a sanitizer (never replayed), leaves nothing behind: each
        // sanitizer pass of CI otherwise left about 20 MB in the temporary directory (seen 5 December).
        let failed = (testRun?.failureCount ?? 0) > 0
        for transport in recorded.transports where !failed {
            XCTAssertTrue(transport.waitUntilRecorded(), "an exchange was still being recorded after 10 s")
        }
        guard !failed, testRun?.hasBeenSkipped != true, !ProcessMemory.isSanitized else {
            if !failed { ReplayHarness.remove(recorded.transports.map(\.fileURL)) }
            return
        }
        do {
            let file = ReplayHarness.folder.appendingPathComponent("\(test).plan")
            try JSONEncoder().encode(ReplayHarness.Plan(ports: plan.ports, bodies: recorded.bodies)).write(to: file)
            let (status, log) = try ReplayHarness.runChild(
                "SwiftConnectReplayTests.\(type(of: self))/\(method)", plan: file)
            XCTAssertEqual(
                status, 0, "the replay failed (its files are in \(ReplayHarness.folder.path)):\n\(log.suffix(4_000))")
            for line in log.split(separator: "\n") where line.hasPrefix("ReplayHarness:") { print(line) }
            // A replay that passed leaves nothing behind: each run of the suite would otherwise add its recordings
            // (about 20 MB) to the temporary directory. A failed one keeps them to be read.
            if status == 0 {
                ReplayHarness.remove([file] + recorded.transports.map(\.fileURL))
            }
        } catch {
            XCTFail("the replay could not run: \(error)")
        }
    }

    /// The child's run: the test, replaying what the parent recorded, on the parent's ports.
    private func replay(_ test: String, plan file: URL) {
        guard let data = try? Data(contentsOf: file),
            let plan = try? JSONDecoder().decode(ReplayHarness.Plan.self, from: data)
        else { return XCTFail("no replay plan at \(file.path)") }
        LocalServer.portPlan.withLock { $0 = LocalServer.PortPlan(replaying: plan.ports) }
        ReplayHarness.begin(test, .replay)
        super.invokeTest()
        let replayed = ReplayHarness.end()
        LocalServer.portPlan.withLock { $0 = nil }
        XCTAssertEqual(
            replayed.bodies.sorted(by: ReplayHarness.order), plan.bodies.sorted(by: ReplayHarness.order),
            "the replay received other bodies than the recording run")
        for transport in replayed.transports {
            XCTAssertNoThrow(try transport.verifyAllRecordingsUsed())
        }
        let exchanges = replayed.transports.reduce(0) { $0 + $1.entries.count }
        print("ReplayHarness: \(test) replayed \(exchanges) recorded exchange(s), \(replayed.bodies.count) body(ies)")
    }
}

/// The state of the test being run twice: which run, the transports it made, the bodies they received.
enum ReplayHarness {
    /// Which run of a test.
    enum Pass: Sendable {
        case record
        case replay
    }

    struct Run: Sendable {
        var test: String
        var pass: Pass
        var transports: [RecordingTransport] = []
        var bodies: [Data] = []
    }

    /// Why a test cannot be replayed.
    private enum Reason {
        static let serverSide =
            "asserts what the server received (requests, headers, bodies, counts) or relies on what its route does during the exchange; a replay sends nothing"
        static let connectionLevel =
            "checks the connection itself (reuse, a close, a transfer stopped); a recording holds exchanges, not connections"
        static let inFlight =
            "cancels or times an exchange while it is under way, or needs requests to overlap in time; a recording holds whole exchanges, replayed at once"
        static let randomInput =
            "sends something random in each run (a temporary file's name in a multipart part), which no recording can match"
        static let memory = "measures memory; a recording holds every body in memory"
        static let secrets =
            "the server echoes secrets (or hands out a token), which the recording holds as placeholders: the replayed bodies differ by design"
        static let engineDetail =
            "checks details the engine adds to an outcome (why a redirect was not followed, why a request was refused, the status of a response refused for its size); a recording keeps the kind and message of a failure, not those details"
    }

    /// Tests replay cannot reproduce, by method name, and why. They are not run here.
    static let outOfScope: [String: String] = [
        "testAStreamsProgressGoesOnAfterItsHeadToTheBodysEnd": Reason.inFlight,
        "testA401WithABasicChallengeComesBackAsA401": Reason.serverSide,
        "testANonASCIIHeaderValueIsRefusedNamingTheFieldOnEveryEngine": Reason.serverSide,
        "testA301Or302KeepsAPUTAndItsBody": Reason.serverSide,
        "testARedirectsShortBodyLeavesItsConnectionForTheNextHop": Reason.connectionLevel,
        "testA307LeavingHTTPOrBringingCredentialsIsNotFollowed": Reason.serverSide,
        "testA307Or308KeepsTheMethodAndTheBody": Reason.serverSide,
        "testAChainOf307And308IsFollowedToTheEnd": Reason.serverSide,
        "testACrossOriginRedirectKeepsTheBodyAndDropsTheCredentials": Reason.serverSide,
        "testALoopOf307sFailsWithTooManyRedirects": Reason.serverSide,
        "testCachedResponseIsServedWithoutASecondServerHit": Reason.serverSide,
        "testGetAndDecode": Reason.serverSide,
        "testBlanksAroundAHeaderValueAreTrimmedOnEveryEngine": Reason.serverSide,
        "testABlankContentTypeHandedToTheTransportIsNotSent": Reason.serverSide,
        "testConnectionSpecificFieldsGoAsSetOverHTTP11": Reason.serverSide,
        "testGuideUpdateSendsPathQueryAndJSONBody": Reason.serverSide,
        "testQueueCapsTheRequestsTheServerSeesAtOnce": Reason.serverSide,
        "testALocationWithAFragmentIsFollowedWithoutSendingIt": Reason.serverSide,
        "testAPOSTRedirectedWith301302Or303BecomesAGETWithoutItsBody": Reason.serverSide,
        "testARetryAfterARedirectStartsAgainFromTheOrigin": Reason.serverSide,
        "testAnotherHostNameForTheSameServerGetsNoCredentials": Reason.serverSide,
        "testConfigurationDefaultsAndTheMiddlewaresCredentialStayWithTheOrigin": Reason.serverSide,
        "testCredentialsDoNotComeBackAfterARoundTripThroughAnotherOrigin": Reason.serverSide,
        "testTheCacheKeysARedirectedResponseOnTheURLAskedFor": Reason.serverSide,
        "testABodyIsNeverSentEmptyAfterA308": Reason.serverSide,
        "testARedirectToAURLWithUserinfoIsNotFollowed": Reason.serverSide,
        "testARedirectToAnotherSchemeIsNotFollowedAndIsNeverSentToTheSameServer": Reason.serverSide,
        "testAnUploadRedirectedWith303IsFollowedWithAPlainGET": Reason.serverSide,
        "testAuthorizationIsDroppedWhenARedirectChangesHost": Reason.serverSide,
        "testAuthorizationIsKeptOnASameOriginRedirect": Reason.serverSide,
        "testEveryHeaderNamedLikeASecretIsDroppedWhenARedirectChangesHost": Reason.serverSide,
        "testTheRequestsOwnUserinfoFollowsASameOriginRedirect": Reason.serverSide,
        "testABrokenContentEncodingIsNotALostConnectionNorRetried": Reason.serverSide,
        "testDroppedConnectionIsRetried": Reason.serverSide,
        "testExhaustedRetriesReportTheServersLastAnswer": Reason.serverSide,
        "testFailingTwiceWith503ThenSucceedingGivesSuccessAfterThreeRequests": Reason.serverSide,
        "testPostToA503RouteIsNotReplayed": Reason.serverSide,
        "testPostWithAnAddedIdempotencyKeyIsReplayedWithTheSameKey": Reason.serverSide,
        "testRetryAfterSecondsIsRespected": Reason.serverSide,
        "testRetryAfterWithTheRealClock": Reason.serverSide,
        "testARedirectSettingAnUnreadableCookieIsFollowed": Reason.serverSide,
        "testAResponseSettingAnUnreadableCookieArrivesAndItsOtherCookiesAreKept": Reason.serverSide,
        "testEachHopGetsOnlyTheRedirectCookiesThatApplyToIt": Reason.serverSide,
        "testNoRedirectIsFollowedWithMaxRedirectsZero": Reason.serverSide,
        "testChunksArriveAsTheServerSendsThem": Reason.serverSide,
        "testAPOSTWhoseReusedConnectionIsClosedFailsAtOnceAndIsNotSentAgain": Reason.connectionLevel,
        "testAStreamedPOSTWhoseReusedConnectionIsClosedFailsAtOnceAndIsNotSentAgain": Reason.connectionLevel,
        "testAPUTWhoseReusedConnectionIsClosedIsSentAgainByTheRetryPolicy": Reason.connectionLevel,
        "testBreakingOutOfTheLoopClosesTheConnection": Reason.connectionLevel,
        "testReleasingAnUnreadStreamClosesTheConnection": Reason.connectionLevel,
        "testSizeLimitFailsAnUndeclaredBodyAsSoonAsItIsExceeded": Reason.connectionLevel,
        "testSizeLimitOnADeclaredLengthStopsTheTransfer": Reason.connectionLevel,
        "testCancellingTheAwaitingTaskCancelsTheURLSessionTask": Reason.inFlight,
        "testCancellingDuringTheSecondHopStopsIt": Reason.inFlight,
        "testTheTimeoutSpansEveryHop": Reason.inFlight,
        "testCancelAllRequestsWithFiftyInFlight": Reason.inFlight,
        "testCancellingOneSlowRequestEndsItAndCancelsTheTask": Reason.inFlight,
        "testIdenticalConcurrentGetsMakeOneServerRequest": Reason.inFlight,
        "testAFractionalTimeoutIsNotCutToWholeSeconds": Reason.inFlight,
        "testALargeBodyFromASequenceStreamsWithMemoryBounded": Reason.memory,
        "testAnEchoedErrorShowsNoSecretOfAnyKind": Reason.secrets,
        "testAnEchoedSuccessShowsNoSecretInDebugOutput": Reason.secrets,
        "testUserInfoCredentialsShowNowhere": Reason.secrets,
        "testWithRedactionOffEverythingShows": Reason.secrets,
        "testTwentyConcurrentRequestsRefreshOnceAndAllSucceedWithTheFreshToken": Reason.secrets,
        "testAStreamBodyIsNotSentAgain": Reason.engineDetail,
        "testAGETGivenABodyByAMiddlewareFailsWithBodyNotAllowed": Reason.engineDetail,
        "testSizeLimitFiresOnADeclaredLength": Reason.engineDetail,
        "testACancelledDownloadLeavesNoPartialFile": Reason.inFlight,
        "testADownloadThatTimesOutLeavesNoPartialFileWhenItFails": Reason.inFlight,
        "testADirectoryAppearingDuringADownloadIsKept": Reason.serverSide,
        "testADownloadAndASizeLimitedRequestFollowTheRedirect": Reason.serverSide,
        "testAFailedMoveKeepsTheFileItWouldHaveReplaced": Reason.serverSide,
        "testACancellationAfterTheFileIsInPlaceKeepsTheNewFile": Reason.inFlight,
        "testAFolderRemovedBeforeTheAnswerIsReportedAsMissing": Reason.serverSide,
        "testAnUploadFromAFileIsSentAgain": Reason.serverSide,
        "testAStreamBodysPOSTIsFollowedThroughA303WithAPlainGET": Reason.serverSide,
        "testARequestsFragmentFollowsARedirectThatNamesNone": Reason.serverSide,
        "testAnUploadRedirectedWith307NeitherHangsNorArrivesEmpty": Reason.serverSide,
        "testAnUploadFromAFileWhoseReusedConnectionIsClosedFailsAtOnce": Reason.connectionLevel,
        "testDiskFileIsStreamedAndArrivesIntact": Reason.randomInput,
        "testLargeStreamedUploadKeepsMemoryBounded": Reason.memory,
    ]

    private static let current = Protected<Run?>(nil)

    /// What a recording run hands its replay: the ports its servers listened on and the bodies it received.
    struct Plan: Codable {
        var ports: [Int]
        var bodies: [Data]
    }

    /// The environment variable that makes this process a replay of one test: the path of that test's plan.
    private static let childVariable = "SWIFTCONNECT_REPLAY_PLAN"

    /// The plan this process replays, when it is a replaying child.
    static let childFile: URL? = ProcessInfo.processInfo.environment[childVariable].map { URL(fileURLWithPath: $0) }

    /// Where the recordings go: the recording process's folder under the temporary directory, shared with its
    /// children.
    /// Made again by each recording run (``begin(_:_:)``): a test that passed removes it once it is empty.
    static let folder: URL =
        childFile?.deletingLastPathComponent()
        ?? FileManager.default.temporaryDirectory
        .appendingPathComponent("SwiftConnectReplayTests-\(ProcessInfo.processInfo.processIdentifier)")

    /// Removes a test's plan and recordings, and the folder once nothing else is in it.
    static func remove(_ files: [URL]) {
        for file in files { try? FileManager.default.removeItem(at: file) }
        if (try? FileManager.default.contentsOfDirectory(atPath: folder.path))?.isEmpty == true {
            try? FileManager.default.removeItem(at: folder)
        }
    }

    /// Runs `test` (`Module.Class/method`) in a child process that replays `plan`; its exit status and output.
    static func runChild(_ test: String, plan: URL) throws -> (status: Int32, log: String) {
        let (status, output) = try ChildProcess.run(
            CommandLine.arguments[0], [test], adding: [childVariable: plan.path])
        return (status, output)
    }

    static func begin(_ test: String, _ pass: Pass) {
        if pass == .record {
            try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        }
        current.withLock { $0 = Run(test: test, pass: pass) }
    }

    static func end() -> Run {
        current.withLock { run in
            defer { run = nil }
            return run ?? Run(test: "", pass: .record)
        }
    }

    /// Orders bodies for comparison: the order of concurrent requests may differ between the runs.
    static func order(_ lhs: Data, _ rhs: Data) -> Bool {
        lhs.count != rhs.count ? lhs.count < rhs.count : lhs.lexicographicallyPrecedes(rhs)
    }

    /// A transport for the test: recording through `upstream` in the first run, replaying in the second.
    static func transport(_ upstream: @autoclosure () -> any Transport) -> any Transport {
        let made = current.withLock { run -> (file: URL, pass: Pass)? in
            guard let run else { return nil }
            let file = folder.appendingPathComponent("\(run.test)-\(run.transports.count).har")
            return (file, run.pass)
        }
        guard let made else { return upstream() }
        let recording = RecordingTransport(
            fileURL: made.file, wrapping: made.pass == .record ? upstream() : nil,
            mode: made.pass == .record ? .record : .replay)
        current.withLock { $0?.transports.append(recording) }
        return BodyLedger(base: recording)
    }

    /// Notes a body the test's transports received.
    static func note(_ body: Data) {
        current.withLock { $0?.bodies.append(body) }
    }
}

/// A transport that notes every whole response body its base hands over (streamed ones are the test's to read).
struct BodyLedger: Transport {
    let base: RecordingTransport

    func send(_ request: URLRequest) -> Future<ConnectResponse> {
        noting(base.send(request))
    }

    func send(_ request: URLRequest, transfer: TransferOptions) -> Future<ConnectResponse> {
        noting(base.send(request, transfer: transfer))
    }

    func send(_ request: ConnectRequest, transfer: TransferOptions) -> Future<ConnectResponse> {
        noting(base.send(request, transfer: transfer))
    }

    private func noting(_ future: Future<ConnectResponse>) -> Future<ConnectResponse> {
        future.whenComplete { result in
            if case .success(let response) = result, response.bodyStream == nil { ReplayHarness.note(response.data) }
        }
        return future
    }
}

/// The engine of the shared tests here: `URLSessionTransport`, behind a recording or replaying transport.
enum TransportUnderTest {
    /// A new transport, recording or replaying.
    static func make() -> any Transport { ReplayHarness.transport(URLSessionTransport()) }

    /// The same, over a transport that neither stores nor sends cookies.
    static func makeCookieless() -> any Transport {
        ReplayHarness.transport(
            {
                let configuration = URLSessionTransport.defaultConfiguration
                configuration.httpCookieStorage = nil
                configuration.httpShouldSetCookies = false
                return URLSessionTransport(configuration: configuration)
            }())
    }

    /// Whether the engine is URLSession: it is, under the recording.
    static let isURLSession = true
}
