//! `waymark-sandbox`: the plan-mode shell helper as a standalone binary (tests use it; the
//! CLI and the desktop app re-exec themselves instead).

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let args = match args.first().and_then(|a| a.to_str()) {
        Some(waymark_core::sandbox::HELPER_ARG) => &args[1..],
        _ => &args[..],
    };
    std::process::exit(waymark_core::sandbox::helper_main(
        args,
        &mut std::io::stdout(),
        &mut std::io::stderr(),
    ));
}
