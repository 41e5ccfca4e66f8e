// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "pinproxy",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "pinproxy", targets: ["pinproxy"]),
        .library(name: "PinproxyCertificates", targets: ["PinproxyCertificates"]),
        .library(name: "PinproxyPinning", targets: ["PinproxyPinning"]),
        .library(name: "PinproxyProxy", targets: ["PinproxyProxy"]),
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
        .systemLibrary(
            name: "CNGHTTP2",
            pkgConfig: "libnghttp2",
            providers: [.apt(["libnghttp2-dev"])]
        ),
        // The one compiled C target: prefixed wrappers for OpenSSL macros and
        // legacy fast paths that Swift cannot import directly.
        .target(
            name: "CPinproxyShims",
            dependencies: ["COpenSSL"],
            cSettings: [.define("OPENSSL_SUPPRESS_DEPRECATED")]
        ),
        .target(
            name: "PinproxyCertificates",
            dependencies: [
                "COpenSSL", "CPinproxyShims",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "PinproxyTLS",
            dependencies: ["COpenSSL", "CPinproxyShims", "PinproxyCertificates"]
        ),
        .target(
            name: "PinproxyProxy",
            dependencies: [
                "COpenSSL", "CPinproxyShims", "CNGHTTP2", "PinproxyCertificates", "PinproxyTLS",
                .product(name: "Logging", package: "swift-log"),
            ],
            // Release builds skip the run-time exclusivity checks on the
            // per-request path (about 1% of the proxy's CPU); state is
            // confined to one loop thread, and debug builds, which the tests
            // run, keep the checks.
            swiftSettings: [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]
        ),
        .target(
            name: "PinproxyPinning",
            dependencies: ["COpenSSL", "CPinproxyShims", "PinproxyCertificates"]
        ),
        .executableTarget(
            name: "pinproxy",
            dependencies: [
                "PinproxyCertificates", "PinproxyPinning", "PinproxyProxy", "PinproxyTLS",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The fuzz targets: one check per input format, called by the libFuzzer
        // executables (Fuzz/Package.swift) and by the regression tests alike.
        .target(
            name: "PinproxyFuzzing",
            dependencies: ["PinproxyCertificates", "PinproxyPinning", "PinproxyProxy", "PinproxyTLS"],
            path: "Fuzz/Targets"
        ),
        // Process, temporary-directory and binary helpers shared by the test targets.
        .target(name: "PinproxyTestSupport", path: "Tests/PinproxyTestSupport"),
        .testTarget(name: "PinproxyCertificatesTests", dependencies: ["PinproxyCertificates", "PinproxyTestSupport"]),
        .testTarget(name: "PinproxyPinningTests", dependencies: ["PinproxyPinning", "PinproxyCertificates", "PinproxyTestSupport"]),
        .testTarget(
            name: "PinproxyProxyTests",
            dependencies: ["PinproxyProxy", "PinproxyTLS", "PinproxyCertificates", "PinproxyTestSupport"],
            exclude: ["Support/origin.py", "Support/misbehaving_upstream.py"]
        ),
        .testTarget(name: "PinproxyCLITests", dependencies: ["PinproxyCertificates", "PinproxyTestSupport"]),
        .testTarget(name: "PinproxyFuzzingTests", dependencies: ["PinproxyFuzzing", "PinproxyTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
