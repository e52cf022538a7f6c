/// `v`: the frame the picture widget (`Sources/HaulTUI/Picture/`) draws the selected JPEG into.
/// Until a picture is decoded, it names the file.
enum PictureOverlay {
    static func draw(path: String, glyphs: Glyphs, into grid: inout Grid) {
        let box = Box.centered(width: grid.width, height: grid.height, in: grid.size)
        let name = path.split(separator: "/").last.map(String.init) ?? path
        box.draw(title: name, glyphs: glyphs, into: &grid)
        box.write([(path, .dim), ("Esc closes.", .dim)], glyphs: glyphs, into: &grid)
    }
}
