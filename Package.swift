// swift-tools-version:6.0
import PackageDescription

// pinproxy is Linux-only: its event loops use epoll and eventfd through Glibc.
// Stop here, with the reason, rather than after a page of compiler errors.
// (The check runs on the build host; build on Linux or with docker/Dockerfile.)
#if !os(Linux)
#error("pinproxy builds and runs on Linux only (epoll, eventfd, Glibc); build it on Linux or with docker/Dockerfile")
#endif

let package = Package(
    name: "pinproxy",
    products: [
        .executable(name: "pinproxy", targets: ["pinproxy"]),
        .library(name: "PinproxyBase", targets: ["PinproxyBase"]),
        .library(name: "PinproxyCertificates", targets: ["PinproxyCertificates"]),
        .library(name: "PinproxyPinning", targets: ["PinproxyPinning"]),
        .library(name: "PinproxyHTTP1", targets: ["PinproxyHTTP1"]),
        .library(name: "PinproxyHTTP2", targets: ["PinproxyHTTP2"]),
        .library(name: "PinproxyProxy", targets: ["PinproxyProxy"]),
        .library(name: "PinproxyHarness", targets: ["PinproxyHarness"]),
        // The fuzz targets' checks, for the libFuzzer executables of Fuzz/Package.swift.
        .library(name: "PinproxyFuzzing", targets: ["PinproxyFuzzing"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        // Header-only bindings to system libraries.
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]
        ),
        // nghttp2, imported by PinproxyHTTP2 alone.
        .systemLibrary(
            name: "CNGHTTP2",
            pkgConfig: "libnghttp2",
            providers: [.apt(["libnghttp2-dev"])]
        ),
        // Compiled C for OpenSSL: prefixed wrappers for its macros and legacy
        // fast paths that Swift cannot import directly. Only PinproxyCertificates,
        // PinproxyTLS and PinproxyPinning import it (docs/architecture.md).
        .target(
            name: "CPinproxyShims",
            dependencies: ["COpenSSL"],
            cSettings: [.define("OPENSSL_SUPPRESS_DEPRECATED")]
        ),
        // Compiled C for the proxy's event loops: epoll and eventfd, whose packed
        // struct and flag macros Swift's Glibc module does not carry. No OpenSSL.
        .target(name: "CPinproxyIO"),
        // Errors, host names, locking, file I/O and byte text: what every
        // other module may use. No C library, no other pinproxy module.
        .target(name: "PinproxyBase"),
        // Re-exports PinproxyBase (see docs/architecture.md).
        .target(
            name: "PinproxyCertificates",
            dependencies: ["COpenSSL", "CPinproxyShims", "PinproxyBase"]
        ),
        .target(
            name: "PinproxyTLS",
            dependencies: ["COpenSSL", "CPinproxyShims", "PinproxyCertificates"]
        ),
        // HTTP/1.1 parsing, serializing and forwarding rules, on bytes alone:
        // no sockets, no TLS, so it can be fuzzed and benchmarked by itself.
        .target(name: "PinproxyHTTP1", dependencies: ["PinproxyBase"]),
        // HTTP/2 sessions over nghttp2, bytes in and bytes out (no sockets),
        // and the translation of heads to and from HTTP/1.1.
        .target(name: "PinproxyHTTP2", dependencies: ["CNGHTTP2", "CPinproxyIO", "PinproxyBase", "PinproxyHTTP1"]),
        .target(
            name: "PinproxyProxy",
            dependencies: [
                "CPinproxyIO", "PinproxyBase", "PinproxyCertificates", "PinproxyHTTP1", "PinproxyHTTP2", "PinproxyTLS",
                .product(name: "Logging", package: "swift-log"),
            ]
            // No unsafeFlags: they would make every product of this package
            // impossible to depend on. The run-time exclusivity checks they
            // used to skip cost about 6% of the user-space instructions per
            // keep-alive request (docs/architecture.md, "A connection's layers").
        ),
        .target(
            name: "PinproxyPinning",
            dependencies: ["COpenSSL", "CPinproxyShims", "PinproxyCertificates"]
        ),
        // The pinning harness: a generated world, its origin, the proxy and the
        // built-in clients, checking a policy through live TLS.
        .target(
            name: "PinproxyHarness",
            dependencies: [
                "PinproxyCertificates", "PinproxyHTTP1", "PinproxyHTTP2", "PinproxyPinning", "PinproxyProxy", "PinproxyTLS",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // `pinproxy bench`: timed runs that spawn nginx, wrk and curl, kept
        // out of the libraries so that importing them never ships a benchmark.
        .target(
            name: "PinproxyBench",
            dependencies: [
                "PinproxyBase", "PinproxyCertificates", "PinproxyHTTP1", "PinproxyProxy", "PinproxyTLS",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "pinproxy",
            dependencies: [
                "PinproxyBench", "PinproxyCertificates", "PinproxyPinning", "PinproxyProxy", "PinproxyTLS", "PinproxyHarness",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The fuzz targets: one check per input format, called by the libFuzzer
        // executables (Fuzz/Package.swift) and by the regression tests alike.
        .target(
            name: "PinproxyFuzzing",
            dependencies: [
                "PinproxyCertificates", "PinproxyPinning", "PinproxyHTTP1", "PinproxyHTTP2", "PinproxyProxy", "PinproxyTLS",
            ],
            path: "Fuzz/Targets"
        ),
        // Process, temporary-directory and binary helpers shared by the test targets.
        .target(name: "PinproxyTestSupport", path: "Tests/PinproxyTestSupport"),
        .testTarget(name: "PinproxyBaseTests", dependencies: ["PinproxyBase", "PinproxyTestSupport"]),
        // The TLS engine between two in-memory endpoints: no socket.
        .testTarget(
            name: "PinproxyTLSTests",
            dependencies: ["PinproxyTLS", "PinproxyCertificates", "COpenSSL", "CPinproxyShims", "PinproxyTestSupport"]
        ),
        .testTarget(name: "PinproxyHTTP1Tests", dependencies: ["PinproxyHTTP1", "PinproxyBase", "PinproxyTestSupport"]),
        .testTarget(name: "PinproxyHTTP2Tests", dependencies: ["PinproxyHTTP2", "PinproxyHTTP1", "CPinproxyIO", "PinproxyTestSupport"]),
        .testTarget(name: "PinproxyCertificatesTests", dependencies: ["PinproxyCertificates", "PinproxyTestSupport"]),
        .testTarget(name: "PinproxyPinningTests", dependencies: ["PinproxyPinning", "PinproxyHarness", "PinproxyCertificates", "PinproxyTestSupport"]),
        .testTarget(
            name: "PinproxyProxyTests",
            dependencies: [
                "PinproxyProxy", "PinproxyBench", "PinproxyTLS", "PinproxyHTTP2", "PinproxyCertificates", "PinproxyTestSupport",
                .product(name: "Logging", package: "swift-log"),
            ],
            exclude: ["Support/origin.py", "Support/misbehaving_upstream.py", "Support/h2_origin.py",
                      "Support/h2_client.py", "Support/h2_raw_client.py", "Support/h2_bare_client.py",
                      "Support/h2_frames_origin.py", "Support/test_lifetime.py", "Support/h2_tls.py",
                      "Support/closing_origin.py", "Support/h2_upload_stall.py", "Support/leave_during_upstream.py"]
        ),
        .testTarget(
            name: "PinproxyHarnessTests",
            dependencies: ["PinproxyBase", "PinproxyHarness", "PinproxyPinning", "PinproxyProxy", "PinproxyCertificates", "PinproxyTestSupport"]
        ),
        .testTarget(name: "PinproxyBenchTests", dependencies: ["PinproxyBench", "PinproxyHTTP1", "PinproxyProxy", "PinproxyTestSupport"]),
        .testTarget(name: "PinproxyCLITests", dependencies: ["PinproxyCertificates", "PinproxyTestSupport"]),
        .testTarget(name: "PinproxyFuzzingTests", dependencies: ["PinproxyFuzzing", "PinproxyTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
