//! The `web_fetch` tool in a session (issue 42): `ask` asks per host and "allow for this
//! session" covers that host only; a URL holding the provider key is refused before any
//! request; plan mode lets it read; `read-only` refuses it. Local servers on 127.0.0.1
//! count the connections they take.

use super::harness::{Harness, questionnaire, results, run, session_on, user, waiting_on};
use serde_json::json;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use waymark_config::Config;
use waymark_protocol::{Answer, Op, PermissionMode, ToolStatus};

/// A page server on 127.0.0.1 and the connections it took.
fn page_server(body: &'static str) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    let counted = count.clone();
    std::thread::spawn(move || {
        for sock in listener.incoming() {
            let Ok(mut sock) = sock else { return };
            counted.fetch_add(1, Ordering::SeqCst);
            let mut got = Vec::new();
            let mut buf = [0u8; 2048];
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                match sock.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
            }
            let _ = write!(
                sock,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (port, count)
}

fn fetch(url: &str) -> serde_json::Value {
    json!({"name": "web_fetch", "arguments": {"url": url}})
}

fn answer(q: &str, a: Answer) -> Op {
    Op::Answer {
        questionnaire_id: q.to_string(),
        answer: a,
    }
}

fn config(listed: &[String]) -> Config {
    Config::from_json(&json!({"web": {"allow_private": listed}}).to_string()).unwrap()
}

#[tokio::test]
async fn ask_asks_per_host_and_allow_for_session_covers_that_host_only() {
    let (a, at_a) = page_server("<h1>A</h1>");
    let (b, at_b) = page_server("<h1>B</h1>");
    let h = Harness::new(config(&[
        format!("127.0.0.1:{a}"),
        format!("localhost:{b}"),
    ]));
    let s = h.session(
        json!({"responses": [
            {"tool_calls": [fetch(&format!("http://127.0.0.1:{a}/one"))]},
            {"tool_calls": [fetch(&format!("http://127.0.0.1:{a}/two"))]},
            {"tool_calls": [fetch(&format!("http://localhost:{b}/"))]},
            {"text": "done"}
        ]}),
        PermissionMode::Ask,
    );
    let ev = run(&s, user("read the docs")).await;
    let q = waiting_on(&ev);
    let asked = questionnaire(&h, &s, &q);
    let offer = asked.payload["grants"]["session_text"].as_str().unwrap();
    assert!(offer.contains("to 127.0.0.1"), "{offer}");
    assert_eq!(at_a.load(Ordering::SeqCst), 0, "fetched before the answer");

    // Allowed for the session: the second call to the same host is not asked about; the
    // third, to another host, is.
    let ev = run(&s, answer(&q, Answer::AllowForSession)).await;
    let r = results(&ev);
    assert_eq!(r.len(), 2, "{r:?}");
    assert!(
        r.iter()
            .all(|(_, st, out)| *st == ToolStatus::Ok && out.contains("# A")),
        "{r:?}"
    );
    assert_eq!(at_a.load(Ordering::SeqCst), 2);
    let q2 = waiting_on(&ev);
    assert_ne!(q2, q);
    let asked = questionnaire(&h, &s, &q2);
    assert!(
        asked.payload["grants"]["session_text"]
            .as_str()
            .unwrap()
            .contains("to localhost"),
        "{}",
        asked.payload
    );
    assert_eq!(at_b.load(Ordering::SeqCst), 0);
    let ev = run(&s, answer(&q2, Answer::AllowOnce)).await;
    let r = results(&ev);
    assert!(r[0].2.contains("# B"), "{r:?}");
    s.shutdown().await.unwrap();
}

/// A hostile model puts the provider key in the URL of a page it may reach: refused, and no
/// connection is made.
#[tokio::test]
async fn a_url_holding_the_provider_key_is_refused_with_no_request_made() {
    const KEY: &str = "sk-web-test-5f3a9c1e7b2d4a6f";
    let (a, at_a) = page_server("<p>ok</p>");
    let h = Harness::new(config(&[format!("127.0.0.1:{a}")]));
    let rt = h.reopen(|o| {
        o.env = Arc::new(|k: &str| (k == "OPENAI_API_KEY").then(|| KEY.to_string()));
    });
    let s = session_on(
        &h,
        &rt,
        &h.ws,
        json!({"responses": [
            {"tool_calls": [fetch(&format!("http://127.0.0.1:{a}/?k={KEY}"))]},
            {"tool_calls": [fetch(&format!("http://127.0.0.1:{a}/{}", KEY.replace('-', "%2D")))]},
            {"text": "done"}
        ]}),
        PermissionMode::Auto,
    );
    let r = results(&run(&s, user("go")).await);
    assert_eq!(r.len(), 2, "{r:?}");
    for (_, status, said) in &r {
        assert_eq!(*status, ToolStatus::Error, "{r:?}");
        assert!(said.contains("OPENAI_API_KEY"), "{said}");
        assert!(!said.contains(KEY), "{said}");
    }
    assert_eq!(at_a.load(Ordering::SeqCst), 0, "a request went out");
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn plan_mode_lets_it_read_and_read_only_refuses_it() {
    let (a, at_a) = page_server("<h2>Design notes</h2>");
    let h = Harness::new(config(&[format!("127.0.0.1:{a}")]));
    let script = json!({"responses": [
        {"tool_calls": [fetch(&format!("http://127.0.0.1:{a}/"))]},
        {"text": "done"}
    ]});
    let s = h.session(script.clone(), PermissionMode::Auto);
    s.submit(user("/plan on")).await.unwrap();
    let r = results(&run(&s, user("investigate")).await);
    assert_eq!(r[0].1, ToolStatus::Ok, "{r:?}");
    assert!(r[0].2.contains("## Design notes"), "{r:?}");
    s.shutdown().await.unwrap();

    let s = h.session(script, PermissionMode::ReadOnly);
    let r = results(&run(&s, user("investigate")).await);
    assert_eq!(r[0].1, ToolStatus::Denied, "{r:?}");
    assert!(r[0].2.contains("read-only"), "{r:?}");
    assert_eq!(at_a.load(Ordering::SeqCst), 1);
    s.shutdown().await.unwrap();
}
