// swift-tools-version:6.1
import PackageDescription

// The benchmarks of SwiftConnect, in their own package so the library itself keeps zero dependencies.
// Run them with `swift package benchmark` from this folder (or `scripts/benchmarks.sh` from the root).
let package = Package(
    name: "SwiftConnectBenchmarks",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(name: "SwiftConnect", path: ".."),
        // Only the malloc interposer: it counts allocations without jemalloc. The default traits would
        // also pull in a runtime interposer that is not needed here.
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/OpenCombine/OpenCombine", from: "0.14.0"),
        // The AsyncHTTPClient engine, measured beside raw AsyncHTTPClient (Engines/ benchmarks).
        .package(name: "SwiftConnectAsyncHTTPClient", path: "../Transports/AsyncHTTPClient"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        // The OpenAPI transport, measured beside Connect used directly (OpenAPI/ benchmarks).
        .package(name: "SwiftConnectOpenAPI", path: "../Integrations/OpenAPI"),
        .package(url: "https://github.com/apple/swift-openapi-runtime", from: "1.13.4"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        // The official AsyncHTTPClient transport of swift-openapi-runtime, beside raw AsyncHTTPClient: what the
        // OpenAPI runtime's own types cost any transport.
        .package(url: "https://github.com/swift-server/swift-openapi-async-http-client", from: "1.5.0"),
        // The tracing integration, with a no-op tracer beside no integration (Observability/ benchmarks).
        .package(name: "SwiftConnectTracing", path: "../Integrations/Tracing"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
    ],
    targets: [
        // What the benchmarks and PipelineInstructions share: the payloads and the pipeline's two ways of making a request.
        .target(
            name: "BenchmarkFixtures",
            dependencies: [
                .product(name: "SwiftConnect", package: "SwiftConnect"),
                .product(name: "SwiftConnectTesting", package: "SwiftConnect"),
            ],
            path: "Sources/BenchmarkFixtures",
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        // The pipeline's instructions and allocations per request, counted under valgrind by scripts/benchmarks.sh
        // (no malloc interposer, so it runs under valgrind).
        .executableTarget(
            name: "PipelineInstructions",
            dependencies: ["BenchmarkFixtures"],
            path: "Sources/PipelineInstructions",
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        .executableTarget(
            name: "SwiftConnectBenchmarks",
            dependencies: [
                "BenchmarkFixtures",
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "SwiftConnect", package: "SwiftConnect"),
                .product(name: "SwiftConnectTesting", package: "SwiftConnect"),
                .product(name: "OpenCombine", package: "OpenCombine"),
                .product(name: "OpenCombineDispatch", package: "OpenCombine"),
                .product(name: "SwiftConnectAsyncHTTPClient", package: "SwiftConnectAsyncHTTPClient"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "SwiftConnectOpenAPI", package: "SwiftConnectOpenAPI"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "OpenAPIAsyncHTTPClient", package: "swift-openapi-async-http-client"),
                .product(name: "SwiftConnectTracing", package: "SwiftConnectTracing"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            path: "Benchmarks/SwiftConnectBenchmarks",
            swiftSettings: [.swiftLanguageMode(.v5)],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ]
)
