fn main() {
    // Reads src-tauri/tauri.conf.json (a symlink to the top-level one) and capabilities/*.json.
    tauri_build::build()
}
