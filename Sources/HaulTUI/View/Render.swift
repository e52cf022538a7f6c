/// Draws `state` on a screen of `size`: pure, so tests read the result as text lines.
///
/// Any size works, down to 0x0: parts that do not fit are left out or cut, never wrapped. Each widget draws
/// into the area the layout gives it (a `Canvas`), in its own coordinates.
func render(_ state: AppState, size: Size) -> Grid {
    var grid = Grid(size)
    guard size.columns > 0, size.rows > 0 else { return grid }
    let glyphs = Glyphs.for(state)
    let layout = Layout(size: size, view: state.view)
    grid.draw(in: layout.header) { Header.draw(state, glyphs: glyphs, into: &$0) }
    switch state.view {
    case .downloads:
        grid.draw(in: layout.headings) { DownloadList.drawHeadings(into: &$0) }
        grid.draw(in: layout.list) { DownloadList.draw(state, glyphs: glyphs, into: &$0) }
    case .files:
        grid.draw(in: layout.status) { FilesList.drawStatus(state.files, glyphs: glyphs, into: &$0) }
        grid.draw(in: layout.headings) { FilesList.drawHeadings(into: &$0) }
        grid.draw(in: layout.list) { FilesList.draw(state, glyphs: glyphs, into: &$0) }
    }
    grid.draw(in: layout.footer) { Footer.draw(state, glyphs: glyphs, into: &$0) }
    grid.draw(in: layout.screen) { canvas in
        switch state.overlay {
        case .help?: HelpOverlay.draw(state, glyphs: glyphs, into: &canvas)
        case .prompt(let text)?: PromptOverlay.draw(text, glyphs: glyphs, into: &canvas)
        case .refreshPrompt(let id, let text)?:
            PromptOverlay.draw(text, title: "New address for download \(id)", glyphs: glyphs, into: &canvas)
        case .confirmQuit?: ConfirmQuitOverlay.draw(state, glyphs: glyphs, into: &canvas)
        case .confirmDetach?: ConfirmDetachOverlay.draw(state, glyphs: glyphs, into: &canvas)
        case .confirmRemoveFiles(let id)?: ConfirmRemoveFilesOverlay.draw(state, id, glyphs: glyphs, into: &canvas)
        case .details(let id)?: DetailsOverlay.draw(id, state, glyphs: glyphs, into: &canvas)
        case .picture(let path)?: PictureOverlay.draw(path: path, picture: state.picture, glyphs: glyphs, into: &canvas)
        case nil: break
        }
    }
    return grid
}
