/// The known name a mistyped one most likely meant: for "did you mean" hints on command-line
/// options, commands and policy keys.
public enum NearestName {
    /// The name among `known` nearest to `name`, when it is close enough to be a typo or an
    /// abbreviation (`certPinner` for `certificatePinner`); nil otherwise. Letter case is
    /// ignored for the comparison, so `sslPinningMode` finds `SSLPinningMode`.
    public static func suggestion(for name: String, among known: [String]) -> String? {
        let lower = name.lowercased()
        let scored = known.filter { $0 != name }.map { (name: $0, edits: distance(lower, $0.lowercased())) }
            .sorted { $0.edits != $1.edits ? $0.edits < $1.edits : $0.name < $1.name }
        if let best = scored.first, best.edits <= min(3, max(1, name.count / 3)) { return best.name }
        // An abbreviation: every letter of `name`, in order, first letters equal.
        let abbreviated = known.filter { isAbbreviation(lower, of: $0.lowercased()) }
        return abbreviated.count == 1 ? abbreviated[0] : nil
    }

    /// ` (did you mean 'NAME'?)` for the ``suggestion(for:among:)`` of `name`, or an empty
    /// string: to be put right after the unknown name in a message. `written` shows the name as
    /// the message writes names (quoted by default; `<pin-set>` for an XML element, `{ca}` as it is).
    public static func hint(for name: String, among known: [String],
                            written: (String) -> String = { "'\($0)'" }) -> String {
        suggestion(for: name, among: known).map { " (did you mean \(written($0))?)" } ?? ""
    }

    /// Whether `short` (four letters or more) keeps the first letter of `long` and the rest of
    /// its letters in order: `certpinner` of `certificatepinner`.
    static func isAbbreviation(_ short: String, of long: String) -> Bool {
        guard short.count >= 4, short.count < long.count, short.first == long.first else { return false }
        var rest = long[...]
        for character in short {
            guard let found = rest.firstIndex(of: character) else { return false }
            rest = rest[rest.index(after: found)...]
        }
        return true
    }

    /// Edit distance over characters, a swap of two neighbours counting as one edit
    /// (`--dri` is one edit from `--dir`).
    public static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var table = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { table[i][0] = i }
        for j in 0...b.count { table[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                var best = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
                if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] { best = min(best, table[i - 2][j - 2] + 1) }
                table[i][j] = best
            }
        }
        return table[a.count][b.count]
    }
}
