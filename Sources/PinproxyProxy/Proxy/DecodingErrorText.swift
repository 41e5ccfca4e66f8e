import Foundation

/// Plain words for a `DecodingError`, for the control API's 400 answers: where in
/// the document (`rules[0].profile`) and what is wrong, without Swift's type names.
enum DecodingErrorText {
    static func describe(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "\(error)" }
        switch error {
        case .keyNotFound(let key, let context):
            return "\(place(context.codingPath + [key])): missing (it is required)"
        case .typeMismatch(let type, let context):
            return "\(place(context.codingPath)): expected \(kind(type))"
        case .valueNotFound(let type, let context):
            return "\(place(context.codingPath)): null where \(kind(type)) is expected"
        case .dataCorrupted(let context):
            if context.codingPath.isEmpty {
                // JSONSerialization's own words follow "The given data was not valid JSON."
                let underlying = (context.underlyingError as NSError?)?.userInfo[NSDebugDescriptionErrorKey] as? String
                return "not valid JSON" + (underlying.map { ": \($0)" } ?? "")
            }
            return "\(place(context.codingPath)): \(context.debugDescription)"
        @unknown default:
            return "\(error)"
        }
    }

    /// `rules[0].profile` for a coding path; `the document` for the top.
    static func place(_ path: [any CodingKey]) -> String {
        var text = ""
        for key in path {
            if let index = key.intValue {
                text += "[\(index)]"
            } else {
                text += (text.isEmpty ? "" : ".") + key.stringValue
            }
        }
        return text.isEmpty ? "the document" : text
    }

    private static func kind(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: return "a string"
        case is Bool.Type: return "true or false"
        case is Int.Type, is Double.Type: return "a number"
        default:
            let name = "\(type)"
            if name.hasPrefix("Array<") { return "an array" }
            if name.hasPrefix("Dictionary<") { return "an object" }
            return "a value of another kind"
        }
    }
}
