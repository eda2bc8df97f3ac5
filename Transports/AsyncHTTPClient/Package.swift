// swift-tools-version:6.0
import PackageDescription

// SwiftConnect's AsyncHTTPClient engine, in a package of its own so the core keeps zero dependencies.
let package = Package(
    name: "SwiftConnectAsyncHTTPClient",
    platforms: [.macOS(.v10_15), .iOS(.v13), .tvOS(.v13), .watchOS(.v6)],
    products: [
        .library(name: "SwiftConnectAsyncHTTPClient", targets: ["SwiftConnectAsyncHTTPClient"])
    ],
    dependencies: [
        .package(name: "SwiftConnect", path: "../.."),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        // Certificate pinning: validating a pinned host's chain.
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        // HTTP/2's errors; in the tests, a loopback TLS server (HTTP/1.1 and HTTP/2 by ALPN) with a CA made at run
        // time.
        .package(url: "https://github.com/apple/swift-nio-http2", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
    ],
    targets: [
        .target(
            name: "SwiftConnectAsyncHTTPClient",
            dependencies: [
                .product(name: "SwiftConnect", package: "SwiftConnect"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOHTTPCompression", package: "swift-nio-extras"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                // Classifying an HTTP/2 stream's reset (`NIOHTTP2Errors.StreamClosed`); AsyncHTTPClient depends on it.
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                // Pinning: the chain of a pinned host is validated here (NIOSSL hands over the raw chain).
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        .testTarget(
            name: "SwiftConnectAsyncHTTPClientTests",
            dependencies: [
                "SwiftConnectAsyncHTTPClient",
                .product(name: "SwiftConnect", package: "SwiftConnect"),
                .product(name: "SwiftConnectTesting", package: "SwiftConnect"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
