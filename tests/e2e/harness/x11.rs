//! Real X input and windows for what WebDriver cannot reach: native dialogs, the keyboard
//! focus moving to another program.

use super::{App, Desk, Proc, spawn};
use std::path::Path;
use std::process::{Command, Stdio};

impl Desk {
    /// Resizes the app's window as a window manager would, and waits for the page to take
    /// the new size.
    pub async fn resize(&self, app: &App, w: u32, h: u32) {
        let window = self.xdotool(&["search", "--onlyvisible", "--name", "^Waymark$"]);
        self.xdotool(&["windowsize", &window, &w.to_string(), &h.to_string()]);
        app.wait_js(
            &format!(
                "return (innerWidth <= {w} && innerWidth > {w} - 80 && innerHeight <= {h} && innerHeight > {h} - 80) || null"
            ),
            &format!("the window to take {w}×{h}"),
        )
        .await;
    }

    /// Runs `xdotool` on this desk's display (real X input, for native windows WebDriver
    /// cannot reach); its output.
    pub fn xdotool(&self, args: &[&str]) -> String {
        let out = Command::new("xdotool")
            .args(args)
            .env("DISPLAY", &self.display)
            .output()
            .expect("xdotool missing (scripts/setup.sh installs it)");
        assert!(
            out.status.success(),
            "xdotool {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Picks `folder` in the native folder chooser (GTK) the app opened, by typing it into
    /// the chooser's location bar with real X input; `screen`, when given, names a screenshot
    /// of the chooser.
    pub fn choose_folder(&self, folder: &Path, screen: Option<&str>) {
        let dialog = self.xdotool(&[
            "search",
            "--sync",
            "--onlyvisible",
            "--name",
            "Open a project folder",
        ]);
        self.xdotool(&["windowfocus", "--sync", &dialog]);
        self.xdotool(&["key", "--clearmodifiers", "ctrl+l"]);
        self.xdotool(&["type", "--delay", "2", folder.to_str().unwrap()]);
        if let Some(name) = screen {
            self.screen(name);
        }
        self.xdotool(&["key", "Return"]);
    }

    /// Gives the keyboard focus to another window (an image viewer), as when the user works
    /// in another program; the window stays while the returned process lives.
    pub fn focus_elsewhere(&self) -> Proc {
        let other = spawn(
            Command::new("display")
                .args(["-size", "320x200", "-title", "elsewhere", "xc:lightgray"])
                .env("DISPLAY", &self.display)
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        );
        let elsewhere = self.xdotool(&["search", "--sync", "--onlyvisible", "--name", "elsewhere"]);
        self.xdotool(&["windowfocus", "--sync", &elsewhere]);
        other
    }

    /// Gives the keyboard focus to the app's window.
    pub fn focus_app(&self) {
        let window = self.xdotool(&["search", "--onlyvisible", "--name", "^Waymark$"]);
        self.xdotool(&["windowfocus", "--sync", &window]);
    }
}
