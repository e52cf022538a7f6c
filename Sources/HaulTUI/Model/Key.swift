/// A key press, decoded by the terminal from curses' codes.
enum Key: Sendable, Hashable {
    case character(Character)
    case up, down, left, right, pageUp, pageDown, home, end
    case enter, tab, backTab, escape, backspace, delete
    /// Ctrl-C read as a key (the terminal normally turns it into SIGINT).
    case interrupt
}
