//! Starting the WebDriver that drives the app, on a port found free, and opening its session.

use super::{Desk, Proc, find_exe, spawn};
use fantoccini::{Client, ClientBuilder};
use serde_json::json;
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Desk {
    /// Starts the WebDriver for `app` on a port found free: the driver, its port and the
    /// session's capabilities.
    pub(super) fn start_driver(
        &self,
        app: &std::path::Path,
        extra_env: &[(&str, &str)],
    ) -> (Proc, u16, serde_json::Map<String, serde_json::Value>) {
        let port = free_port();
        let mut caps = serde_json::Map::new();
        let mut cmd;
        match find_exe("tauri-driver")
            .filter(|_| std::env::var("E2E_DRIVER").as_deref() != Ok("webkit"))
        {
            Some(td) => {
                caps.insert("tauri:options".into(), json!({ "application": app }));
                cmd = Command::new(td);
                cmd.args([
                    "--port",
                    &port.to_string(),
                    "--native-port",
                    &free_port().to_string(),
                ]);
            }
            None => {
                let wk = find_exe("WebKitWebDriver")
                    .expect("WebKitWebDriver missing (apt-get install webkit2gtk-driver)");
                caps.insert(
                    "webkitgtk:browserOptions".into(),
                    json!({ "binary": app, "args": [] }),
                );
                cmd = Command::new(wk);
                cmd.arg(format!("--port={port}"))
                    .env("TAURI_WEBVIEW_AUTOMATION", "true");
            }
        }
        // The driver's and the app's output, for reading after a failure.
        let log = std::fs::File::create(self.dir.path().join("driver.log")).unwrap();
        cmd.envs(self.env())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        for (k, v) in extra_env {
            cmd.env(k, v);
        }
        (spawn(&mut cmd), port, caps)
    }

    /// Opens a WebDriver session on the driver at `port`, asking again while the driver
    /// gets ready (tauri-driver listens before the native driver it starts does).
    pub(super) async fn open_session(
        &self,
        port: u16,
        caps: serde_json::Map<String, serde_json::Value>,
    ) -> Result<Client, String> {
        let start = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if start.elapsed() > Duration::from_secs(20) {
                return Err(format!("WebDriver did not listen on {port}"));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        loop {
            // A driver whose native side never answers would hold the request forever.
            let url = format!("http://127.0.0.1:{port}");
            let mut builder =
                ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new());
            builder.capabilities(caps.clone());
            let asked = builder.connect(&url);
            let Ok(answered) = tokio::time::timeout(Duration::from_secs(20), asked).await else {
                return Err(format!("WebDriver on {port} did not answer for 20 s"));
            };
            match answered {
                Ok(c) => return Ok(c),
                Err(e) if start.elapsed() < Duration::from_secs(30) => {
                    let log = std::fs::read_to_string(self.dir.path().join("driver.log"))
                        .unwrap_or_default();
                    if log.contains("Unable to listen") {
                        return Err(e.to_string());
                    }
                    eprintln!("WebDriver session not ready yet ({e}); asking again");
                    tokio::time::sleep(Duration::from_millis(300)).await;
                }
                Err(e) => return Err(e.to_string()),
            }
        }
    }
}
