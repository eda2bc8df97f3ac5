#if os(Linux)
    import Dispatch
    import Foundation
    import Glibc
    import XCTest

    @testable import SwiftConnect
    import SwiftConnectTesting

    /// The rtnetlink parser and state rule on hand-built messages, and the monitor against the kernel: in the test's
    /// own network namespace for its lifecycle, and in namespaces it creates (as root, with iproute2) for changes.
    final class NetlinkConnectivityMonitorTests: XCTestCase {
        // MARK: - Parsing

        func testAnUpEthernetLinkIsParsed() {
            // Given
            let flags = RTNetlink.IFF_UP | RTNetlink.IFF_RUNNING | RTNetlink.IFF_LOWER_UP
            let datagram = NetlinkBytes.link(index: 2, name: "eth0", flags: flags)
            // When
            let messages = NetlinkMessage.parse(datagram)
            // Then
            let link = NetlinkLink(index: 2, name: "eth0", hardwareType: RTNetlink.ARPHRD_ETHER, flags: flags)
            XCTAssertEqual(messages.map(\.payload), [.link(link)])
            XCTAssertEqual(messages.first?.type, RTNetlink.RTM_NEWLINK)
            XCTAssertTrue(link.isUsable)
            XCTAssertEqual(link.kind, .wiredEthernet)
        }

        func testAnAddressIsParsedPreferringTheLocalAddressToThePeer() {
            // Given: a point-to-point IPv4 address (local 10.0.0.2, peer 10.0.0.1), and an IPv6 address whose
            // full flags come in IFA_FLAGS
            let ipv4 = NetlinkBytes.address(
                index: 3, family: RTNetlink.AF_INET, prefixLength: 32, local: [10, 0, 0, 2], address: [10, 0, 0, 1])
            let ipv6Bytes: [UInt8] = [0x20, 0x01, 0x0D, 0xB8] + [UInt8](repeating: 0, count: 11) + [1]
            let ipv6 = NetlinkBytes.address(
                index: 3, family: RTNetlink.AF_INET6, prefixLength: 64, address: ipv6Bytes,
                extendedFlags: RTNetlink.IFA_F_TENTATIVE)
            // When
            let messages = NetlinkMessage.parse(ipv4 + ipv6)
            // Then
            XCTAssertEqual(
                messages.map(\.payload),
                [
                    .address(
                        NetlinkInterfaceAddress(
                            interfaceIndex: 3, family: RTNetlink.AF_INET, prefixLength: 32, bytes: [10, 0, 0, 2]),
                        flags: 0),
                    .address(
                        NetlinkInterfaceAddress(
                            interfaceIndex: 3, family: RTNetlink.AF_INET6, prefixLength: 64, bytes: ipv6Bytes),
                        flags: RTNetlink.IFA_F_TENTATIVE),
                ])
        }

        func testDoneAndErrorCarryTheirSequence() {
            // Given
            let done = NetlinkBytes.message(
                type: RTNetlink.NLMSG_DONE, sequence: 7, body: NetlinkBytes.integer(Int32(0)))
            let error = NetlinkBytes.message(
                type: RTNetlink.NLMSG_ERROR, sequence: 8,
                body: NetlinkBytes.integer(-EBUSY) + [UInt8](repeating: 0, count: 16))
            // When
            let messages = NetlinkMessage.parse(done + error)
            // Then
            XCTAssertEqual(messages.map(\.sequence), [7, 8])
            XCTAssertEqual(messages.map(\.payload), [.done(code: 0), .error(code: -EBUSY)])
        }

        /// The kernel flags the end of a dump, too, when the interfaces changed after its last part
        /// (`nl_dump_check_consistent` on NLMSG_DONE), and puts there the error that cut a dump short (EMSGSIZE: an
        /// interface too large for the buffer): such a dump was taken as complete, a table missing interfaces.
        func testTheEndOfADumpReportsAnInterruptionOrAnErrorItCarries() throws {
            // Given: the ends of dump 7: clean, flagged inconsistent, cut short by EMSGSIZE or EINTR; and another's
            let ends = [
                NetlinkBytes.message(type: RTNetlink.NLMSG_DONE, sequence: 7, body: NetlinkBytes.integer(Int32(0))),
                NetlinkBytes.message(
                    type: RTNetlink.NLMSG_DONE, flags: RTNetlink.NLM_F_DUMP_INTR, sequence: 7,
                    body: NetlinkBytes.integer(Int32(0))),
                NetlinkBytes.message(type: RTNetlink.NLMSG_DONE, sequence: 7, body: NetlinkBytes.integer(-EMSGSIZE)),
                NetlinkBytes.message(type: RTNetlink.NLMSG_DONE, sequence: 7, body: NetlinkBytes.integer(-EINTR)),
                NetlinkBytes.message(type: RTNetlink.NLMSG_DONE, sequence: 6, body: NetlinkBytes.integer(Int32(0))),
            ]
            // When
            let readings = try ends.map { try XCTUnwrap(NetlinkMessage.parse($0).first).reading(dump: 7) }
            // Then
            XCTAssertEqual(
                readings,
                [
                    .end(interrupted: false), .end(interrupted: true), .failed(errorNumber: EMSGSIZE),
                    .end(interrupted: true), .apply(interrupted: false),
                ])
            XCTAssertEqual(NetlinkMessage.parse(ends[2]).first?.payload, .done(code: -EMSGSIZE))
        }

        func testAPartOfADumpFlaggedInconsistentOrAnErrorOfItIsReadAsSuch() throws {
            // Given: a link of dump 7 flagged inconsistent, and errors answering dump 7
            let part = NetlinkBytes.message(
                type: RTNetlink.RTM_NEWLINK, flags: RTNetlink.NLM_F_DUMP_INTR, sequence: 7,
                body: Array(NetlinkBytes.link(index: 2, name: "eth0", flags: RTNetlink.IFF_UP).dropFirst(16)))
            let busy = NetlinkBytes.message(
                type: RTNetlink.NLMSG_ERROR, sequence: 7,
                body: NetlinkBytes.integer(-EBUSY) + [UInt8](repeating: 0, count: 16))
            let denied = NetlinkBytes.message(
                type: RTNetlink.NLMSG_ERROR, sequence: 7,
                body: NetlinkBytes.integer(-EPERM) + [UInt8](repeating: 0, count: 16))
            // When
            let readings = try [part, busy, denied].map {
                try XCTUnwrap(NetlinkMessage.parse($0).first).reading(dump: 7)
            }
            // Then
            XCTAssertEqual(readings, [.apply(interrupted: true), .end(interrupted: true), .failed(errorNumber: EPERM)])
        }

        /// The code of an end or error answering a dump is a negative `errno`; one that is not (the most negative
        /// `Int32`, whose negation traps, a positive number, or an acknowledgement never asked for) fails the dump
        /// as a protocol error instead of stopping the process or naming no error ("errno 0").
        func testAnEndOrErrorOfADumpWhoseCodeIsNoErrnoFailsItAsAProtocolError() throws {
            // Given: ends and errors of dump 7 carrying codes no kernel sends
            let codes: [Int32] = [Int32.min, 1, 4_096]
            let ends = codes.map {
                NetlinkBytes.message(type: RTNetlink.NLMSG_DONE, sequence: 7, body: NetlinkBytes.integer($0))
            }
            let errors = (codes + [0]).map {
                NetlinkBytes.message(
                    type: RTNetlink.NLMSG_ERROR, sequence: 7,
                    body: NetlinkBytes.integer($0) + [UInt8](repeating: 0, count: 16))
            }
            // When
            let readings = try (ends + errors).map { try XCTUnwrap(NetlinkMessage.parse($0).first).reading(dump: 7) }
            // Then: a positive end is an end as before (the kernel's own result is never positive)
            XCTAssertEqual(
                readings,
                [
                    .failed(errorNumber: EPROTO), .end(interrupted: false), .end(interrupted: false),
                    .failed(errorNumber: EPROTO), .failed(errorNumber: EPROTO), .failed(errorNumber: EPROTO),
                    .failed(errorNumber: EPROTO),
                ])
        }

        func testTheDumpRequestIsAHeaderAndAnEmptyFamilyHeader() {
            // When
            let link = NetlinkRequest.dump(RTNetlink.RTM_GETLINK, sequence: 5)
            let address = NetlinkRequest.dump(RTNetlink.RTM_GETADDR, sequence: 6)
            // Then: nlmsghdr (len, type, flags REQUEST|DUMP, seq, pid 0), then a zeroed ifinfomsg or ifaddrmsg
            XCTAssertEqual(
                link,
                NetlinkBytes.integer(UInt32(32)) + NetlinkBytes.integer(UInt16(18))
                    + NetlinkBytes.integer(UInt16(0x301))
                    + NetlinkBytes.integer(UInt32(5)) + [UInt8](repeating: 0, count: 4 + 16))
            XCTAssertEqual(address.count, 24)
            XCTAssertEqual(Array(address[4..<6]), NetlinkBytes.integer(UInt16(22)))
        }

        // MARK: - Malformed input

        func testAMessageTooShortForItsTypeIsSkippedAndTheNextOneRead() {
            // Given: a NEWLINK whose body is 4 bytes (an ifinfomsg needs 16), then a valid one
            let short = NetlinkBytes.message(type: RTNetlink.RTM_NEWLINK, body: [0, 0, 1, 0])
            let valid = NetlinkBytes.link(index: 2, name: "eth0", flags: RTNetlink.IFF_UP)
            // When
            let messages = NetlinkMessage.parse(short + valid)
            // Then
            XCTAssertEqual(messages.count, 1)
            guard case .link(let link) = messages.first?.payload else { return XCTFail("\(messages)") }
            XCTAssertEqual(link.index, 2)
        }

        func testALengthThatDoesNotFitEndsTheDatagram() {
            // Given: a header claiming 100 bytes in a 40-byte datagram, and one claiming fewer than a header
            var tooLong = NetlinkBytes.link(index: 2, name: "eth0", flags: RTNetlink.IFF_UP)
            tooLong.replaceSubrange(0..<4, with: NetlinkBytes.integer(UInt32(100)))
            var tooShort = NetlinkBytes.link(index: 2, name: "eth0", flags: RTNetlink.IFF_UP)
            tooShort.replaceSubrange(0..<4, with: NetlinkBytes.integer(UInt32(8)))
            // Then
            XCTAssertEqual(NetlinkMessage.parse(tooLong), [])
            XCTAssertEqual(NetlinkMessage.parse(tooShort), [])
            XCTAssertEqual(NetlinkMessage.parse([]), [])
            XCTAssertEqual(NetlinkMessage.parse([1, 2, 3]), [])
        }

        func testAnAttributeThatOverrunsItsMessageIsIgnored() {
            // Given: an address whose only attribute claims 200 bytes
            var body = NetlinkBytes.addressHeader(index: 2, family: RTNetlink.AF_INET, prefixLength: 24)
            body += NetlinkBytes.integer(UInt16(200)) + NetlinkBytes.integer(RTNetlink.IFA_LOCAL) + [10, 0, 0, 2]
            // When
            let messages = NetlinkMessage.parse(NetlinkBytes.message(type: RTNetlink.RTM_NEWADDR, body: body))
            // Then: no address could be read, so there is no message
            XCTAssertEqual(messages, [])
        }

        func testAnAddressOfTheWrongLengthForItsFamilyIsSkipped() {
            // Given: an "IPv4" address of 16 bytes
            let datagram = NetlinkBytes.address(
                index: 2, family: RTNetlink.AF_INET, prefixLength: 24, address: [UInt8](repeating: 10, count: 16))
            // Then
            XCTAssertEqual(NetlinkMessage.parse(datagram), [])
        }

        func testEveryTruncationAndCorruptionOfADatagramParsesWithoutTrapping() {
            // Given: a realistic datagram
            let datagram =
                NetlinkBytes.link(index: 2, name: "eth0", flags: RTNetlink.IFF_UP | RTNetlink.IFF_RUNNING)
                + NetlinkBytes.address(index: 2, family: RTNetlink.AF_INET, prefixLength: 24, local: [10, 0, 0, 2])
                + NetlinkBytes.message(type: RTNetlink.NLMSG_DONE, body: NetlinkBytes.integer(Int32(0)))
            // When / Then: every prefix parses, to at most the whole datagram's messages
            let whole = NetlinkMessage.parse(datagram)
            XCTAssertEqual(whole.count, 3)
            for length in 0...datagram.count {
                XCTAssertLessThanOrEqual(NetlinkMessage.parse(Array(datagram.prefix(length))).count, whole.count)
            }
            // And every single-byte corruption, and random bytes, parse too (a trap would end the test run)
            var generator = SeededGenerator(seed: 0x5EED)
            for index in datagram.indices {
                for value: UInt8 in [0, 1, 3, 4, 0x7F, 0xFF, UInt8.random(in: 0...255, using: &generator)] {
                    var corrupted = datagram
                    corrupted[index] = value
                    _ = NetlinkBytes.table(corrupted).connectivity
                }
            }
            for _ in 0..<2_000 {
                let noise = (0..<Int.random(in: 0...96, using: &generator)).map { _ in
                    UInt8.random(in: 0...255, using: &generator)
                }
                _ = NetlinkBytes.table(noise).connectivity
            }
        }

        // MARK: - State rule

        func testAnUpEthernetInterfaceWithAPrivateAddressIsConnected() {
            let table = NetlinkBytes.table(
                NetlinkBytes.link(index: 2, name: "eth0", flags: NetlinkBytes.upAndRunning),
                NetlinkBytes.address(index: 2, family: RTNetlink.AF_INET, prefixLength: 24, local: [192, 168, 1, 10]))
            XCTAssertEqual(table.connectivity, Connectivity(isConnected: true, interfaces: [.wiredEthernet]))
        }

        func testOnlyLoopbackUpIsOffline() {
            // Given: lo, up, with 127.0.0.1 and ::1; eth0 down with an address
            let table = NetlinkBytes.table(
                NetlinkBytes.link(
                    index: 1, name: "lo", type: RTNetlink.ARPHRD_LOOPBACK,
                    flags: NetlinkBytes.upAndRunning | RTNetlink.IFF_LOOPBACK),
                NetlinkBytes.address(index: 1, family: RTNetlink.AF_INET, prefixLength: 8, local: [127, 0, 0, 1]),
                NetlinkBytes.address(
                    index: 1, family: RTNetlink.AF_INET6, prefixLength: 128, address: NetlinkBytes.ipv6Loopback),
                NetlinkBytes.link(index: 2, name: "eth0", flags: 0),
                NetlinkBytes.address(index: 2, family: RTNetlink.AF_INET, prefixLength: 24, local: [10, 1, 1, 2]))
            XCTAssertEqual(table.connectivity, .disconnected)
        }

        func testAnInterfaceUpWithoutCarrierIsOffline() {
            // Given: IFF_UP but neither IFF_RUNNING nor IFF_LOWER_UP (a cable unplugged)
            let table = NetlinkBytes.table(
                NetlinkBytes.link(index: 2, name: "eth0", flags: RTNetlink.IFF_UP),
                NetlinkBytes.address(index: 2, family: RTNetlink.AF_INET, prefixLength: 24, local: [10, 1, 1, 2]))
            XCTAssertEqual(table.connectivity, .disconnected)
        }

        func testLinkLocalTentativeAndLoopbackAddressesDoNotCount() {
            // Given: eth0 up with only fe80::1, 169.254.3.4, a tentative global IPv6 address, and 127.0.0.2
            var table = NetlinkBytes.table(
                NetlinkBytes.link(index: 2, name: "eth0", flags: NetlinkBytes.upAndRunning),
                NetlinkBytes.address(
                    index: 2, family: RTNetlink.AF_INET6, prefixLength: 64,
                    address: [0xFE, 0x80] + [UInt8](repeating: 0, count: 13) + [1]),
                NetlinkBytes.address(index: 2, family: RTNetlink.AF_INET, prefixLength: 16, local: [169, 254, 3, 4]),
                NetlinkBytes.address(
                    index: 2, family: RTNetlink.AF_INET6, prefixLength: 64, address: NetlinkBytes.ipv6Global,
                    extendedFlags: RTNetlink.IFA_F_TENTATIVE),
                NetlinkBytes.address(index: 2, family: RTNetlink.AF_INET, prefixLength: 8, local: [127, 0, 0, 2]))
            XCTAssertEqual(table.connectivity, .disconnected)
            // When: duplicate address detection completes (the kernel sends the address again, without the flag)
            NetlinkBytes.apply(
                NetlinkBytes.address(
                    index: 2, family: RTNetlink.AF_INET6, prefixLength: 64, address: NetlinkBytes.ipv6Global),
                to: &table)
            // Then
            XCTAssertEqual(table.connectivity, Connectivity(isConnected: true, interfaces: [.wiredEthernet]))
        }

        func testInterfaceKindsFollowHardwareTypeAndName() {
            let table = NetlinkBytes.table(
                NetlinkBytes.link(index: 2, name: "wlp2s0", flags: NetlinkBytes.upAndRunning),
                NetlinkBytes.address(index: 2, family: RTNetlink.AF_INET, prefixLength: 24, local: [192, 168, 1, 5]),
                NetlinkBytes.link(index: 3, name: "tun0", type: 0xFFFE, flags: NetlinkBytes.upAndRunning),
                NetlinkBytes.address(index: 3, family: RTNetlink.AF_INET, prefixLength: 32, local: [10, 8, 0, 2]),
                NetlinkBytes.link(index: 4, name: "enp0s31f6", flags: NetlinkBytes.upAndRunning),
                NetlinkBytes.address(
                    index: 4, family: RTNetlink.AF_INET6, prefixLength: 64, address: NetlinkBytes.ipv6Global))
            XCTAssertEqual(
                table.connectivity, Connectivity(isConnected: true, interfaces: [.wifi, .other, .wiredEthernet]))
        }

        /// A bridge (Docker's `docker0`) or a VXLAN presents Ethernet frames but is no cable: `.other`, as the
        /// documentation says, where it counted as wired Ethernet. A VLAN on a port, and a veth (a container's `eth0`),
        /// are wired.
        func testSoftwareLinksOfEthernetFramesAreOtherThanWired() {
            let table = NetlinkBytes.table(
                NetlinkBytes.link(index: 2, name: "docker0", flags: NetlinkBytes.upAndRunning, softwareKind: "bridge"),
                NetlinkBytes.address(index: 2, family: RTNetlink.AF_INET, prefixLength: 16, local: [172, 17, 0, 1]),
                NetlinkBytes.link(index: 3, name: "vxlan7", flags: NetlinkBytes.upAndRunning, softwareKind: "vxlan"),
                NetlinkBytes.address(index: 3, family: RTNetlink.AF_INET, prefixLength: 24, local: [10, 0, 3, 1]))
            XCTAssertEqual(table.connectivity, Connectivity(isConnected: true, interfaces: [.other]))
            let wired = NetlinkBytes.table(
                NetlinkBytes.link(index: 4, name: "eth0.10", flags: NetlinkBytes.upAndRunning, softwareKind: "vlan"),
                NetlinkBytes.address(index: 4, family: RTNetlink.AF_INET, prefixLength: 24, local: [10, 10, 0, 2]),
                NetlinkBytes.link(index: 5, name: "eth0", flags: NetlinkBytes.upAndRunning, softwareKind: "veth"),
                NetlinkBytes.address(index: 5, family: RTNetlink.AF_INET, prefixLength: 24, local: [10, 0, 4, 2]))
            XCTAssertEqual(wired.connectivity, Connectivity(isConnected: true, interfaces: [.wiredEthernet]))
        }

        func testRemovalsAreApplied() {
            // Given: two connected interfaces
            var table = NetlinkBytes.table(
                NetlinkBytes.link(index: 2, name: "eth0", flags: NetlinkBytes.upAndRunning),
                NetlinkBytes.address(index: 2, family: RTNetlink.AF_INET, prefixLength: 24, local: [10, 1, 1, 2]),
                NetlinkBytes.link(index: 3, name: "wlan0", flags: NetlinkBytes.upAndRunning),
                NetlinkBytes.address(index: 3, family: RTNetlink.AF_INET, prefixLength: 24, local: [10, 2, 2, 2]))
            func apply(_ datagram: [UInt8]) { NetlinkBytes.apply(datagram, to: &table) }
            // When: a bridge-port DELLINK (AF_BRIDGE) for eth0, which leaves eth0 in place
            apply(NetlinkBytes.link(index: 2, name: "eth0", flags: 0, family: 7, messageType: RTNetlink.RTM_DELLINK))
            XCTAssertEqual(table.connectivity.interfaces, [.wiredEthernet, .wifi])
            // When: eth0's address goes
            apply(
                NetlinkBytes.address(
                    index: 2, family: RTNetlink.AF_INET, prefixLength: 24, local: [10, 1, 1, 2],
                    type: RTNetlink.RTM_DELADDR))
            XCTAssertEqual(table.connectivity, Connectivity(isConnected: true, interfaces: [.wifi]))
            // When: wlan0 goes (its address with it)
            apply(NetlinkBytes.link(index: 3, name: "wlan0", flags: 0, messageType: RTNetlink.RTM_DELLINK))
            XCTAssertEqual(table.connectivity, .disconnected)
            XCTAssertNil(table.links[3])
            XCTAssertTrue(table.addresses.keys.allSatisfy { $0.interfaceIndex != 3 })
        }

        // MARK: - Lifecycle, in the test's own namespace

        func testTheMonitorReadsTheStateAtOnceAndStopsPromptly() throws {
            // Given
            let descriptorsBefore = try Self.openDescriptorCount()
            let monitor: NetlinkConnectivityMonitor = try SystemConnectivityMonitor()
            let observation = monitor.observe { _ in }
            _ = monitor.current
            XCTAssertEqual(try Self.openDescriptorCount(), descriptorsBefore + 3, "the socket and the wake-up pair")
            // When
            let start = DispatchTime.now()
            monitor.stop()
            let elapsed = Self.milliseconds(since: start)
            monitor.stop()
            // Then
            print("NetlinkConnectivityMonitorTests: stop() took \(String(format: "%.2f", elapsed)) ms")
            // How prompt is a figure, printed above, not an assertion (the machine may be busy); a stop that waited for
            // the kernel's next message would wait for one a quiet namespace never sends.
            XCTAssertLessThan(elapsed, 5_000)
            XCTAssertEqual(try Self.openDescriptorCount(), descriptorsBefore, "stop() closed the descriptors")
            observation.cancel()
        }

        func testReleasedMonitorsLeaveNoDescriptorsOrThreads() throws {
            // Given
            let descriptorsBefore = try Self.openDescriptorCount()
            let readersBefore = try Self.readerThreadCount()
            let readerIDsBefore = try Self.readerThreadIDs()
            // When: 50 monitors created, observed and released without stop()
            for index in 0..<50 {
                let monitor = try NetlinkConnectivityMonitor()
                let observation = monitor.observe { _ in }
                _ = monitor.current
                if index == 0 {
                    // The count sees a live monitor's thread: it is named before `init` returns.
                    XCTAssertEqual(try Self.readerThreadCount(), readersBefore + 1)
                }
                withExtendedLifetime(observation) {}
            }
            // Then: releasing waits for the thread to close its descriptors; the thread itself exits a moment later
            // (it is not joined), so its exit is waited for, as the kernel reports it. Only the monitors' own threads
            // are followed: the process's other threads (Dispatch's workers, say) come and go by themselves.
            XCTAssertEqual(try Self.openDescriptorCount(), descriptorsBefore)
            let released = try Self.readerThreadIDs().subtracting(readerIDsBefore)
            let outliving = try Self.threadsStillRunning(afterWaitingFor: released, timeout: 10)
            XCTAssertEqual(outliving, [], "a monitor's reader thread outlived it")
        }

        // MARK: - Changes, in namespaces of the test's own

        func testANamespaceWithOnlyLoopbackIsOfflineUntilAnInterfaceComesUp() throws {
            // Given: a namespace with only lo up
            let namespace = try makeNamespace()
            let monitor = try Self.makeMonitor(inNamespace: namespace.name)
            let recorder = ConnectivityRecorder()
            let observation = monitor.observe { recorder.record($0) }
            addTeardownBlock { observation.cancel() }
            // Then
            XCTAssertEqual(monitor.current, .disconnected)
            // When: a veth end is moved in, given an address and brought up
            let start = DispatchTime.now()
            try namespace.addVeth()
            // Then
            let seen = recorder.wait(timeout: 10, after: start) { $0.isConnected }
            XCTAssertEqual(seen?.state, Connectivity(isConnected: true, interfaces: [.wiredEthernet]))
            XCTAssertEqual(monitor.current, Connectivity(isConnected: true, interfaces: [.wiredEthernet]))
            print(
                "NetlinkConnectivityMonitorTests: an interface moved in and brought up seen after "
                    + "\(Self.format(seen?.delay)) ms")
        }

        func testALinkGoingDownAndUpIsSeen() throws {
            // Given: a namespace connected over a veth
            let namespace = try makeNamespace()
            try namespace.addVeth()
            let monitor = try Self.makeMonitor(inNamespace: namespace.name)
            let recorder = ConnectivityRecorder()
            let observation = monitor.observe { recorder.record($0) }
            addTeardownBlock { observation.cancel() }
            // The carrier may still be coming up (the kernel sets it asynchronously): wait for it
            if !monitor.current.isConnected {
                print("NetlinkConnectivityMonitorTests: the carrier was not up yet when the monitor started")
                XCTAssertNotNil(recorder.wait(timeout: 10, after: .now()) { $0.isConnected })
            }
            XCTAssertEqual(monitor.current, Connectivity(isConnected: true, interfaces: [.wiredEthernet]))

            // When: the namespace's end goes down
            var start = DispatchTime.now()
            var command = try namespace.ip("-n", namespace.name, "link", "set", namespace.namespaceEnd, "down")
            // Then
            let down = recorder.wait(timeout: 10, after: start) { !$0.isConnected }
            XCTAssertEqual(down?.state, .disconnected)
            XCTAssertEqual(monitor.current, .disconnected)
            print(
                "NetlinkConnectivityMonitorTests: down seen \(Self.format(down?.delay)) ms after `ip` started "
                    + "(`ip` ran \(Self.format(command)) ms)")

            // When: it comes up again (the root end stayed up, so the carrier returns)
            start = DispatchTime.now()
            command = try namespace.ip("-n", namespace.name, "link", "set", namespace.namespaceEnd, "up")
            // Then
            let up = recorder.wait(timeout: 10, after: start) { $0.isConnected }
            XCTAssertEqual(up?.state, Connectivity(isConnected: true, interfaces: [.wiredEthernet]))
            print(
                "NetlinkConnectivityMonitorTests: up seen \(Self.format(up?.delay)) ms after `ip` started "
                    + "(`ip` ran \(Self.format(command)) ms)")
        }

        func testChangesLostToAnOverflowAreRecoveredByReadingEverythingAgain() throws {
            // Given: a connected namespace
            let namespace = try makeNamespace()
            try namespace.addVeth()
            let monitor = try Self.makeMonitor(inNamespace: namespace.name)
            let recorder = ConnectivityRecorder()
            if !monitor.current.isConnected {
                let observation = monitor.observe { recorder.record($0) }
                XCTAssertNotNil(recorder.wait(timeout: 10, after: .now()) { $0.isConnected })
                observation.cancel()
            }
            // And an observer that holds the monitor's thread at the first change, until the test lets it go
            let (hold, held) = holdAtTheFirstChange(of: monitor, recording: recorder)
            defer { hold.signal() }  // Never leave the thread held, or releasing the monitor would wait for it.
            try namespace.ip("-n", namespace.name, "link", "set", namespace.namespaceEnd, "down")
            XCTAssertEqual(held.wait(timeout: .now() + 10), .success)

            // When: while it is held, 4000 changes of lo (about 6 MB of messages, the socket holds 2 MB at most)
            // overflow the socket, then the link comes up: the kernel drops its message
            try Self.flood(namespace)
            let start = DispatchTime.now()
            try namespace.ip("-n", namespace.name, "link", "set", namespace.namespaceEnd, "up")
            let drops = try Self.netlinkDrops(inNamespace: namespace.name)
            hold.signal()

            // Then: the monitor reads ENOBUFS, dumps everything again, and finds the link up
            XCTAssertGreaterThan(drops, 0, "the socket overflowed")
            let up = recorder.wait(timeout: 2, after: start) { $0.isConnected }
            XCTAssertEqual(up?.state, Connectivity(isConnected: true, interfaces: [.wiredEthernet]))
            XCTAssertEqual(monitor.current, Connectivity(isConnected: true, interfaces: [.wiredEthernet]))
            print(
                "NetlinkConnectivityMonitorTests: after an overflow (\(drops) messages dropped) up seen "
                    + "\(Self.format(up?.delay)) ms after `ip` started")
        }

        func testAnInterfaceWhoseRemovalWasLostToAnOverflowIsNotBroughtBackByQueuedMessages() throws {
            // Given: a connected namespace, and a monitor that reads one datagram per batch, so that an overflow
            // leaves changes queued behind it when it reads everything again (as a large net.core.rmem_max does)
            let namespace = try makeNamespace()
            try namespace.addVeth()
            let monitor = try Self.makeMonitor(inNamespace: namespace.name, datagramsPerBatch: 1)
            let recorder = ConnectivityRecorder()
            // And a second interface, named as Wi-Fi, up with an address: seen by the monitor
            let extra = "wl\(namespace.name.suffix(6))"
            let seeing = monitor.observe { recorder.record($0) }
            let added = DispatchTime.now()
            try namespace.ip("-n", namespace.name, "link", "add", extra, "type", "veth", "peer", "name", extra + "p")
            try namespace.ip("-n", namespace.name, "addr", "add", "10.214.\(namespace.subnet).2/24", "dev", extra)
            try namespace.ip("-n", namespace.name, "link", "set", extra + "p", "up")
            try namespace.ip("-n", namespace.name, "link", "set", extra, "up")
            XCTAssertNotNil(recorder.wait(timeout: 5, after: added) { $0.interfaces.contains(.wifi) })
            seeing.cancel()
            // And an observer that holds the monitor's thread at the next change, until the test lets it go
            let (hold, held) = holdAtTheFirstChange(of: monitor, recording: recorder)
            defer { hold.signal() }  // Never leave the thread held, or releasing the monitor would wait for it.
            try namespace.ip("-n", namespace.name, "link", "set", namespace.namespaceEnd, "down")
            XCTAssertEqual(held.wait(timeout: .now() + 10), .success)

            // When: while it is held, changes of the Wi-Fi interface are queued (its link, up and running, and an
            // address),
            try namespace.ip("-n", namespace.name, "link", "set", "dev", extra, "alias", "queued")
            try namespace.ip("-n", namespace.name, "addr", "add", "10.214.\(namespace.subnet).3/24", "dev", extra)
            // 4000 changes of lo overflow the socket,
            try Self.flood(namespace)
            let dropsBeforeRemoval = try Self.netlinkDrops(inNamespace: namespace.name)
            // the interface is removed, and the kernel drops those messages too,
            try namespace.ip("-n", namespace.name, "link", "del", extra)
            let dropsAfterRemoval = try Self.netlinkDrops(inNamespace: namespace.name)
            // and once the monitor is let go, the wired link comes up again
            let start = DispatchTime.now()
            hold.signal()
            try namespace.ip("-n", namespace.name, "link", "set", namespace.namespaceEnd, "up")

            // Then: the wired link is seen, and the removed interface is not brought back
            XCTAssertGreaterThan(dropsAfterRemoval, dropsBeforeRemoval, "the removal's messages were dropped")
            let seen = recorder.wait(timeout: 5, after: start) { $0.interfaces.contains(.wiredEthernet) }
            XCTAssertEqual(seen?.state, Connectivity(isConnected: true, interfaces: [.wiredEthernet]))
            XCTAssertEqual(monitor.current, Connectivity(isConnected: true, interfaces: [.wiredEthernet]))
        }

        func testAnObserverCanReleaseTheLastReferenceToTheMonitor() throws {
            // Given: a connected namespace, and a monitor whose only reference is in a box the observer empties
            let namespace = try makeNamespace()
            try namespace.addVeth()
            let box = Protected<NetlinkConnectivityMonitor?>(try Self.makeMonitor(inNamespace: namespace.name))
            let released = DispatchSemaphore(value: 0)
            let observation = box.snapshot!.observe { state in
                guard !state.isConnected else { return }
                // Release on the monitor's own thread: deinit must stop it without waiting for itself.
                let monitor = box.withLock { monitor in
                    defer { monitor = nil }
                    return monitor
                }
                withExtendedLifetime(monitor) {}
                released.signal()
            }
            addTeardownBlock { observation.cancel() }
            // When
            try namespace.ip("-n", namespace.name, "link", "set", namespace.namespaceEnd, "down")
            // Then
            XCTAssertEqual(released.wait(timeout: .now() + 10), .success, "the observer returned: no deadlock")
            XCTAssertNil(box.snapshot)
        }

        func testAStoppedMonitorReadsConnectedAndLetsTheRequestsWaitingForItGo() throws {
            // Given: a monitor offline (a namespace with only lo), an observer, and a request waiting for the network
            let namespace = try makeNamespace()
            let monitor = try Self.makeMonitor(inNamespace: namespace.name)
            XCTAssertEqual(monitor.current, .disconnected)
            let recorder = ConnectivityRecorder()
            let observation = monitor.observe { recorder.record($0) }
            addTeardownBlock { observation.cancel() }
            let transport = FakeTransport(fallback: .json(["ok": true]))
            let connect = Connect(
                transport: transport,
                middlewares: [ConnectivityMiddleware(monitor: monitor, policy: .waitForConnectivity)])
            let future = connect.request(Route(url: URL(string: "https://api.example.com/items/1")!))
            XCTAssertFalse(future.isCompleted)
            XCTAssertTrue(transport.requests.isEmpty, "sent while the monitor said offline")
            // When
            let start = DispatchTime.now()
            monitor.stop()
            // Then: a state nobody follows any more is unknown, and unknown reads as connected (as after a failure of
            // the socket): the observers hear it before stop() returns, and the waiting request goes
            XCTAssertEqual(monitor.current, .connected)
            XCTAssertEqual(recorder.wait(timeout: 0, after: start) { _ in true }?.state, .connected)
            XCTAssertNoThrow(try future.wait(timeout: 5))
            XCTAssertEqual(transport.requests.count, 1)
        }

        func testAMonitorWhoseSocketFailsReadsConnectedSaysWhyAndLetsTheWaitingRequestsGo() throws {
            // Given: a monitor offline (a namespace with only lo), an observer, a request waiting for the network, and
            // the process's logger recorded
            let namespace = try makeNamespace()
            let monitor = try Self.makeMonitor(inNamespace: namespace.name)
            XCTAssertEqual(monitor.current, .disconnected)
            let recorder = ConnectivityRecorder()
            let observation = monitor.observe { recorder.record($0) }
            addTeardownBlock { observation.cancel() }
            let logged = Recorder<String>()
            let logger = ConnectLogging.logger
            ConnectLogging.logger = RecordingLogger(lines: logged)
            defer { ConnectLogging.logger = logger }
            let transport = FakeTransport(fallback: .json(["ok": true]))
            let connect = Connect(
                transport: transport,
                middlewares: [ConnectivityMiddleware(monitor: monitor, policy: .waitForConnectivity)])
            let future = connect.request(Route(url: URL(string: "https://api.example.com/items/1")!))
            XCTAssertFalse(future.isCompleted)
            // When its socket fails
            let start = DispatchTime.now()
            monitor.failForTesting(.init(call: "recvfrom", errorNumber: EBADF))
            // Then: the state is unknown, and unknown reads as connected; the waiting request goes, and the logger
            // says why
            XCTAssertEqual(recorder.wait(timeout: 5, after: start) { _ in true }?.state, .connected)
            XCTAssertEqual(monitor.current, .connected)
            XCTAssertNoThrow(try future.wait(timeout: 5))
            XCTAssertEqual(transport.requests.count, 1)
            let warning = logged.values.first { $0.contains("NetlinkConnectivityMonitor") }
            XCTAssertTrue(warning?.contains("recvfrom failed") == true, "\(logged.values)")
            XCTAssertTrue(warning?.contains("reads as connected") == true, "\(logged.values)")
        }

        // MARK: - Helpers

        private static func milliseconds(since start: DispatchTime) -> Double {
            Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e6
        }

        private static func format(_ milliseconds: Double?) -> String {
            milliseconds.map { String(format: "%.1f", $0) } ?? "never"
        }

        private static func openDescriptorCount() throws -> Int {
            try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count
        }

        /// The process's threads named as a monitor names its reader thread.
        private static func readerThreadCount() throws -> Int {
            try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").filter { task in
                // A thread that ends meanwhile has no name to read, and is not counted.
                let name = try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)
                return name?.trimmingCharacters(in: .newlines) == "NetlinkMonitor"
            }.count
        }

        /// The ids of the process's threads named as a monitor names its reader thread.
        private static func readerThreadIDs() throws -> Set<pid_t> {
            Set(
                try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").compactMap { task in
                    // A thread that ends meanwhile has no name to read, and is not listed.
                    let name = try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)
                    return name?.trimmingCharacters(in: .newlines) == "NetlinkMonitor" ? pid_t(task) : nil
                })
        }

        /// Waits for the threads `ids` to exit, each followed through a thread pidfd (`pidfd_open` with
        /// `PIDFD_THREAD`, Linux 6.9), which becomes readable when its thread exits: an event, not a polled count of
        /// /proc, which drops an exited thread a moment after the event. Returns those still running after `timeout`
        /// seconds; skips the test on a kernel or C library without thread pidfds.
        private static func threadsStillRunning(afterWaitingFor ids: Set<pid_t>, timeout: TimeInterval) throws
            -> Set<pid_t>
        {
            typealias PidfdOpen = @convention(c) (pid_t, UInt32) -> Int32
            // Looked up at run time: glibc has it since 2.36, and Swift's Glibc module does not import its header.
            guard let symbol = dlsym(nil, "pidfd_open") else { throw skip("the C library has no pidfd_open") }
            let pidfdOpen = unsafeBitCast(symbol, to: PidfdOpen.self)
            var watched: [(id: pid_t, descriptor: Int32)] = []
            defer { for entry in watched { close(entry.descriptor) } }
            for id in ids {
                let descriptor = pidfdOpen(id, UInt32(O_EXCL))  // O_EXCL is PIDFD_THREAD.
                if descriptor >= 0 {
                    watched.append((id, descriptor))
                } else if errno == ESRCH {
                    continue  // Exited already.
                } else {
                    throw skip("pidfd_open(PIDFD_THREAD) failed with errno \(errno): Linux 6.9 or later is needed")
                }
            }
            let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(timeout * 1e9)
            var running = watched
            while !running.isEmpty {
                let now = DispatchTime.now().uptimeNanoseconds
                guard now < deadline else { break }
                var descriptors = running.map { pollfd(fd: $0.descriptor, events: Int16(POLLIN), revents: 0) }
                let ready = poll(&descriptors, nfds_t(descriptors.count), Int32((deadline - now) / 1_000_000) + 1)
                guard ready >= 0 || errno == EINTR else {
                    XCTFail("poll failed with errno \(errno)")
                    break
                }
                running = zip(running, descriptors).filter { $0.1.revents == 0 }.map(\.0)
            }
            return Set(running.map(\.id))
        }

        /// A fresh namespace with lo up, deleted (with its veth) when the test ends; skips without root or `ip`.
        private func makeNamespace() throws -> NamespaceFixture {
            guard geteuid() == 0 else { throw Self.skip("network namespaces need root") }
            guard let ip = NamespaceFixture.ipPath else {
                throw Self.skip("the `ip` command (iproute2) is not installed")
            }
            let fixture = NamespaceFixture(ip: ip)
            do {
                try fixture.ip("netns", "add", fixture.name)
            } catch {
                throw Self.skip("cannot create a network namespace: \(error)")
            }
            addTeardownBlock { fixture.destroy() }
            try fixture.ip("-n", fixture.name, "link", "set", "lo", "up")
            return fixture
        }

        private static func skip(_ reason: String) -> XCTSkip {
            print("NetlinkConnectivityMonitorTests: skipped: \(reason)")
            return XCTSkip(reason)
        }

        /// Creates a monitor on a thread that enters the namespace for the call: the socket stays in it.
        private static func makeMonitor(
            inNamespace name: String, datagramsPerBatch: Int? = nil
        ) throws -> NetlinkConnectivityMonitor {
            let outcome = Protected<Result<NetlinkConnectivityMonitor, any Error>?>(nil)
            let done = DispatchSemaphore(value: 0)
            let thread = Thread {
                let result = Result {
                    try NetworkNamespace.run(in: name) {
                        if let datagramsPerBatch {
                            return try NetlinkConnectivityMonitor(datagramsPerBatch: datagramsPerBatch)
                        }
                        return try NetlinkConnectivityMonitor()
                    }
                }
                outcome.withLock { $0 = result }
                done.signal()
            }
            thread.start()
            guard done.wait(timeout: .now() + 10) == .success, let result = outcome.snapshot else {
                throw NamespaceError("creating the monitor in \(name) did not finish")
            }
            return try result.get()
        }

        /// Observes `monitor` into `recorder`, and holds the monitor's thread in the observer at the first change
        /// until `hold` is signalled; `held` is signalled when it is held.
        private func holdAtTheFirstChange(
            of monitor: NetlinkConnectivityMonitor, recording recorder: ConnectivityRecorder
        ) -> (hold: DispatchSemaphore, held: DispatchSemaphore) {
            let hold = DispatchSemaphore(value: 0)
            let held = DispatchSemaphore(value: 0)
            let isFirstChange = Protected(true)
            let observation = monitor.observe { state in
                recorder.record(state)
                let isFirst = isFirstChange.withLock { isFirst in
                    defer { isFirst = false }
                    return isFirst
                }
                guard isFirst else { return }
                held.signal()
                hold.wait()
            }
            addTeardownBlock { observation.cancel() }
            return (hold, held)
        }

        /// 4000 changes of lo in the namespace: about 6 MB of messages, where a socket holds 2 MB at most.
        private static func flood(_ namespace: NamespaceFixture) throws {
            let flood = FileManager.default.temporaryDirectory.appendingPathComponent("\(namespace.name)-flood")
            try (0..<4_000).map { "link set dev lo alias flood\($0)\n" }.joined()
                .write(to: flood, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(at: flood) }
            try namespace.ip("-n", namespace.name, "-batch", flood.path)
        }

        /// The messages the kernel dropped for the monitor's socket in namespace `name` (the `Drops` column of
        /// `/proc/net/netlink` there, on the rtnetlink socket with the monitor's groups).
        private static func netlinkDrops(inNamespace name: String) throws -> Int {
            let outcome = Protected<Result<String, any Error>?>(nil)
            let done = DispatchSemaphore(value: 0)
            let thread = Thread {
                let result = Result {
                    try NetworkNamespace.run(in: name) {
                        try String(contentsOfFile: "/proc/thread-self/net/netlink", encoding: .utf8)
                    }
                }
                outcome.withLock { $0 = result }
                done.signal()
            }
            thread.start()
            guard done.wait(timeout: .now() + 10) == .success, let table = try outcome.snapshot?.get() else {
                throw NamespaceError("reading /proc/net/netlink in \(name) did not finish")
            }
            // sk Eth Pid Groups Rmem Wmem Dump Locks Drops Inode
            let rows = table.split(separator: "\n").dropFirst().map { $0.split(separator: " ") }
            guard let row = rows.first(where: { $0.count >= 9 && $0[1] == "0" && $0[3] == "00000111" }) else {
                throw NamespaceError("no rtnetlink socket with groups 0x111 in \(name):\n\(table)")
            }
            return Int(row[8]) ?? 0
        }
    }

    // MARK: - Fixtures

    private typealias NamespaceError = NetworkLabError

    /// A network namespace `sc-test-<id>`, and optionally a veth pair `scv<id>a` (root namespace, 10.213.x.1/24)
    /// and `scv<id>b` (in the namespace, 10.213.x.2/24).
    private final class NamespaceFixture: Sendable {
        static let ipPath = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }

        let ipExecutable: String
        let name: String
        let rootEnd: String
        let namespaceEnd: String
        let subnet: Int

        init(ip: String) {
            ipExecutable = ip
            let id = String(format: "%06x", UInt32.random(in: 0...0xFF_FFFF))
            name = "sc-test-\(id)"
            rootEnd = "scv\(id)a"
            namespaceEnd = "scv\(id)b"
            subnet = LabCommand.unusedSubnet(secondOctet: 213)
        }

        func addVeth() throws {
            try ip("link", "add", rootEnd, "type", "veth", "peer", "name", namespaceEnd)
            try ip("link", "set", namespaceEnd, "netns", name)
            try ip("-n", name, "addr", "add", "10.213.\(subnet).2/24", "dev", namespaceEnd)
            try ip("-n", name, "link", "set", namespaceEnd, "up")
            try ip("addr", "add", "10.213.\(subnet).1/24", "dev", rootEnd)
            try ip("link", "set", rootEnd, "up")
        }

        /// Deletes the veth (both ends) and the namespace; whatever is missing is skipped.
        func destroy() {
            _ = try? ip("link", "del", rootEnd)
            _ = try? ip("netns", "del", name)
        }

        /// Runs `ip` with `arguments`; returns how long it took, in milliseconds.
        @discardableResult
        func ip(_ arguments: String...) throws -> Double {
            let start = DispatchTime.now()
            let process = Process()
            process.executableURL = URL(fileURLWithPath: ipExecutable)
            process.arguments = arguments
            let errors = Pipe()
            process.standardError = errors
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            guard process.terminationStatus == 0 else {
                throw NamespaceError(
                    "ip \(arguments.joined(separator: " ")) exited with \(process.terminationStatus): \(message)")
            }
            return Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e6
        }
    }

    /// The states an observer was called with, and when, for a test to wait on.
    private final class ConnectivityRecorder: Sendable {
        private let states = Protected<[(state: Connectivity, time: DispatchTime)]>([])
        private let changed = DispatchSemaphore(value: 0)

        func record(_ state: Connectivity) {
            states.withLock { $0.append((state, .now())) }
            changed.signal()
        }

        /// The first state recorded after `start` that matches, with its delay in milliseconds since `start`;
        /// nil if none comes within `timeout` seconds.
        func wait(
            timeout: Double, after start: DispatchTime, where matches: (Connectivity) -> Bool
        ) -> (state: Connectivity, delay: Double)? {
            let deadline = DispatchTime.now() + timeout
            while true {
                let found = states.withLock { states in
                    states.first { $0.time >= start && matches($0.state) }
                }
                if let found {
                    return (found.state, Double(found.time.uptimeNanoseconds - start.uptimeNanoseconds) / 1e6)
                }
                guard changed.wait(timeout: deadline) == .success else { return nil }
            }
        }
    }

    /// Builds rtnetlink datagrams byte by byte, in the host's byte order as the kernel sends them.
    private enum NetlinkBytes {
        static let upAndRunning = RTNetlink.IFF_UP | RTNetlink.IFF_RUNNING | RTNetlink.IFF_LOWER_UP
        static let ipv6Loopback = [UInt8](repeating: 0, count: 15) + [1]
        static let ipv6Global: [UInt8] = [0x20, 0x01, 0x0D, 0xB8] + [UInt8](repeating: 0, count: 11) + [2]

        static func integer<Value: FixedWidthInteger>(_ value: Value) -> [UInt8] {
            withUnsafeBytes(of: value) { Array($0) }
        }

        static func padded(_ bytes: [UInt8]) -> [UInt8] {
            bytes + [UInt8](repeating: 0, count: RTNetlink.align(bytes.count) - bytes.count)
        }

        static func message(type: UInt16, flags: UInt16 = 0, sequence: UInt32 = 0, body: [UInt8]) -> [UInt8] {
            let header =
                integer(UInt32(16 + body.count)) + integer(type) + integer(flags) + integer(sequence)
                + integer(UInt32(0))
            return padded(header + body)
        }

        static func attribute(_ type: UInt16, _ value: [UInt8]) -> [UInt8] {
            padded(integer(UInt16(4 + value.count)) + integer(type) + value)
        }

        static func link(
            index: Int32, name: String, type hardwareType: UInt16 = RTNetlink.ARPHRD_ETHER, flags: UInt32,
            family: UInt8 = 0, messageType: UInt16 = RTNetlink.RTM_NEWLINK, softwareKind: String? = nil
        ) -> [UInt8] {
            let header =
                [family, 0] + integer(hardwareType) + integer(index) + integer(flags) + integer(UInt32(0xFFFF_FFFF))
            var body = header + attribute(RTNetlink.IFLA_IFNAME, Array(name.utf8) + [0])
            if let softwareKind {
                body += attribute(
                    RTNetlink.IFLA_LINKINFO, attribute(RTNetlink.IFLA_INFO_KIND, Array(softwareKind.utf8) + [0]))
            }
            return message(type: messageType, body: body)
        }

        static func addressHeader(index: Int32, family: UInt8, prefixLength: UInt8, flags: UInt8 = 0) -> [UInt8] {
            [family, prefixLength, flags, 0] + integer(index)
        }

        static func address(
            index: Int32, family: UInt8, prefixLength: UInt8, local: [UInt8]? = nil, address: [UInt8]? = nil,
            extendedFlags: UInt32? = nil, type: UInt16 = RTNetlink.RTM_NEWADDR
        ) -> [UInt8] {
            var body = addressHeader(
                index: index, family: family, prefixLength: prefixLength,
                flags: UInt8(truncatingIfNeeded: extendedFlags ?? 0))
            if let address { body += attribute(RTNetlink.IFA_ADDRESS, address) }
            if let local { body += attribute(RTNetlink.IFA_LOCAL, local) }
            if let extendedFlags { body += attribute(RTNetlink.IFA_FLAGS, integer(extendedFlags)) }
            return message(type: type, body: body)
        }

        static func table(_ datagrams: [UInt8]...) -> NetlinkInterfaceTable {
            var table = NetlinkInterfaceTable()
            for datagram in datagrams { apply(datagram, to: &table) }
            return table
        }

        static func apply(_ datagram: [UInt8], to table: inout NetlinkInterfaceTable) {
            for message in NetlinkMessage.parse(datagram) { table.apply(message) }
        }
    }

    /// A small deterministic generator (SplitMix64), so the corruption test is the same on every run.
    private struct SeededGenerator: RandomNumberGenerator {
        var state: UInt64
        init(seed: UInt64) { state = seed }

        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }
#endif
