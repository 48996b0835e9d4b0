//! `waymark-sandbox`: the sandbox helper as a binary of this package, whose integration tests
//! start it (the CLI and the desktop app re-exec themselves instead).

fn main() {
    waymark_sandbox::run_as_program()
}
