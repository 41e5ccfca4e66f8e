import Foundation
import Testing
import PinproxyTestSupport

/// The Makefile's targets, read with `make -n` (printed, not run: a release build is too slow for the suite).
@Suite struct MakefileTests {
    /// The commands `make -n` prints for `target` with `variables`, from the package root.
    static func plannedCommands(_ target: String, _ variables: [String]) throws -> [String] {
        let result = try run(["make", "--no-print-directory", "-n", "-C", packageRoot, target] + variables)
        #expect(result.status == 0, "\(result.output)")
        return result.stdout.split(separator: "\n").map(String.init)
    }

    @Test func runPassesExtraArgumentsToServe() throws {
        let commands = try MakefileTests.plannedCommands("run", ["CA_DIR=/tmp/ca", #"ARGS=--upstream-ca "my ca.pem" --log-level debug"#])
        let serve = try #require(commands.first { $0.contains("pinproxy serve") }, "\(commands)")
        #expect(serve == #".build/release/pinproxy serve --ca-dir /tmp/ca --admin 127.0.0.1:8081 --upstream-ca "my ca.pem" --log-level debug"#)
    }

    @Test func runWithoutArgumentsServesWithTheDefaults() throws {
        let commands = try MakefileTests.plannedCommands("run", ["CA_DIR=/tmp/ca"])
        let serve = try #require(commands.first { $0.contains("pinproxy serve") }, "\(commands)")
        #expect(serve.trimmingCharacters(in: .whitespaces) == ".build/release/pinproxy serve --ca-dir /tmp/ca --admin 127.0.0.1:8081")
    }

    @Test func runMovesTheControlAPIWithADMIN() throws {
        let commands = try MakefileTests.plannedCommands("run", ["CA_DIR=/tmp/ca", "ADMIN=127.0.0.1:19081"])
        let serve = try #require(commands.first { $0.contains("pinproxy serve") }, "\(commands)")
        #expect(serve.trimmingCharacters(in: .whitespaces) == ".build/release/pinproxy serve --ca-dir /tmp/ca --admin 127.0.0.1:19081")
    }

    /// `make run` on a fresh clone with the proxy's port taken: serve refuses before it writes
    /// anything, and make run made no CA of its own before it (the default directory is left to
    /// serve). Run in a directory of its own, with the tests' build standing in for the release one.
    @Test func runWithAPortInUseLeavesNoCABehind() throws {
        let directory = try TemporaryDirectory()
        let busy = try LoopbackPort(listening: true)
        let r = try run(["-u", "PINPROXY_CA_DIR", "make", "--no-print-directory", "-f", packageRoot + "/Makefile", "-C", directory.path,
                         "-o", "release", "run", "RUN_BIN=\(pinproxyBinary)", "ARGS=--listen 127.0.0.1:\(busy.port)", "ADMIN=127.0.0.1:0"])
        #expect(r.status != 0, "\(r.output)")
        #expect(r.stdout.contains("no CA in certs yet: serve creates one once its ports are free"), "\(r.stdout)")
        #expect(r.stderr.contains("cannot listen on 127.0.0.1:\(busy.port): Address already in use (--listen)"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.file("certs")), "make run left \(directory.file("certs")) behind")
    }

    /// The release build is the executable's: `make run` and `make install` need no other product.
    /// It is linked with whole-program LTO unless `RELEASE_FLAGS` is emptied.
    @Test func releaseBuildsTheExecutableOnly() throws {
        let commands = try MakefileTests.plannedCommands("release", [])
        #expect(commands.contains { $0.hasSuffix("build -c release --product pinproxy --experimental-lto-mode=full") }, "\(commands)")
        let plain = try MakefileTests.plannedCommands("release", ["RELEASE_FLAGS="])
        #expect(plain.contains { $0.hasSuffix("build -c release --product pinproxy ") || $0.hasSuffix("build -c release --product pinproxy") }, "\(plain)")
        #expect(!plain.joined().contains("lto"), "\(plain)")
    }

    /// `make docker-verify` builds the binary as the image does: the same flags (static runtime, LTO).
    @Test func dockerVerifyBuildsAsTheDockerfileDoes() throws {
        let planned = try MakefileTests.plannedCommands("docker-verify", [])
        let verify = try #require(planned.first { $0.contains(" build -c release") }, "\(planned)")
        let dockerfile = try String(contentsOfFile: packageRoot + "/docker/Dockerfile", encoding: .utf8)
        let lines = dockerfile.components(separatedBy: "\n")
        let image = try #require(lines.first { $0.hasPrefix("RUN swift build ") }, "\(dockerfile)")
        func flags(_ line: String) -> Set<String> {
            let words = line.components(separatedBy: " ")
            let start = words.firstIndex(of: "build").map { $0 + 1 } ?? words.endIndex
            let stop = words.firstIndex(of: "--scratch-path") ?? words.firstIndex(of: "\\") ?? words.endIndex
            return Set(words[start..<max(start, stop)])
        }
        #expect(flags(image) == flags(verify), "Dockerfile: \(image)\nmake docker-verify: \(verify)")
        #expect(flags(image).isSuperset(of: ["--static-swift-stdlib", "--experimental-lto-mode=full"]), "\(image)")
    }

    /// `make install` copies the binary to PREFIX/bin and says how to reach it when PREFIX/bin is
    /// not on the PATH. `-o release` keeps make from rebuilding in release mode (too slow for the
    /// suite): the tests' own build stands in for the release binary.
    @Test func installPutsPinproxyUnderThePrefix() throws {
        let directory = try TemporaryDirectory()
        let r = try run(["make", "--no-print-directory", "-C", packageRoot, "-o", "release", "install",
                         "PREFIX=\(directory.path)", "INSTALL_FROM=\(pinproxyBinary)"])
        #expect(r.status == 0, "\(r.output)")
        let installed = directory.file("bin/pinproxy")
        #expect(r.stdout.contains("installed \(installed)"), "\(r.stdout)")
        #expect(r.stdout.contains("\(directory.path)/bin is not on your PATH; add it: export PATH=\"\(directory.path)/bin:$PATH\""), "\(r.stdout)")
        let version = try run([installed, "--version"])
        #expect(version.status == 0 && !version.stdout.isEmpty, "\(version.output)")
        let removed = try run(["make", "--no-print-directory", "-C", packageRoot, "uninstall", "PREFIX=\(directory.path)"])
        #expect(removed.status == 0 && !FileManager.default.fileExists(atPath: installed), "\(removed.output)")
    }

    /// A newcomer's first targets install only what building needs; the test clients (a JDK,
    /// nginx, wrk …) come with `make test` alone.
    @Test(arguments: ["build", "release", "demo", "install"])
    func theFirstTargetsInstallOnlyWhatTheBuildNeeds(_ target: String) throws {
        let planned = try MakefileTests.plannedCommands(target, []).joined(separator: "\n")
        #expect(planned.contains("libssl-dev libnghttp2-dev pkg-config"), "\(planned)")
        for testOnly in ["openjdk-17-jdk-headless", "libokhttp-java", "nginx-light", "wrk"] {
            #expect(!planned.contains(testOnly), "\(target): \(planned)")
        }
        let test = try MakefileTests.plannedCommands("test", []).joined(separator: "\n")
        #expect(test.contains("openjdk-17-jdk-headless") && test.contains("libokhttp-java"), "\(test)")
    }

    /// Without PREFIX: /usr/local for root, ~/.local for anyone who cannot write /usr/local/bin.
    @Test func installDefaultsToUsrLocalForRoot() throws {
        let commands = try MakefileTests.plannedCommands("install", ["-o", "release"])
        let root = getuid() == 0 || access("/usr/local/bin", W_OK) == 0
        let expected = root ? "/usr/local" : NSHomeDirectory() + "/.local"
        #expect(commands.contains("install -d \"\(expected)/bin\""), "\(commands)")
    }
}

