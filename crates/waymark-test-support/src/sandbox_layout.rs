//! A session's folders and read scope for tests and benchmarks that start the sandbox helper
//! themselves: a workspace, the session's temp and artifacts folders inside a data folder,
//! the environment a command gets, and what the sandbox may read.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use waymark_runtime::sandbox::private::Owner;
use waymark_runtime::sandbox::reads::ReadScope;

/// An environment variable as a command gets it.
pub type EnvVar = (OsString, OsString);

/// The folders made under one root, and the scope over them.
pub struct Layout {
    pub ws: PathBuf,
    pub data: PathBuf,
    pub tmp: PathBuf,
    /// `PATH`, `HOME`, `LANG` and the Rust toolchain's own variables, as this process has them.
    pub env: Vec<EnvVar>,
    pub scope: ReadScope,
}

/// Makes the folders under `root` (canonicalised) and the read scope over them.
pub fn layout(root: &Path) -> Layout {
    let root = root.canonicalize().expect("canonical");
    let ws = root.join("ws");
    let data = root.join("data");
    let tmp = data.join("sessions/s1/sandbox-tmp");
    let artifacts = data.join("sessions/s1/artifacts");
    for d in [&ws, &tmp, &artifacts] {
        std::fs::create_dir_all(d).expect("mkdir");
    }
    let env: Vec<EnvVar> = std::env::vars_os()
        .filter(|(k, _)| {
            [
                "PATH",
                "HOME",
                "LANG",
                "RUSTUP_HOME",
                "CARGO_HOME",
                "RUSTUP_TOOLCHAIN",
            ]
            .iter()
            .any(|n| k == n)
        })
        .collect();
    let homes: Vec<PathBuf> = env
        .iter()
        .filter(|(k, _)| k == "HOME")
        .map(|(_, v)| PathBuf::from(v))
        .collect();
    let scope = ReadScope {
        workspace: ws.clone(),
        artifacts,
        project: Vec::new(),
        homes: homes.clone(),
        owner: Owner {
            waymark: vec![data.clone()],
            homes,
            env: env.clone(),
        },
    };
    Layout {
        ws,
        data,
        tmp,
        env,
        scope,
    }
}
