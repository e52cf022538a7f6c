/// Where things go on a screen of a given size, as areas the widgets draw into. Everything adapts down to a
/// 1x1 terminal.
///
/// ```
/// row 0         header: view, elapsed clock, total speed, N of M done
/// row 1         files view only: the server's status line (when there are 6+ rows)
/// next row      column headings (when there are 5+ rows)
/// ...           the list
/// last row      key hints or a message
/// ```
struct Layout: Equatable {
    var screen: Rect
    var header: Rect?
    var status: Rect?
    var headings: Rect?
    var list: Rect
    var footer: Rect?

    init(size: Size, view: AppState.View) {
        let (rows, width) = (size.rows, size.columns)
        screen = Rect(x: 0, y: 0, width: width, height: rows)
        header = rows >= 1 ? .row(0, width: width) : nil
        footer = rows >= 2 ? .row(rows - 1, width: width) : nil
        var top = min(rows, 1)
        if view == .files, rows >= 6 {
            status = .row(top, width: width)
            top += 1
        }
        if rows >= 5 {
            headings = .row(top, width: width)
            top += 1
        }
        list = Rect(x: 0, y: top, width: width, height: max(0, rows - top - (footer == nil ? 0 : 1)))
    }

    /// Rows of list visible in `state`'s current view: the page size of PageUp/PageDown.
    static func listHeight(_ state: AppState) -> Int {
        Layout(size: state.size, view: state.view).list.height
    }

    /// The first list entry shown so that `selection` is visible.
    static func scrollOffset(selection: Int, count: Int, height: Int) -> Int {
        guard height > 0, count > height else { return 0 }
        return min(max(0, selection - height + 1), count - height)
    }
}
