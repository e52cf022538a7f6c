/// Draws `state` on a screen of `size`: pure, so tests read the result as text lines.
///
/// Any size works, down to 0x0: parts that do not fit are left out or cut, never wrapped.
func render(_ state: AppState, size: Size) -> Grid {
    var grid = Grid(size)
    guard size.columns > 0, size.rows > 0 else { return grid }
    let glyphs = Glyphs.for(state)
    let layout = Layout(size: size, view: state.view)
    if let y = layout.header {
        Header.draw(state, y: y, glyphs: glyphs, into: &grid)
    }
    switch state.view {
    case .downloads: DownloadList.draw(state, layout: layout, glyphs: glyphs, into: &grid)
    case .files: FilesList.draw(state, layout: layout, glyphs: glyphs, into: &grid)
    }
    if let y = layout.footer {
        Footer.draw(state, y: y, glyphs: glyphs, into: &grid)
    }
    switch state.overlay {
    case .help?: HelpOverlay.draw(state, glyphs: glyphs, into: &grid)
    case .prompt(let text)?: PromptOverlay.draw(text, glyphs: glyphs, into: &grid)
    case .confirmQuit?: ConfirmQuitOverlay.draw(state, glyphs: glyphs, into: &grid)
    case .confirmDetach?: ConfirmDetachOverlay.draw(state, glyphs: glyphs, into: &grid)
    case .details(let id)?: DetailsOverlay.draw(id, state, glyphs: glyphs, into: &grid)
    case .picture(let path)?: PictureOverlay.draw(path: path, picture: state.picture, glyphs: glyphs, into: &grid)
    case nil: break
    }
    return grid
}
