/// Source text, a line at a time.
struct CodeWriter {
    private(set) var text = ""

    mutating func line(_ line: String) {
        text += line
        text += "\n"
    }
}
