import Testing
@testable import PinproxyBase

/// `FilePaths.parent(of:)` is `dirname` without the `.`, and never traps.
@Suite struct FilePathsTests {
    @Test(arguments: [
        ("x", ""), ("ab", ""), ("a/b", "a"), ("/x", "/"), ("/", "/"), ("a/b/", "a"), ("a//b", "a"),
        ("/a/b/c.json", "/a/b"), ("./p", "."), ("../p", ".."), ("", ""), ("//x", "/"), ("é/ü", "é"),
    ])
    func parent(_ path: String, _ expected: String) {
        #expect(FilePaths.parent(of: path) == expected)
    }
}
