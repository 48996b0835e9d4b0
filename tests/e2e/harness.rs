//! The E2E harness: a private X display (Xvfb), a private D-Bus session bus with a real
//! notification daemon (dunst) and a bus monitor recording `Notify` calls, the real Waymark
//! binary started by tauri-driver (or WebKitWebDriver), and helpers to drive its window.

#![allow(dead_code)]

use fantoccini::elements::Element;
use fantoccini::{Client, Locator};
use serde_json::{Value, json};
use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod driver;
mod keys;
mod x11;

/// A child in its own process group; the whole group is ended on drop.
pub struct Proc(Child);

/// The process groups started and not yet ended, for the watchdog.
static GROUPS: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());
/// The desks' temporary folders (the watchdog exits without running destructors).
static DIRS: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

impl Proc {
    pub fn child(&mut self) -> &mut Child {
        &mut self.0
    }

    pub fn id(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        // Never `kill -TERM -<pgid>` through a shell: procps may turn it into kill(-1).
        let pgid = -(self.0.id() as libc::pid_t);
        unsafe { libc::kill(pgid, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_millis(1500);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        unsafe { libc::kill(pgid, libc::SIGKILL) };
        let _ = self.0.wait();
        let id = self.0.id();
        GROUPS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|g| *g != id);
    }
}

pub fn spawn(cmd: &mut Command) -> Proc {
    use std::os::unix::process::CommandExt;
    let child = cmd
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {:?}: {e}", cmd.get_program()));
    GROUPS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(child.id());
    Proc(child)
}

/// A test that runs longer than this is stuck (a WebDriver call that never returns):
/// the watchdog ends its processes and the test binary, so CI fails instead of hanging.
/// `E2E_TEST_LIMIT_SECS` overrides it (to check the watchdog itself).
fn test_limit() -> Duration {
    let secs = std::env::var("E2E_TEST_LIMIT_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(240);
    Duration::from_secs(secs)
}

/// Returns the guard that disarms it (dropped with the desk at the end of the test).
fn watchdog() -> std::sync::mpsc::Sender<()> {
    let test = std::thread::current().name().unwrap_or("?").to_string();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        let limit = test_limit();
        if rx.recv_timeout(limit) != Err(std::sync::mpsc::RecvTimeoutError::Timeout) {
            return; // the test ended
        }
        use std::io::Write;
        // Straight to stderr: the test harness captures eprintln! and would lose it.
        #[allow(clippy::disallowed_methods)]
        let mut err = std::io::stderr();
        let _ = writeln!(
            err,
            "e2e watchdog: {test} ran longer than {limit:?}; stopping it"
        );
        // Every group still running: the desk's and the app's driver (started later).
        for id in GROUPS.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            unsafe { libc::kill(-(*id as libc::pid_t), libc::SIGKILL) };
        }
        for dir in DIRS.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            let _ = std::fs::remove_dir_all(dir);
        }
        std::process::exit(101);
    });
    tx
}

pub fn root() -> PathBuf {
    // cargo sets it when running the test too; the compile-time value is only a fallback (a
    // test binary reused from a clone elsewhere would point there).
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    manifest.join("../..").canonicalize().unwrap()
}

/// Where cargo put the app and the CLI (`CARGO_TARGET_DIR`, else the repository's target/).
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target"))
}

fn find_exe(name: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> =
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()).collect();
    if let Some(home) = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")))
    {
        dirs.push(home.join("bin"));
    }
    dirs.into_iter().map(|d| d.join(name)).find(|p| p.is_file())
}

pub fn first_line(child: &mut Child) -> String {
    let out = child.stdout.take().unwrap();
    let mut line = String::new();
    BufReader::new(out).read_line(&mut line).unwrap();
    line.trim().to_string()
}

/// One isolated desktop: display, session bus, notification daemon, home and data folders.
pub struct Desk {
    pub dir: tempfile::TempDir,
    pub display: String,
    pub bus: String,
    pub monitor_log: PathBuf,
    procs: Vec<Proc>,
    _watchdog: std::sync::mpsc::Sender<()>,
}

