#if os(Linux)
    import Dispatch
    import Foundation
    import Glibc
    import XCTest

    @testable import SwiftConnect

    /// A lab link made in user space, for the faults this kernel has no `netem` for: two TAP devices, one in the
    /// test's namespace and one in the lab's, and a thread of the test process that copies every Ethernet frame
    /// (ARP included) from one to the other, delaying, reordering, duplicating or dropping frames on the way.
    ///
    /// ```
    ///  test process (root namespace)                                          lab namespace
    ///  client ── 10.215.N.1 ─[scl<id>h: TAP]══ PacketBridge thread ══[scl<id>l: TAP]─ 10.215.N.2 ── LabServer
    /// ```
    ///
    /// Each frame read is given a time to leave, its arrival plus ``Faults/delay`` plus a random share of
    /// ``Faults/jitter`` either way, and waits in a time-ordered queue: frames close together trade places when
    /// the jitter is larger than the gap between them. ``Faults/reorderPercent`` of the frames are also held back
    /// until the next frame of their direction has gone; ``Faults/duplicatePercent`` are written twice;
    /// ``Faults/lossPercent`` are dropped. ``counters`` say what really happened, so that a test can assert that
    /// its fault was made.
    ///
    /// Made with ``make(for:faults:)``, which gives a ``NetworkLab`` (``lab``) that ``LabServer`` works in as in
    /// one joined by a veth pair; the faults can change while it runs (``faults``). When the test ends the thread
    /// stops, the devices' descriptors are closed (which deletes the devices), then the lab is deleted.
    final class PacketBridge: Sendable {
        /// What the bridge does to the frames it carries, in both directions.
        struct Faults: Sendable, CustomStringConvertible {
            /// How long every frame waits before it goes on, in each direction: a round trip takes twice this.
            var delay: TimeInterval = 0
            /// The most a frame's wait differs from ``delay``, either way, at random (uniformly).
            var jitter: TimeInterval = 0
            /// The share of frames, in percent, held back until the next frame of their direction has gone.
            var reorderPercent = 0
            /// How long a frame held back waits for a next one at most, past its own time to leave.
            var reorderHold: TimeInterval = 0.02
            /// The share of frames, in percent, written twice.
            var duplicatePercent = 0
            /// The share of frames, in percent, dropped.
            var lossPercent = 0
            /// The seed of the bridge's random choices, said in ``description`` so that a failure can be retraced.
            var seed = UInt64.random(in: 0...UInt64.max)

            /// The faults, for a failure's message.
            var description: String {
                "delay \(delay) s ± \(jitter) s, reorder \(reorderPercent) %, duplicate \(duplicatePercent) %, "
                    + "loss \(lossPercent) %, seed \(seed)"
            }
        }

        /// What the bridge has done so far, in both directions.
        struct Counters: Sendable, Equatable, CustomStringConvertible {
            /// Frames read from either device.
            var received = 0
            /// Frames written to either device, second copies included.
            var forwarded = 0
            /// Frames that waited before going on (a delay or jitter was set).
            var delayed = 0
            /// Frames held back behind the next one (``Faults/reorderPercent``).
            var heldBack = 0
            /// Frames written after a frame of their direction that arrived after them: by jitter or by a hold.
            var reordered = 0
            /// Second copies written (``Faults/duplicatePercent``).
            var duplicated = 0
            /// Frames dropped on purpose (``Faults/lossPercent``).
            var dropped = 0
            /// Writes the kernel refused (the device gone, a frame it would not take).
            var failedWrites = 0

            /// The counters, for a failure's message.
            var description: String {
                "received \(received), forwarded \(forwarded), delayed \(delayed), held back \(heldBack), "
                    + "reordered \(reordered), duplicated \(duplicated), dropped \(dropped), "
                    + "failed writes \(failedWrites)"
            }
        }

        /// What the test's thread and the bridge's thread share.
        fileprivate struct State {
            var faults: Faults
            var counters = Counters()
            var isStopped = false
            /// Why the bridge's thread ended before a stop, if it did.
            var failure: String?
        }

        /// The lab the bridge joins to the test's namespace.
        let lab: NetworkLab
        /// The TAP device in the test's namespace (``NetworkLab/hostInterface``), then the one in the lab.
        private let devices: [Int32]
        /// A pipe whose write end wakes the bridge's thread to stop.
        private let wake: (read: Int32, write: Int32)
        private let state: Protected<State>
        /// Signalled when the bridge's thread has ended.
        private let finished = DispatchSemaphore(value: 0)

        /// Makes a lab for `test` whose link is a bridge making `faults`, addressed in `10.215.N.0/24`; the
        /// bridge stops and the lab is deleted when the test ends.
        ///
        /// - Throws: `XCTSkip` without root, iproute2 or a usable `/dev/net/tun`; ``NetworkLabError`` if the
        ///   system refuses to make the lab.
        static func make(for test: XCTestCase, faults: Faults = Faults()) throws -> PacketBridge {
            guard geteuid() == 0 else { throw XCTSkip("a bridged lab needs root (namespaces, TAP devices)") }
            guard access("/dev/net/tun", R_OK | W_OK) == 0 else {
                throw XCTSkip("/dev/net/tun is missing or not usable here (errno \(errno))")
            }
            guard let ip = LabCommand.path("ip") else { throw XCTSkip("iproute2 (`ip`) is not installed") }
            let lab = try NetworkLab.makeWithoutLink(for: test, secondOctet: 215)
            let host: Int32
            do {
                host = try openTap(named: lab.hostInterface)
            } catch {
                throw XCTSkip("cannot make a TAP device here: \(error)")
            }
            let labInterface = lab.labInterface
            var devices = [host]
            let bridge: PacketBridge
            do {
                devices.append(try NetworkNamespace.runOnThread(in: lab.namespace) { try openTap(named: labInterface) })
                // Both ends up before the bridge reads a frame: a frame written to a device that is down is lost.
                try LabCommand.run(ip, ["addr", "add", "\(lab.hostAddress)/24", "dev", lab.hostInterface])
                try LabCommand.run(ip, ["link", "set", lab.hostInterface, "up"])
                try LabCommand.run(
                    ip, ["-n", lab.namespace, "addr", "add", "\(lab.labAddress)/24", "dev", lab.labInterface])
                try LabCommand.run(ip, ["-n", lab.namespace, "link", "set", lab.labInterface, "up"])
                bridge = try PacketBridge(lab: lab, devices: devices, faults: faults)
            } catch {
                for descriptor in devices { close(descriptor) }
                throw error
            }
            // Teardown blocks run last in, first out: the bridge stops before the lab is deleted.
            test.addTeardownBlock {
                XCTAssertTrue(bridge.stop(), "the packet bridge's thread did not end")
                XCTAssertNil(bridge.failure, "the packet bridge failed")
            }
            return bridge
        }

        /// Starts the bridge's thread between `devices` (the host's TAP descriptor, then the lab's), which it
        /// owns from now on.
        private init(lab: NetworkLab, devices: [Int32], faults: Faults) throws {
            var pipeEnds: [Int32] = [0, 0]
            guard pipe(&pipeEnds) == 0 else { throw NetworkLabError("pipe: errno \(errno)") }
            self.lab = lab
            self.devices = devices
            wake = (pipeEnds[0], pipeEnds[1])
            state = Protected(State(faults: faults))
            let (state, wakeRead, finished) = (state, wake.read, finished)
            let thread = Thread {
                var relay = FrameRelay(devices: devices, wake: wakeRead, state: state, seed: faults.seed)
                if let failure = relay.run() { state.withLock { $0.failure = failure } }
                finished.signal()
            }
            thread.name = "PacketBridge"
            thread.start()
        }

        deinit {
            stop()
        }

        /// The faults the bridge makes from the next frame on.
        var faults: Faults {
            get { state.withLock { $0.faults } }
            set { state.withLock { $0.faults = newValue } }
        }

        /// What the bridge has done so far.
        var counters: Counters { state.withLock { $0.counters } }

        /// Why the bridge stopped carrying frames before it was stopped (a device failed), or `nil`.
        var failure: String? { state.withLock { $0.failure } }

        /// Stops the bridge: wakes its thread, waits for it to end, and closes the devices (which deletes them)
        /// and the pipe. Frames still waiting are dropped. Only the first call does anything.
        ///
        /// - Returns: `false` if the thread did not end within 10 s (its descriptors are then left open, so that
        ///   it never reads a descriptor number used again).
        @discardableResult
        func stop() -> Bool {
            let isFirst = state.withLock { state -> Bool in
                defer { state.isStopped = true }
                return !state.isStopped
            }
            guard isFirst else { return true }
            var byte: UInt8 = 1
            _ = write(wake.write, &byte, 1)
            guard finished.wait(timeout: .now() + 10) == .success else { return false }
            for descriptor in devices { close(descriptor) }
            close(wake.read)
            close(wake.write)
            return true
        }

        /// A TAP device named `name` (Ethernet frames, no packet information header), made in the calling
        /// thread's namespace; its descriptor does not block. The device lasts as long as the descriptor.
        static func openTap(named name: String) throws -> Int32 {
            let nameBytes = Array(name.utf8)
            let nameSize = 16  // IFNAMSIZ, the name's room in struct ifreq, with its terminating zero
            guard nameBytes.count < nameSize else { throw NetworkLabError("interface name too long: \(name)") }
            let descriptor = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC)
            guard descriptor >= 0 else { throw NetworkLabError("open /dev/net/tun: errno \(errno)") }
            // struct ifreq (40 bytes on 64-bit Linux): the name, then a union whose `short ifr_flags` is first.
            var request = [UInt8](repeating: 0, count: 40)
            request.replaceSubrange(0..<nameBytes.count, with: nameBytes)
            let tap: Int16 = 0x0002  // IFF_TAP, <linux/if_tun.h>
            let noPacketInformation: Int16 = 0x1000  // IFF_NO_PI
            request.withUnsafeMutableBytes {
                $0.storeBytes(of: tap | noPacketInformation, toByteOffset: 16, as: Int16.self)
            }
            let setInterface: UInt = 0x4004_54CA  // TUNSETIFF, _IOW('T', 202, int)
            let made = request.withUnsafeMutableBytes { ioctl(descriptor, setInterface, $0.baseAddress!) }
            guard made == 0 else {
                let failure = errno
                close(descriptor)
                throw NetworkLabError("TUNSETIFF \(name): errno \(failure)")
            }
            return descriptor
        }
    }

    /// A frame on its way across the bridge.
    private struct PendingFrame {
        /// The Ethernet frame.
        var bytes: [UInt8]
        /// 0 from the host's device to the lab's, 1 the other way.
        var direction: Int
        /// Its place among the frames of its direction, in order of arrival.
        var arrival: Int
        /// When it leaves, in uptime nanoseconds.
        var due: UInt64
        /// How many times it is written.
        var copies: Int
        /// Its place in the queue among frames due at the same time.
        var order = 0
    }

    /// The bridge thread's own state and loop: a time-ordered queue of frames, the frame held back in each
    /// direction, and the random source. Only ``PacketBridge/State`` is shared, through its lock.
    private struct FrameRelay {
        /// The host's TAP descriptor, then the lab's.
        let devices: [Int32]
        /// The read end of the pipe that wakes the thread to stop.
        let wake: Int32
        /// What the thread shares with the test: the faults to make, the counters.
        let state: Protected<PacketBridge.State>
        /// The frames waiting, by time to leave, then order of queueing.
        var queue: [PendingFrame] = []
        /// The frame held back in each direction, and until when it waits for a next one.
        var held: [(frame: PendingFrame, until: UInt64)?] = [nil, nil]
        /// The number of frames read so far in each direction.
        var arrivals = [0, 0]
        /// The latest arrival written so far in each direction: a frame older than that has been overtaken.
        var latestWritten = [-1, -1]
        /// The order the next frame queued gets.
        var nextOrder = 0
        /// The source of every random choice, seeded from ``PacketBridge/Faults/seed``.
        var random: BridgeRandom

        /// A relay between `devices`, stopped through `wake`, sharing `state`, its choices made from `seed`.
        init(devices: [Int32], wake: Int32, state: Protected<PacketBridge.State>, seed: UInt64) {
            self.devices = devices
            self.wake = wake
            self.state = state
            random = BridgeRandom(seed: seed)
        }

        /// Copies frames until woken through `wake`; returns why it stopped before, if a device or a wait failed.
        mutating func run() -> String? {
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let now = DispatchTime.now().uptimeNanoseconds
                release(now: now)
                var descriptors = [
                    pollfd(fd: devices[0], events: Int16(POLLIN), revents: 0),
                    pollfd(fd: devices[1], events: Int16(POLLIN), revents: 0),
                    pollfd(fd: wake, events: Int16(POLLIN), revents: 0),
                ]
                let ready = poll(&descriptors, 3, timeout(now: now))
                if ready < 0 {
                    if errno == EINTR { continue }
                    return "poll: errno \(errno)"
                }
                if descriptors[2].revents != 0 { return nil }
                for direction in 0..<2 {
                    let events = Int32(descriptors[direction].revents)
                    if events & Int32(POLLNVAL | POLLERR) != 0 { return "device \(direction): poll events \(events)" }
                    if events & Int32(POLLIN) != 0 { readFrames(direction: direction, into: &buffer) }
                }
            }
        }

        /// The milliseconds until the next frame is due (or a held one gives up waiting), -1 for none.
        func timeout(now: UInt64) -> Int32 {
            let times = [queue.first?.due] + held.map { $0?.until }
            guard let next = times.compactMap({ $0 }).min() else { return -1 }
            guard next > now else { return 0 }
            return Int32(min((next - now + 999_999) / 1_000_000, 60_000))
        }

        /// Reads the frames waiting on `direction`'s device (up to 256, so the other side gets its turn).
        mutating func readFrames(direction: Int, into buffer: inout [UInt8]) {
            for _ in 0..<256 {
                let count = buffer.withUnsafeMutableBytes { read(devices[direction], $0.baseAddress, $0.count) }
                guard count > 0 else { return }
                accept(Array(buffer[..<count]), direction: direction)
            }
        }

        /// Decides a new frame's fate: dropped, or queued with its time to leave, maybe held back or doubled.
        mutating func accept(_ bytes: [UInt8], direction: Int) {
            let now = DispatchTime.now().uptimeNanoseconds
            let faults = state.withLock { state -> PacketBridge.Faults in
                state.counters.received += 1
                return state.faults
            }
            let arrival = arrivals[direction]
            arrivals[direction] += 1
            if chance(faults.lossPercent) {
                state.withLock { $0.counters.dropped += 1 }
                return
            }
            let wait = max(0, faults.delay + faults.jitter * Double.random(in: -1...1, using: &random))
            let frame = PendingFrame(
                bytes: bytes, direction: direction, arrival: arrival, due: now + UInt64(wait * 1e9),
                copies: chance(faults.duplicatePercent) ? 2 : 1)
            if wait > 0 { state.withLock { $0.counters.delayed += 1 } }
            if let waiting = held[direction] {
                // The frame held back goes right after this one.
                held[direction] = nil
                enqueue(frame)
                var overtaken = waiting.frame
                overtaken.due = max(overtaken.due, frame.due)
                enqueue(overtaken)
            } else if chance(faults.reorderPercent) {
                held[direction] = (frame, frame.due + UInt64(max(0, faults.reorderHold) * 1e9))
                state.withLock { $0.counters.heldBack += 1 }
            } else {
                enqueue(frame)
            }
        }

        /// Whether a choice made `percent` % of the time is made this time.
        mutating func chance(_ percent: Int) -> Bool {
            percent > 0 && Int.random(in: 0..<100, using: &random) < percent
        }

        /// Puts `frame` in the queue after every frame due before it or at the same time.
        mutating func enqueue(_ frame: PendingFrame) {
            var frame = frame
            frame.order = nextOrder
            nextOrder += 1
            var low = 0
            var high = queue.count
            while low < high {
                let middle = (low + high) / 2
                if queue[middle].due <= frame.due { low = middle + 1 } else { high = middle }
            }
            queue.insert(frame, at: low)
        }

        /// Queues the held frames whose wait is over, then writes every frame that is due.
        mutating func release(now: UInt64) {
            for direction in 0..<2 {
                if let waiting = held[direction], waiting.until <= now {
                    held[direction] = nil
                    enqueue(waiting.frame)
                }
            }
            var due = 0
            while due < queue.count, queue[due].due <= now {
                write(queue[due])
                due += 1
            }
            queue.removeFirst(due)
        }

        /// Writes `frame` to the other direction's device, once or twice, and counts what happened.
        mutating func write(_ frame: PendingFrame) {
            let destination = devices[1 - frame.direction]
            var written = 0
            for _ in 0..<frame.copies {
                let count = frame.bytes.withUnsafeBytes { Glibc.write(destination, $0.baseAddress, $0.count) }
                if count == frame.bytes.count { written += 1 }
            }
            let overtaken = frame.arrival < latestWritten[frame.direction]
            latestWritten[frame.direction] = max(latestWritten[frame.direction], frame.arrival)
            state.withLock { state in
                state.counters.forwarded += written
                state.counters.failedWrites += frame.copies - written
                if written > 1 { state.counters.duplicated += written - 1 }
                if overtaken { state.counters.reordered += 1 }
            }
        }
    }

    /// A small random number generator with a seed (SplitMix64), so that a bridge's choices can be made again.
    private struct BridgeRandom: RandomNumberGenerator {
        private var state: UInt64

        /// A generator starting from `seed`.
        init(seed: UInt64) { state = seed }

        /// The next 64 random bits.
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var value = state
            value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
            value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
            return value ^ (value >> 31)
        }
    }
#endif
