//! `waymark acp` at the end of `ssh`, as an editor on another machine would start it: a
//! private sshd on 127.0.0.1 (a free port, a host key and a user key made for the test;
//! OpenSSH from scripts/setup.sh), and the SDK editor running
//! `ssh -p PORT 127.0.0.1 waymark acp`: a prompt whose write it allows.

use super::super::support::Env;
use super::{agent_argv, sdk, seen, write};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A private sshd, killed when dropped.
struct Sshd {
    child: Child,
    port: u16,
    user_key: PathBuf,
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn keygen(path: &Path) {
    let made = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .status()
        .expect("ssh-keygen is missing: run scripts/setup.sh");
    assert!(made.success());
}

impl Sshd {
    fn start(dir: &Path) -> Sshd {
        let sshd = PathBuf::from("/usr/sbin/sshd");
        assert!(sshd.exists(), "sshd is missing: run scripts/setup.sh");
        std::fs::create_dir_all(dir).unwrap();
        let (host_key, user_key) = (dir.join("host_key"), dir.join("user_key"));
        keygen(&host_key);
        keygen(&user_key);
        std::fs::copy(dir.join("user_key.pub"), dir.join("authorized_keys")).unwrap();
        // sshd drops privileges into this folder, which a fresh machine may lack.
        if !Path::new("/run/sshd").exists() {
            let _ = std::fs::create_dir_all("/run/sshd");
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let config = dir.join("sshd_config");
        std::fs::write(
            &config,
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {}\nPidFile {}\n\
                 AuthorizedKeysFile {}\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
                 UsePAM no\nStrictModes no\nPermitRootLogin prohibit-password\nLogLevel ERROR\n",
                host_key.display(),
                dir.join("sshd.pid").display(),
                dir.join("authorized_keys").display(),
            ),
        )
        .unwrap();
        // -D: in the foreground, as this test's child; -e: its log on stderr.
        let child = Command::new(&sshd)
            .arg("-D")
            .arg("-e")
            .arg("-f")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let mut sshd = Sshd {
            child,
            port,
            user_key,
        };
        let until = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Some(status) = sshd.child.try_wait().unwrap() {
                panic!("sshd exited at once: {status}");
            }
            assert!(Instant::now() < until, "sshd did not listen on {port}");
            std::thread::sleep(Duration::from_millis(50));
        }
        sshd
    }

    /// `argv` run on the far side of ssh.
    fn command(&self, argv: &[String]) -> Vec<String> {
        let quoted: Vec<String> = argv
            .iter()
            .map(|a| format!("'{}'", a.replace('\'', r"'\''")))
            .collect();
        let mut ssh: Vec<String> = [
            "ssh",
            "-p",
            &self.port.to_string(),
            "-i",
            &self.user_key.display().to_string(),
            "-o",
            "BatchMode=yes",
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            "UserKnownHostsFile=/dev/null",
            "-o",
            "LogLevel=ERROR",
            "127.0.0.1",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        ssh.push(quoted.join(" "));
        ssh
    }
}

#[test]
fn over_ssh_a_prompt_asks_and_its_allowed_write_is_made() {
    let env = Env::new();
    let sshd = Sshd::start(&env.dir.path().join("ssh"));
    let model = env.script(
        "s.json",
        json!({"responses": [write("a.txt", "over ssh"), {"text": "Wrote it over SSH."}]}),
    );
    let agent = sshd.command(&agent_argv(&env, &model, &[]));
    let lines = sdk(
        &env,
        &agent,
        json!([[{"new": true}, {"prompt": "write a.txt", "pick": ["allow_once"]}]]),
    );
    assert_eq!(
        std::fs::read_to_string(env.ws.join("a.txt")).unwrap(),
        "over ssh"
    );
    let asked = seen(&lines, "asked");
    assert_eq!(asked.len(), 1, "{lines:#?}");
    assert_eq!(
        asked[0]["options"],
        json!(["allow_once", "allow_always", "reject_once"])
    );
    assert_eq!(seen(&lines, "stop")[0]["reason"], "end_turn");
    // ssh passed on the agent's clean exit when the editor closed its end.
    assert_eq!(seen(&lines, "exit")[0]["code"], 0, "{lines:#?}");
}
