//! PM-14, beyond the filesystem: the plan-mode shell has no network, no unix sockets, no
//! terminal, cannot signal processes outside it, and starts without secrets. Each case
//! attacks the layer the way a model trying to get out would.

use super::*;
use std::io::Read as _;
use std::os::unix::net::UnixListener;
use std::sync::Arc;

fn py(code: &str) -> Value {
    bash(&format!("python3 -c '{code}'"))
}

#[tokio::test]
async fn pm_14_shell_battery_network_sockets_terminal_signals_and_environment() {
    let h = Harness::new(Config::default());
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    tcp.set_nonblocking(true).unwrap();
    let port = tcp.local_addr().unwrap().port();
    let tcp6 = std::net::TcpListener::bind("[::1]:0").ok();
    if let Some(l) = &tcp6 {
        l.set_nonblocking(true).unwrap();
    }
    let port6 = tcp6
        .as_ref()
        .map(|l| l.local_addr().unwrap().port())
        .unwrap_or(9);
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_nonblocking(true).unwrap();
    let udp_port = udp.local_addr().unwrap().port();
    // A daemon on a path socket (think docker.sock, the SSH agent) and on an abstract one
    // (think X11, the D-Bus session bus).
    let sock_path = h.ws.join("daemon.sock");
    let daemon = UnixListener::bind(&sock_path).unwrap();
    daemon.set_nonblocking(true).unwrap();
    let abstract_name = format!("waymark-test-{}", std::process::id());
    let abstract_daemon = {
        use std::os::linux::net::SocketAddrExt as _;
        let addr =
            std::os::unix::net::SocketAddr::from_abstract_name(abstract_name.as_bytes()).unwrap();
        UnixListener::bind_addr(&addr).unwrap()
    };
    abstract_daemon.set_nonblocking(true).unwrap();
    // A terminal the model would like to type into: a pty whose other end we hold.
    let mut pty = std::process::Command::new("python3")
        .args(["-c", "import os,sys\nm,s=os.openpty()\nprint(os.ttyname(s),flush=True)\nsys.stdin.readline()\nos.set_blocking(s,False)\ntry:\n  print('typed:', os.read(s,100))\nexcept BlockingIOError:\n  print('nothing typed')\n"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut pty_out = pty.stdout.take().unwrap();
    let mut tty_name = String::new();
    {
        let mut b = [0u8; 1];
        while pty_out.read(&mut b).unwrap() == 1 && b[0] != b'\n' {
            tty_name.push(b[0] as char);
        }
    }
    let me = std::process::id();
    let denied: Vec<(&str, Value)> = vec![
        (
            "tcp",
            bash(&format!(
                "exec 3<>/dev/tcp/127.0.0.1/{port} && echo CONNECTED"
            )),
        ),
        (
            "tcp-python",
            py(&format!(
                "import socket; socket.create_connection((\"127.0.0.1\", {port}), 2); print(\"CONNECTED\")"
            )),
        ),
        (
            "tcp6",
            py(&format!(
                "import socket; socket.create_connection((\"::1\", {port6}), 2); print(\"CONNECTED\")"
            )),
        ),
        (
            "curl",
            bash(&format!(
                "curl -sS --max-time 2 http://127.0.0.1:{port}/ && echo CONNECTED"
            )),
        ),
        (
            "udp",
            py(&format!(
                "import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b\"x\", (\"127.0.0.1\", {udp_port})); print(\"SENT\")"
            )),
        ),
        (
            "raw-netlink",
            py(
                "import socket; socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0); print(\"OPENED\")",
            ),
        ),
        (
            "unix-path",
            py(&format!(
                "import socket; s=socket.socket(socket.AF_UNIX); s.connect(\"{}\"); print(\"CONNECTED\")",
                sock_path.display()
            )),
        ),
        (
            "unix-abstract",
            py(&format!(
                "import socket; s=socket.socket(socket.AF_UNIX); s.connect(\"\\0{abstract_name}\"); print(\"CONNECTED\")"
            )),
        ),
        (
            "dbus",
            bash(
                "dbus-send --session --print-reply --dest=org.freedesktop.DBus / org.freedesktop.DBus.ListNames && echo CONNECTED",
            ),
        ),
        (
            "tiocsti-stdin",
            py("import fcntl, termios; fcntl.ioctl(0, termios.TIOCSTI, b\"x\"); print(\"TYPED\")"),
        ),
        (
            "tiocsti-pty",
            py(&format!(
                "import fcntl, termios, os; fd=os.open(\"{tty_name}\", os.O_RDONLY|os.O_NOCTTY); [fcntl.ioctl(fd, termios.TIOCSTI, c) for c in (b\"i\", b\"d\", b\"\\n\")]; print(\"TYPED\")"
            )),
        ),
        ("dev-tty", bash("exec 3</dev/tty && echo OPENED")),
        ("signal", bash(&format!("kill -0 {me} && echo SIGNALLED"))),
        // io_uring_setup is 425 everywhere; keyctl is 250 on x86_64, 219 on aarch64.
        (
            "io-uring",
            py(
                "import ctypes; r=ctypes.CDLL(None).syscall(425, 8, ctypes.create_string_buffer(120)); assert r >= 0, r; print(\"RING\")",
            ),
        ),
        // Another process's limits (a CPU limit of 1 s kills it), priority and System V
        // shared memory.
        (
            "prlimit",
            py(&format!(
                "import resource; resource.prlimit({me}, resource.RLIMIT_CORE, resource.getrlimit(resource.RLIMIT_CORE)); print(\"LIMITED\")"
            )),
        ),
        (
            "renice",
            bash(&format!("renice -n 0 -p {me} && echo LIMITED")),
        ),
        (
            "sysv-shm",
            py(
                "import ctypes; r=ctypes.CDLL(None).shmget(0, 4096, 0o1600); assert r >= 0, r; print(\"SHARED\")",
            ),
        ),
        (
            "keyring",
            py(
                "import ctypes, platform; n=250 if platform.machine()==\"x86_64\" else 219; r=ctypes.CDLL(None).syscall(n, 0, -4, 0, 0, 0); assert r >= 0, r; print(\"KEYS\")",
            ),
        ),
    ];
    let allowed: Vec<(&str, Value)> = vec![
        ("tty", bash("tty; true")),
        ("env", bash("env")),
        ("git log", bash("git log --oneline -1")),
    ];
    let mut calls: Vec<Value> = denied.iter().map(|(_, c)| c.clone()).collect();
    calls.extend(allowed.iter().map(|(_, c)| c.clone()));
    let git = |args: &[&str]| {
        assert!(
            std::process::Command::new("git")
                .args(args)
                .current_dir(&h.ws)
                .output()
                .unwrap()
                .status
                .success()
        );
    };
    git(&["init", "-q"]);
    git(&[
        "-c",
        "user.email=t@t",
        "-c",
        "user.name=t",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "first",
    ]);
    let rt = h.reopen(|o| {
        let mut env: Vec<(std::ffi::OsString, std::ffi::OsString)> = std::env::vars_os()
            .filter(|(k, _)| k == "PATH" || k == "HOME")
            .collect();
        env.push((
            "DBUS_SESSION_BUS_ADDRESS".into(),
            format!("unix:abstract={abstract_name}").into(),
        ));
        env.push(("SSH_AUTH_SOCK".into(), sock_path.clone().into()));
        env.push(("DISPLAY".into(), ":0".into()));
        env.push(("XDG_RUNTIME_DIR".into(), "/run/user/0".into()));
        env.push((
            "ANTHROPIC_API_KEY".into(),
            "sk-ant-not-for-tools-000".into(),
        ));
        o.process_env = Arc::new(env);
    });
    let model = h.script(json!({"responses": [{"tool_calls": calls}, {"text": "done"}]}));
    let s = rt
        .create_session(SessionSpec {
            workspace: Some(h.ws.clone()),
            model: Some(model),
            permission_mode: Some(PermissionMode::Auto),
            hold: false,
        })
        .unwrap();
    let ev = run(&s, plan_entry("investigate")).await;
    let r = results(&ev);
    assert_eq!(r.len(), denied.len() + allowed.len(), "{r:?}");
    for (i, (what, _)) in denied.iter().enumerate() {
        let out = &r[i].2;
        for marker in [
            "CONNECTED",
            "SENT",
            "OPENED",
            "TYPED",
            "SIGNALLED",
            "RING",
            "KEYS",
            "LIMITED",
            "SHARED",
        ] {
            assert!(
                !out.contains(&format!("{marker}\n")) && !out.starts_with(marker),
                "{what} got through: {out}"
            );
        }
        assert_eq!(r[i].1, ToolStatus::Error, "{what} must fail: {out}");
    }
    let out = |name: &str| {
        let i = denied.len() + allowed.iter().position(|(n, _)| *n == name).unwrap();
        assert_eq!(r[i].1, ToolStatus::Ok, "{name}: {:?}", r[i]);
        r[i].2.clone()
    };
    assert!(out("tty").contains("not a tty"), "{}", out("tty"));
    let env = out("env");
    for name in [
        "DBUS_SESSION_BUS_ADDRESS",
        "SSH_AUTH_SOCK",
        "DISPLAY=",
        "XDG_RUNTIME_DIR",
        "ANTHROPIC_API_KEY",
    ] {
        assert!(!env.contains(name), "{name} in the sandbox: {env}");
    }
    assert!(out("git log").contains("first"), "{}", out("git log"));
    // Nothing reached the listeners or the terminal.
    assert!(
        tcp.accept().is_err(),
        "a TCP connection reached the listener"
    );
    if let Some(l) = &tcp6 {
        assert!(
            l.accept().is_err(),
            "a TCP connection reached the IPv6 listener"
        );
    }
    assert!(
        udp.recv(&mut [0u8; 8]).is_err(),
        "a datagram reached the listener"
    );
    assert!(
        daemon.accept().is_err(),
        "a connection reached the unix daemon"
    );
    assert!(
        abstract_daemon.accept().is_err(),
        "a connection reached the abstract daemon"
    );
    {
        use std::io::Write as _;
        writeln!(pty.stdin.take().unwrap(), "done").unwrap();
    }
    let mut typed = String::new();
    pty_out.read_to_string(&mut typed).unwrap();
    assert_eq!(
        typed.trim(),
        "nothing typed",
        "keystrokes reached the terminal"
    );
    let _ = pty.wait();
    s.shutdown().await.unwrap();
}

/// `plan.shell_network: "allow"` opens internet sockets, and only those.
#[tokio::test]
async fn pm_14_shell_network_allow_opens_tcp_but_not_unix_sockets() {
    let h = Harness::new(Config::from_json(r#"{"plan": {"shell_network": "allow"}}"#).unwrap());
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = tcp.local_addr().unwrap().port();
    let sock_path = h.ws.join("daemon.sock");
    let _daemon = UnixListener::bind(&sock_path).unwrap();
    let s = h.session(
        json!({"responses": [{"tool_calls": [
            bash(&format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo CONNECTED")),
            py(&format!("import socket; s=socket.socket(socket.AF_UNIX); s.connect(\"{}\"); print(\"CONNECTED\")", sock_path.display())),
        ]}, {"text": "done"}]}),
        PermissionMode::Auto,
    );
    let ev = run(&s, plan_entry("investigate")).await;
    let r = results(&ev);
    assert_eq!(r[0].1, ToolStatus::Ok, "{:?}", r[0]);
    assert!(r[0].2.contains("CONNECTED"));
    assert_eq!(r[1].1, ToolStatus::Error, "{:?}", r[1]);
    s.shutdown().await.unwrap();
}

/// With a layer missing, every plan-mode shell command asks, and the reminder and the
/// question name the missing layer.
#[tokio::test]
async fn pm_14_a_missing_layer_makes_every_command_ask_and_is_named() {
    let (h, rec) = Harness::recording(
        Config::default(),
        json!({"responses": [{"tool_calls": [bash("ls")]}, {"text": "ok"}]}),
    );
    let rt = h.reopen(|o| {
        o.env = Arc::new(|k: &str| (k == "WAYMARK_SANDBOX").then(|| "without:scoping".to_string()));
    });
    let s = rt
        .create_session(SessionSpec {
            workspace: Some(h.ws.clone()),
            model: Some("scripted:rec".into()),
            permission_mode: Some(PermissionMode::Auto),
            hold: false,
        })
        .unwrap();
    let ev = run(&s, plan_entry("look around")).await;
    let q = waiting_on(&ev);
    let info = rt
        .snapshot(s.id())
        .unwrap()
        .questionnaires
        .into_iter()
        .find(|x| x.id == q)
        .unwrap();
    let waymark_protocol::Question::Permission(p) = &info.question else {
        panic!("{info:?}")
    };
    let summary = p.summary.as_str();
    assert!(
        summary.contains("signal and abstract-socket scoping"),
        "{summary}"
    );
    let reminder = first_user_text(&rec.requests.lock().unwrap()[0]);
    assert!(
        reminder.contains("missing: signal and abstract-socket scoping"),
        "{reminder}"
    );
    s.shutdown().await.unwrap();
}