impl Desk {
    pub fn start() -> Desk {
        let dir = tempfile::Builder::new()
            .prefix("waymark-e2e")
            .tempdir()
            .unwrap();
        DIRS.lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(dir.path().to_path_buf());
        let mut procs = Vec::new();

        let mut x = Command::new("Xvfb");
        x.args([
            "-displayfd",
            "1",
            "-screen",
            "0",
            "1440x900x24",
            "-nolisten",
            "tcp",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
        let mut xp = spawn(&mut x);
        let display = format!(":{}", first_line(&mut xp.0));
        procs.push(xp);

        let mut d = Command::new("dbus-daemon");
        d.args(["--session", "--nofork", "--print-address=1"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut dp = spawn(&mut d);
        let bus = first_line(&mut dp.0);
        procs.push(dp);

        let monitor_log = dir.path().join("notify.log");
        let log = std::fs::File::create(&monitor_log).unwrap();
        procs.push(spawn(
            Command::new("dbus-monitor")
                .args([
                    "--address",
                    &bus,
                    "type='method_call',interface='org.freedesktop.Notifications',member='Notify'",
                ])
                .stdout(log)
                .stderr(Stdio::null()),
        ));
        procs.push(spawn(
            Command::new("dunst")
                .env("DISPLAY", &display)
                .env("DBUS_SESSION_BUS_ADDRESS", &bus)
                .env("HOME", dir.path())
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        ));
        std::fs::create_dir_all(dir.path().join("home/.config")).unwrap();
        // The OS keyring: a Secret Service on the private bus (gnome-keyring), unlocked.
        let run = dir.path().join("run");
        std::fs::create_dir_all(&run).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o700)).unwrap();
        if find_exe("gnome-keyring-daemon").is_some() {
            let mut k = spawn(
                Command::new("gnome-keyring-daemon")
                    .args(["--foreground", "--unlock", "--components=secrets"])
                    .env("DBUS_SESSION_BUS_ADDRESS", &bus)
                    .env("HOME", dir.path().join("home"))
                    .env("XDG_RUNTIME_DIR", &run)
                    .env("XDG_DATA_HOME", dir.path().join("home/.local/share"))
                    .stdin(Stdio::piped())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null()),
            );
            if let Some(mut stdin) = k.0.stdin.take() {
                use std::io::Write;
                let _ = stdin.write_all(b"e2e-keyring-password");
            }
            procs.push(k);
        }
        // The system browser: a stand-in xdg-open that records what it was asked to open.
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let opener = bin.join("xdg-open");
        std::fs::write(
            &opener,
            format!(
                "#!/bin/sh\necho \"$@\" >> {}\n",
                dir.path().join("opened.log").display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&opener, std::fs::Permissions::from_mode(0o755)).unwrap();
        let _watchdog = watchdog();
        Desk {
            _watchdog,
            dir,
            display,
            bus,
            monitor_log,
            procs,
        }
    }

    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    pub fn settings_file(&self) -> PathBuf {
        self.home().join(".config/waymark/settings.json")
    }

    /// Writes `settings` as the whole settings file (its folder made first).
    pub fn write_settings(&self, settings: &serde_json::Value) {
        std::fs::create_dir_all(self.settings_file().parent().unwrap()).unwrap();
        std::fs::write(self.settings_file(), settings.to_string()).unwrap();
    }

    /// The window's state, in Waymark's data folder beside the database.
    pub fn ui_state_file(&self) -> PathBuf {
        self.data_dir().join("ui-state.json")
    }

    /// Quits the app as the desktop would (SIGTERM to this window's app, then the process
    /// group of the driver this harness started; nothing else is signalled), runs `between`
    /// while it is closed, and starts it again on the same desk.
    pub async fn restart(&self, app: App, between: impl FnOnce()) -> App {
        app.quit().await;
        between();
        self.launch().await
    }

    /// The environment the app runs in.
    pub fn env(&self) -> Vec<(&'static str, OsString)> {
        let home = self.home();
        vec![
            ("DISPLAY", self.display.clone().into()),
            ("DBUS_SESSION_BUS_ADDRESS", self.bus.clone().into()),
            ("HOME", home.clone().into()),
            ("XDG_CONFIG_HOME", home.join(".config").into()),
            ("XDG_DATA_HOME", home.join(".local/share").into()),
            ("XDG_CACHE_HOME", home.join(".cache").into()),
            ("WAYMARK_DATA_DIR", self.data_dir().into()),
            ("NO_AT_BRIDGE", "1".into()),
            ("XDG_RUNTIME_DIR", self.dir.path().join("run").into()),
            ("PATH", {
                let mut p = OsString::from(self.dir.path().join("bin"));
                p.push(":");
                p.push(std::env::var_os("PATH").unwrap_or_default());
                p
            }),
        ]
    }

    /// Runs the `waymark` CLI on this desk's data folder.
    pub fn cli(&self, args: &[&str]) -> std::process::Output {
        let bin = std::env::var_os("WAYMARK_CLI")
            .map(PathBuf::from)
            .unwrap_or_else(|| target_dir().join("debug/waymark"));
        Command::new(&bin)
            .arg("--data-dir")
            .arg(self.data_dir())
            .args(args)
            .envs(self.env())
            .output()
            .unwrap_or_else(|e| panic!("{}: {e}", bin.display()))
    }

    /// `waymark exec --json --workspace <ws> --model <model> <args…>` on this desk's data.
    pub fn exec(&self, ws: &Path, model: &str, args: &[&str]) -> std::process::Output {
        let ws = ws.to_str().unwrap();
        let mut all = vec!["exec", "--json", "--workspace", ws, "--model", model];
        all.extend_from_slice(args);
        self.cli(&all)
    }

    /// Waits until the notification daemon was asked to show a notification containing `needle`.
    pub async fn wait_notification(&self, needle: &str) {
        let start = Instant::now();
        while !self.notifications().contains(needle) {
            assert!(
                start.elapsed() < WAIT,
                "no Notify call with {needle:?}: {}",
                self.notifications()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// What the app asked the system browser to open.
    pub fn opened(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("opened.log")).unwrap_or_default()
    }

    /// Waits until the app asked the system browser to open `url`.
    pub async fn wait_opened(&self, url: &str) {
        let start = Instant::now();
        while !self.opened().contains(url) {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "{url} did not reach the browser: {:?}",
                self.opened()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The `Notify` calls the bus monitor saw so far.
    pub fn notifications(&self) -> String {
        std::fs::read_to_string(&self.monitor_log).unwrap_or_default()
    }

    /// A screenshot of the whole X display (window and notification popups).
    pub fn screen(&self, name: &str) {
        let out = shots_dir().join(format!("{name}.png"));
        let _ = Command::new("/usr/bin/import")
            .args(["-display", &self.display, "-window", "root"])
            .arg(&out)
            .status();
    }

    /// Starts the app and opens a WebDriver session on its window.
    pub async fn launch(&self) -> App {
        self.launch_with(&[]).await
    }

    pub async fn launch_with(&self, extra_env: &[(&str, &str)]) -> App {
        let app = app_binary();
        assert!(
            app.is_file(),
            "{} missing: run scripts/test.sh (it builds the app)",
            app.display()
        );
        // A port `free_port` found free may be taken again before the driver (or the native
        // driver tauri-driver starts) binds it; that launch is abandoned and made again on
        // other ports.
        let mut attempt = 1;
        let (client, driver) = loop {
            let (driver, port, caps) = self.start_driver(&app, extra_env);
            match self.open_session(port, caps).await {
                Ok(client) => break (client, driver),
                Err(e) => {
                    let log = std::fs::read_to_string(self.dir.path().join("driver.log"))
                        .unwrap_or_default();
                    let taken = log.contains("Unable to listen") || e.contains("did not listen");
                    if attempt < 3 && taken {
                        eprintln!("WebDriver could not listen on its port; launching again");
                        attempt += 1;
                        drop(driver);
                        continue;
                    }
                    panic!("WebDriver session (app launch): {e}\n{log}");
                }
            }
        };
        let app = App {
            client,
            _driver: driver,
        };
        let url = app.client.current_url().await.unwrap();
        assert_eq!(
            url.scheme(),
            "tauri",
            "the app loaded {url}: rebuild it with cargo build, not `tauri dev`"
        );
        app.el("[data-testid=shell]").await;
        // Page errors are kept for the failure message of a wait that times out.
        app.js(
            "window.__pageErrors = []; \
             window.addEventListener('error', e => window.__pageErrors.push(String(e.message))); \
             window.addEventListener('unhandledrejection', e => window.__pageErrors.push(String(e.reason))); \
             return true",
        )
        .await;
        app
    }
}

/// The app under test (`E2E_APP`, else the debug build).
pub fn app_binary() -> PathBuf {
    std::env::var_os("E2E_APP")
        .map(PathBuf::from)
        .unwrap_or_else(|| target_dir().join("debug/waymark-desktop"))
}

pub fn shots_dir() -> PathBuf {
    let d = target_dir().join("e2e-screenshots");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A script that starts watching the Plan tab for the first frame whose plan document
/// contains `marker`; that frame's wall-clock time (ms) then appears as
/// `window.__planPainted`. Run it before the change, then wait for the value: the page keeps
/// no timing of its own.
pub fn watch_plan_paint(marker: &str) -> String {
    format!(
        "const marker = {marker:?}; window.__planPainted = null; \
         const shows = () => {{ const d = document.querySelector('[data-testid=plan-doc]'); return !!d && d.textContent.includes(marker); }}; \
         const observer = new MutationObserver(() => {{ \
           if (!shows()) return; \
           observer.disconnect(); \
           requestAnimationFrame(() => {{ window.__planPainted = performance.timeOrigin + performance.now(); }}); \
         }}); \
         observer.observe(document.body, {{ subtree: true, childList: true, characterData: true }}); \
         return true"
    )
}

/// The real app window, driven over WebDriver.
pub struct App {
    pub client: Client,
    _driver: Proc,
}

pub const WAIT: Duration = Duration::from_secs(20);

impl App {
    pub async fn el(&self, css: &str) -> Element {
        self.client
            .wait()
            .at_most(WAIT)
            .for_element(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no element {css}: {e}"))
    }

    pub async fn click(&self, css: &str) {
        // A click the page refuses (the element under something else) is tried again, the
        // element brought to the middle of the view, for a moment before failing.
        let mut tries = 0;
        loop {
            match self.el(css).await.click().await {
                Ok(()) => break,
                Err(e) if tries >= 40 => {
                    // Say what lies over the element's middle, so a failure names its cause.
                    let over = self
                        .js(&format!(
                            "const e = document.querySelector({css:?}); if (!e) return 'gone'; \
                             const r = e.getBoundingClientRect(); \
                             const t = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2); \
                             return `at ${{Math.round(r.left)}},${{Math.round(r.top)}} ${{Math.round(r.width)}}x${{Math.round(r.height)}} in ${{innerWidth}}x${{innerHeight}}; over it: ${{t ? t.outerHTML.slice(0, 300) : 'nothing'}}`"
                        ))
                        .await;
                    panic!("click {css}: {e:?}; {over}")
                }
                Err(_) => {
                    // WebDriver may scroll it under a sticky header (the Settings page's):
                    // into the middle of its scroller, then again.
                    self.js(&format!(
                        "document.querySelector({css:?})?.scrollIntoView({{block: 'center'}}); return true"
                    ))
                    .await;
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }

    pub async fn exists(&self, css: &str) -> bool {
        self.client.find(Locator::Css(css)).await.is_ok()
    }

    /// What the composer holds now.
    pub async fn composer_value(&self) -> String {
        self.js("return document.querySelector('[data-testid=composer]').value")
            .await
            .as_str()
            .unwrap()
            .to_string()
    }

    pub async fn text(&self, css: &str) -> String {
        self.el(css).await.text().await.unwrap()
    }

    /// Waits until the text of `css` contains `needle`.
    pub async fn wait_text(&self, css: &str, needle: &str) -> String {
        let start = Instant::now();
        loop {
            if let Ok(e) = self.client.find(Locator::Css(css)).await
                && let Ok(t) = e.text().await
                && t.contains(needle)
            {
                return t;
            }
            if start.elapsed() > WAIT {
                let t = match self.client.find(Locator::Css(css)).await {
                    Ok(e) => e.text().await.unwrap_or_default(),
                    Err(_) => "<missing>".into(),
                };
                panic!("{css} never contained {needle:?}; it shows {t:?}");
            }
            tokio::time::sleep(Duration::from_millis(80)).await;
        }
    }

    pub async fn js(&self, script: &str) -> Value {
        tokio::time::timeout(WAIT, self.client.execute(script, vec![]))
            .await
            .unwrap_or_else(|_| panic!("script hung: {script}"))
            .unwrap_or_else(|e| panic!("{script}: {e}"))
    }

    /// Runs an asynchronous script (it calls `arguments[arguments.length - 1]` with its result).
    pub async fn js_async(&self, script: &str) -> Value {
        tokio::time::timeout(WAIT, self.client.execute_async(script, vec![]))
            .await
            .unwrap_or_else(|_| panic!("async script hung: {script}"))
            .unwrap_or_else(|e| panic!("{script}: {e}"))
    }

    /// Waits until `script` (a function body returning a value) returns something truthy.
    pub async fn wait_js(&self, script: &str, what: &str) -> Value {
        let start = Instant::now();
        loop {
            let v = self.js(script).await;
            let truthy =
                !matches!(v, Value::Null | Value::Bool(false)) && v != json!("") && v != json!(0);
            if truthy {
                return v;
            }
            if start.elapsed() >= WAIT {
                // Say what the window shows: the reason is usually on screen (a toast).
                let shown = self
                    .js("return document.body.innerText.slice(0, 3000)")
                    .await;
                let errors = self.js("return window.__pageErrors ?? []").await;
                panic!(
                    "timed out waiting for {what}; page errors: {errors}; the window shows:\n{shown}"
                );
            }
            tokio::time::sleep(Duration::from_millis(60)).await;
        }
    }

    /// Waits until no element matches `css`.
    pub async fn wait_gone(&self, css: &str) {
        let start = Instant::now();
        while self.exists(css).await {
            assert!(start.elapsed() < WAIT, "{css} did not go away");
            tokio::time::sleep(Duration::from_millis(80)).await;
        }
    }

    pub async fn type_into(&self, css: &str, text: &str) {
        let e = self.el(css).await;
        e.clear().await.ok();
        e.send_keys(text).await.unwrap();
    }

    /// Types `text` after what the field holds.
    pub async fn type_more(&self, css: &str, text: &str) {
        self.el(css).await.send_keys(text).await.unwrap();
    }

    /// A first run with no model: the setup card's "Use the offline demo instead", then the
    /// demo's banner.
    pub async fn start_demo(&self) {
        self.click("[data-testid=setup-demo]").await;
        self.el("[data-testid=demo-banner]").await;
    }

    /// Opens the demo's plan session (once it is in the list) on its Plan tab.
    pub async fn open_plan_demo(&self) {
        let id = self
            .wait_js(
                "return [...document.querySelectorAll('[data-testid=session]')].find(b => b.textContent.includes('Plan first'))?.dataset.sessionId",
                "the plan demo in the list",
            )
            .await;
        self.open_session(id.as_str().unwrap()).await;
        self.click("[data-testid=tab-plan]").await;
    }

    /// Opens the session whose list entry has this id.
    pub async fn open_session(&self, id: &str) {
        let current = format!(
            "return document.querySelector(\"[data-session-id='{id}']\")?.classList.contains('current')"
        );
        // The app may be opening it already (at start it opens the last session), and a
        // question that session asks then covers the list with its backdrop: a refused
        // click is fine once the session is open.
        let entry = format!("[data-session-id='{id}']");
        let mut tries = 0;
        loop {
            if self.js(&current).await.as_bool() == Some(true) {
                return;
            }
            match self.el(&entry).await.click().await {
                Ok(()) => break,
                Err(e) if tries >= 40 => panic!("open session {id}: {e:?}"),
                Err(_) => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
        self.wait_js(&current, "the session to open").await;
    }

    /// Makes the page paint every frame until `window.__shotMark` is set to null: WebKit
    /// takes a screenshot after the page's next paint, and with accelerated compositing off
    /// a page with nothing to repaint never paints again. A 1-px mark flickers (invisibly)
    /// meanwhile.
    async fn keep_painting(&self) {
        self.js(
            "if (!window.__shotMark) { const m = document.createElement('div'); \
               m.style.cssText = 'position:fixed;right:0;bottom:0;width:1px;height:1px;pointer-events:none;opacity:0'; \
               document.body.appendChild(m); window.__shotMark = m; \
               const tick = () => { if (!window.__shotMark) { m.remove(); return; } \
                 m.style.opacity = m.style.opacity === '0' ? '0.01' : '0'; requestAnimationFrame(tick); }; \
               requestAnimationFrame(tick); } return true",
        )
        .await;
    }

    pub async fn shot(&self, name: &str) {
        self.save_shot(name).await;
        // Issue 37: no main view shows an internal id, a hash, a command line or the data
        // folder outside its details folds.
        let (found, text) = self.internals_shown().await;
        assert!(
            found.is_empty(),
            "screenshot {name} shows {found:?} in its visible text:\n{text}"
        );
    }

    /// Switches the open session's model through the picker's "Other model…" box: `spec`
    /// typed there and sent with Enter (what the switch did is for the caller to wait for).
    pub async fn pick_other_model(&self, spec: &str) {
        self.click("[data-testid=model-picker] option[value=__other__]")
            .await;
        self.type_into("[data-testid=model-other]", spec).await;
        self.type_more("[data-testid=model-other]", "\u{E007}")
            .await;
    }

    /// A screenshot of a view that is meant to show what `shot` refuses (an opened fold of
    /// raw details, the data folder in Settings): `why` says which.
    pub async fn shot_of_internals(&self, name: &str, why: &str) {
        assert!(!why.is_empty(), "say why {name} may show internals");
        self.save_shot(name).await;
    }

    /// Saves a screenshot of the window as `name`.png in the screenshots folder.
    async fn save_shot(&self, name: &str) {
        self.keep_painting().await;
        let png = tokio::time::timeout(WAIT, self.client.screenshot())
            .await
            .unwrap_or_else(|_| panic!("screenshot {name} hung"))
            .unwrap();
        self.js("window.__shotMark = null; return true").await;
        std::fs::write(shots_dir().join(format!("{name}.png")), png).unwrap();
    }

    /// What the visible text shows that a main view must not: a `waymark …` command line, an
    /// internal id (`s-…`, `cp-…`, `plan-…`, `q-…`, `goal-…`, `m-…`, `wt-…`, in any case,
    /// as the app's own `ID` pattern in ui/src/lib/slash.ts reads them), a sha256, or a path
    /// in the app's data folder. The text is `document.body.innerText` plus the values and
    /// placeholders of text fields, with the contents of closed `details` folds left out
    /// (their summaries kept; an opened fold shows, so a test that opens one on purpose
    /// shoots it with `shot_of_internals`). Returns the offending pieces and the text.
    pub async fn internals_shown(&self) -> (Vec<String>, String) {
        let data = self
            .pid()
            .and_then(|pid| std::fs::read(format!("/proc/{pid}/environ")).ok())
            .and_then(|env| {
                env.split(|b| *b == 0)
                    .find_map(|v| v.strip_prefix(b"WAYMARK_DATA_DIR=").map(<[u8]>::to_vec))
            })
            .map(|v| String::from_utf8_lossy(&v).into_owned())
            .unwrap_or_default();
        assert!(
            !data.is_empty(),
            "the app's data folder is unknown: the check would not see it"
        );
        let seen = self
            .js(&format!(
                "const hidden = []; \
                 for (const d of document.querySelectorAll('details:not([open])')) \
                   for (const c of d.children) if (c.tagName !== 'SUMMARY') {{ hidden.push([c, c.style.display]); c.style.display = 'none'; }} \
                 const fields = [...document.querySelectorAll('input, textarea')].filter((f) => f.offsetParent !== null).map((f) => f.value + ' ' + (f.placeholder || '')); \
                 const text = document.body.innerText + '\\n' + fields.join('\\n'); \
                 for (const [c, was] of hidden) c.style.display = was; \
                 const found = []; \
                 const patterns = [['command line', /\\bwaymark [a-z][\\w-]*/g], ['id', /\\b(?:s|cp|plan|q|goal|m|wt)-(?=[a-z0-9]*\\d)[a-z0-9]{{6,}}\\b/gi], ['sha256', /\\b[0-9a-f]{{64}}\\b/g]]; \
                 for (const [what, re] of patterns) for (const m of text.matchAll(re)) found.push(what + ': ' + m[0]); \
                 const data = {data:?}; \
                 if (data && text.includes(data)) found.push('a path in the data folder'); \
                 return {{ found, text }};"
            ))
            .await;
        let found = seen["found"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        (found, seen["text"].as_str().unwrap_or_default().to_string())
    }

    /// Ends the test's use of the window: the app quits as on a desktop logout (SIGTERM),
    /// then the WebDriver session is closed (bounded: a driver that hangs on a closed
    /// browser must not hang the test).
    pub async fn close(self) {
        self.quit().await;
    }

    /// The environment the window's WebKit web process runs with (`NAME=value` entries).
    pub fn web_process_env(&self) -> Vec<String> {
        let app = self.pid().expect("the app's process").to_string();
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let dir = e.path();
            let stat = std::fs::read_to_string(dir.join("stat")).unwrap_or_default();
            let parent = stat
                .rsplit_once(')')
                .and_then(|(_, r)| r.split_whitespace().nth(1));
            let web = std::fs::read_link(dir.join("exe"))
                .is_ok_and(|exe| exe.ends_with("WebKitWebProcess"));
            if parent == Some(app.as_str()) && web {
                let env = std::fs::read(dir.join("environ")).unwrap_or_default();
                return env
                    .split(|b| *b == 0)
                    .map(|v| String::from_utf8_lossy(v).into_owned())
                    .collect();
            }
        }
        panic!("no WebKit web process under the app ({app})")
    }

    /// The app's process id: the waymark-desktop process under this window's driver.
    pub fn pid(&self) -> Option<u32> {
        let mut all = vec![self._driver.0.id()];
        let mut i = 0;
        while i < all.len() {
            let parent = all[i].to_string();
            for e in std::fs::read_dir("/proc").ok()?.flatten() {
                let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                    continue;
                };
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                let fields: Vec<&str> = stat
                    .rsplit_once(')')
                    .map(|(_, r)| r.split_whitespace().collect())
                    .unwrap_or_default();
                if fields.get(1) == Some(&parent.as_str()) {
                    all.push(pid);
                }
            }
            i += 1;
        }
        all.into_iter().skip(1).find(|p| {
            std::fs::read_link(format!("/proc/{p}/exe"))
                .is_ok_and(|e| e.ends_with("waymark-desktop"))
        })
    }

    /// Quits the app as the desktop would (SIGTERM) and waits for it to exit.
    pub async fn quit(self) {
        let pid = self.pid().expect("the app's process");
        unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
        let start = Instant::now();
        loop {
            let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            if state.is_empty()
                || state
                    .rsplit_once(')')
                    .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
            {
                break;
            }
            assert!(start.elapsed() < WAIT, "the app did not exit on SIGTERM");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let _ = tokio::time::timeout(Duration::from_secs(5), self.client.close()).await;
    }
}

/// The id of the session a CLI run printed first (`exec --json`).
pub fn session_of(out: &std::process::Output) -> String {
    let first = String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string();
    let v: serde_json::Value = serde_json::from_str(&first)
        .unwrap_or_else(|e| panic!("{e}: {first:?} {}", String::from_utf8_lossy(&out.stderr)));
    v["session_id"].as_str().unwrap().to_string()
}
