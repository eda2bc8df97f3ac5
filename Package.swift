// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "SwiftConnect",
    platforms: [
        .macOS(.v10_15),
        .iOS(.v13),
        .tvOS(.v13),
        .watchOS(.v6),
    ],
    products: [
        .library(name: "SwiftConnect", targets: ["SwiftConnect"]),
        .library(name: "SwiftConnectTesting", targets: ["SwiftConnectTesting"]),
        .executable(name: "Playground", targets: ["Playground"]),
    ],
    targets: [
        // The system's zlib (a system library, not a package dependency): the core decodes gzip and deflate bodies
        // for engines that hand them over as sent (Transport/Engine/ContentDecoding.swift).
        .systemLibrary(
            name: "CSwiftConnectZlib",
            providers: [.apt(["zlib1g-dev"]), .yum(["zlib-devel"])]
        ),
        .target(
            name: "SwiftConnect",
            dependencies: ["CSwiftConnectZlib"],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        .target(
            name: "SwiftConnectTesting",
            dependencies: ["SwiftConnect"],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        .executableTarget(
            name: "Playground",
            dependencies: ["SwiftConnect", "SwiftConnectTesting"],
            path: "Playground"
        ),
        .testTarget(
            name: "SwiftConnectTests",
            dependencies: ["SwiftConnect", "SwiftConnectTesting", "CSwiftConnectZlib"]
        ),
        .testTarget(
            name: "SwiftConnectTestingTests",
            dependencies: ["SwiftConnect", "SwiftConnectTesting"]
        ),
        // The integration tests of SwiftConnectTests again (symbolic links under Shared/), each run twice: recording
        // through RecordingTransport, then replaying with nothing sent (ReplayHarness.swift).
        .testTarget(
            name: "SwiftConnectReplayTests",
            dependencies: ["SwiftConnect", "SwiftConnectTesting"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
